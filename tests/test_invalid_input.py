"""Invalid calls fail early, with the right exception and a message that names the argument,
what was expected and what was given."""

import re

import pytest
import torch

import transformer as T
from transformer.decoding import beam_search
from transformer.hf import from_hf
from transformer.tokenization import Vocabulary


def m(*parts):
    """A regex matching the literal ``parts`` in this order, anything in between."""
    return ".*".join(re.escape(p) for p in parts)


def r(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def sdpa(q=None, k=None, v=None, **kw):
    q = r(2, 5, 8) if q is None else q
    k = r(2, 7, 8) if k is None else k
    v = r(2, 7, 6) if v is None else v
    return T.scaled_dot_product_attention(q, k, v, **kw)


def mha(x, **kw):
    return T.MultiHeadAttention(16, 4)(x, **kw)


def cfg(**kw):
    base = dict(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_layers=1, dropout=0.0, max_len=8)
    base.update(kw)
    return T.TransformerConfig(**base)


LONG_IDS = torch.full((1, 10), 3)
IDS_13 = torch.tensor([[1, 2, 3]])
BOOL_55 = torch.ones(5, 5, dtype=torch.bool)

CASES = {
    # ---- positional schemes inside attention: checked once, when the layer is built or called
    "a RoPE of the wrong head size to MultiHeadAttention": (
        lambda: T.MultiHeadAttention(16, 4, rope=T.RotaryEmbedding(8)), ValueError,
        m("rope:", "d_h=4 (d_model / n_heads)", "got d_h=8")),
    "a relative bias of the wrong heads to MultiHeadAttention": (
        lambda: T.MultiHeadAttention(16, 4, relative_bias=T.RelativePositionBias(2)), ValueError,
        m("relative_bias:", "n_heads=4", "got n_heads=2")),
    "a sequence past RoPE's max_len to MultiHeadAttention": (
        lambda: T.MultiHeadAttention(16, 4, rope=T.RotaryEmbedding(4, max_len=5))(r(1, 6, 16)), ValueError,
        m("x:", "at most max_len=5 positions", "got 6")),
    # ---- a model's embedding called alone, as chapters 10 and 11 do: it is where the ids are checked
    "a negative id to DecoderOnly.embed": (lambda: T.DecoderOnly(cfg()).embed(torch.tensor([[1, -1]])), ValueError,
                                           m("ids:", "token ids in [0, 19]", "got values in [-1, 1]")),
    "an id beyond the vocabulary to EncoderDecoder.src_embed": (
        lambda: T.EncoderDecoder(cfg()).src_embed(torch.tensor([[1, 20]])), ValueError,
        m("src:", "token ids in [0, 19]", "got values in [1, 20]")),
    "float ids to EncoderOnly.embed": (lambda: T.EncoderOnly(cfg()).embed(r(1, 3)), TypeError,
                                       m("ids:", "integer tensor of token ids", "got dtype torch.float32")),
    # ---- checks that went through the shared helpers: a wrong type is a TypeError, a bool is no int
    "a generator of special ids to mask_tokens": (
        lambda: T.mask_tokens(IDS_13, 4, 10, special_ids=(i for i in [1, 2])), TypeError,
        m("special_ids:", "a list of token ids", "got <generator")),
    "True as a special id to mask_tokens": (lambda: T.mask_tokens(IDS_13, 4, 10, special_ids=[True]), TypeError,
                                            m("special_ids:", "each an int", "got bool True")),
    "NaN angle to rotation_matrix": (lambda: T.rotation_matrix(float("nan")), ValueError,
                                     m("angle:", "expected a number (radians)", "got nan")),
    "a string label_smoothing to sequence_loss": (lambda: T.sequence_loss(r(1, 3, 10), IDS_13, 0, "0.1"), TypeError,
                                                  m("label_smoothing:", "a number in [0, 1)", "got str '0.1'")),
    "a string held_out to split_pairs": (lambda: T.data.split_pairs([("a", "b")], held_out="0.1"), TypeError,
                                         m("held_out:", "a fraction in (0, 1)", "got str '0.1'")),
    "True to token_of": (lambda: Vocabulary(["a"]).token_of(True), TypeError,
                         m("id:", "expected an int in [0, 4]", "got bool True")),
    "a float tensor to token_of": (lambda: Vocabulary(["a"]).token_of(torch.tensor(1.5)), TypeError,
                                   m("id:", "expected an int in [0, 4]", "got Tensor tensor(1.5")),
    "bool ids to one_hot": (lambda: T.one_hot(torch.tensor([True, False]), 5), TypeError,
                            m("ids:", "expected an integer tensor", "got dtype torch.bool")),
    "a float count to count_pairs": (lambda: T.count_pairs({("l", "o"): 2.5}), TypeError,
                                     m("words:", "an int >= 0 as the count of ('l', 'o')", "got float 2.5")),
    "a negative count to merge_pair": (lambda: T.merge_pair(("l", "o"), {("l", "o"): -1}), ValueError,
                                       m("words:", "an int >= 0 as the count of ('l', 'o')", "got -1")),
    "norm_first='no' to TransformerConfig": (lambda: cfg(norm_first="no"), TypeError,
                                             m("norm_first:", "expected True or False", "got str 'no'")),
    "fast=3 to TransformerConfig": (lambda: cfg(fast=3), TypeError, m("fast:", "expected True or False", "got int 3")),
    "tie_weights=1 to TransformerConfig": (lambda: cfg(tie_weights=1), TypeError,
                                           m("tie_weights:", "expected True or False", "got int 1")),
    "share_embeddings=None to TransformerConfig": (lambda: cfg(share_embeddings=None), TypeError,
                                                   m("share_embeddings:", "expected True or False", "got NoneType")),
    "final_norm='yes' to TransformerConfig": (lambda: cfg(final_norm="yes"), TypeError,
                                              m("final_norm:", "expected None", "True or False", "got str 'yes'")),
    "a string acts_on to positional_module": (lambda: T.positional.positional_module(cfg(), "embeddings"), TypeError,
                                              m("acts_on:", "a member of ActsOn", "got str 'embeddings'")),
    # ---- wrong rank
    "q rank 2": (lambda: sdpa(q=r(5, 8)), ValueError,
                 m("q:", "expected 3 or 4 dimensions", "got 2 with shape (5, 8)")),
    "q rank 5": (lambda: sdpa(q=r(1, 2, 2, 5, 8)), ValueError,
                 m("q:", "expected 3 or 4 dimensions", "got 5 with shape (1, 2, 2, 5, 8)")),
    "k rank 2": (lambda: sdpa(k=r(7, 8)), ValueError,
                 m("k:", "expected 3 or 4 dimensions", "got 2 with shape (7, 8)")),
    "v rank 2": (lambda: sdpa(v=r(7, 6)), ValueError,
                 m("v:", "expected 3 or 4 dimensions", "got 2 with shape (7, 6)")),
    "k rank differs from q": (lambda: sdpa(k=r(2, 1, 7, 8), v=r(2, 1, 7, 6)), ValueError,
                              m("k, v:", "same number of dimensions as q (3)", "got k (2, 1, 7, 8)")),
    "x rank 2 to MultiHeadAttention": (lambda: mha(r(5, 16)), ValueError,
                                       m("x:", "3 dimensions (batch, T_q, d_model)", "got 2 with shape (5, 16)")),
    "x rank 4 to split_heads": (lambda: T.split_heads(r(2, 2, 5, 16), 4), ValueError,
                                m("x:", "3 dimensions (batch, seq, d_model)", "got 4 with shape (2, 2, 5, 16)")),
    "x rank 3 to merge_heads": (lambda: T.merge_heads(r(2, 5, 16)), ValueError,
                                m("x:", "4 dimensions (batch, heads, seq, d_h)", "got 3 with shape (2, 5, 16)")),
    "x rank 2 to SinusoidalPositionalEncoding": (lambda: T.SinusoidalPositionalEncoding(16)(r(5, 16)), ValueError,
                                                 m("x:", "expected 3 dimensions", "got 2 with shape (5, 16)")),
    "ids rank 1 to padding_mask": (lambda: T.padding_mask(torch.tensor([1, 2, 0]), 0), ValueError,
                                   m("ids:", "expected 2 dimensions (batch, seq)", "got 1 with shape (3)")),
    "ids rank 3 to DecoderOnly": (lambda: T.DecoderOnly(cfg())(torch.ones(1, 2, 3, dtype=torch.long)), ValueError,
                                  m("ids:", "expected 2 dimensions (batch, seq)", "got 3 with shape (1, 2, 3)")),
    "src rank 1 to EncoderDecoder": (lambda: T.EncoderDecoder(cfg())(torch.ones(4, dtype=torch.long),
                                                                     torch.ones(1, 3, dtype=torch.long)), ValueError,
                                     m("src:", "expected 2 dimensions (batch, seq)", "got 1 with shape (4)")),
    "logits rank 1 to next_token": (lambda: T.next_token(r(10)), ValueError,
                                    m("logits:", "expected 2 dimensions (batch, vocab)", "got 1 with shape (10)")),
    "logits rank 2 to sequence_loss": (lambda: T.sequence_loss(r(3, 10), torch.ones(1, 3, dtype=torch.long)),
                                       ValueError, m("logits:", "expected 3 dimensions (batch, seq, vocab)",
                                                     "got 2 with shape (3, 10)")),
    "tgt rank 1 to teacher_forcing": (lambda: T.teacher_forcing(torch.tensor([1, 4, 2])), ValueError,
                                      m("tgt:", "expected 2 dimensions (batch, seq)", "got 1 with shape (3)")),
    # ---- blocks, stacks and the rest of the public functions
    "x of the wrong width to EncoderBlock": (lambda: T.EncoderBlock(cfg())(r(2, 5, 8)), ValueError,
                                             m("x:", "expected d_model=16", "got shape (2, 5, 8)")),
    "x of the wrong width to Encoder": (lambda: T.Encoder(cfg())(r(2, 5, 8)), ValueError,
                                        m("x:", "expected d_model=16", "got shape (2, 5, 8)")),
    "a mask of the wrong shape to SelfAttentionStack": (
        lambda: T.SelfAttentionStack(cfg())(r(2, 5, 16), torch.ones(2, 5, 4, dtype=torch.bool)), ValueError,
        m("mask:", "(batch, T_q, T_k) = (2, 5, 5)", "got (2, 5, 4)")),
    "memory of the wrong width to DecoderBlock": (lambda: T.DecoderBlock(cfg())(r(2, 5, 16), r(2, 7, 8)), ValueError,
                                                  m("memory:", "d_model=16", "got (2, 7, 8)")),
    "memory of another batch to Decoder": (lambda: T.Decoder(cfg())(r(2, 5, 16), r(3, 7, 16)), ValueError,
                                           m("memory:", "batch=2", "got (3, 7, 16)")),
    "d_ff 0 to PositionwiseFeedForward": (lambda: T.PositionwiseFeedForward(16, 0), ValueError,
                                          m("d_ff:", "expected a positive int", "got 0")),
    "n_heads 0 to RelativePositionBias": (lambda: T.RelativePositionBias(0), ValueError,
                                          m("n_heads:", "expected a positive int", "got 0")),
    "float ids to causal_padding_mask": (lambda: T.causal_padding_mask(r(2, 4), 0), TypeError, m("ids:", "got")),
    "float mask to fully_masked_rows": (lambda: T.fully_masked_rows(r(3, 3)), TypeError, m("mask:", "got")),
    "a string to count_pairs": (lambda: T.count_pairs("low lower"), TypeError,
                                m("words:", "expected a dict", "got str")),
    "a string key to merge_pair": (lambda: T.merge_pair(("l", "o"), {"low": 3}), TypeError,
                                   m("words:", "tuples of symbols", "got 'low'")),
    "a three-symbol pair to merge_pair": (lambda: T.merge_pair(("l", "o", "w"), {("l", "o"): 1}), TypeError,
                                          m("pair:", "a tuple of two symbols", "got ('l', 'o', 'w')")),
    "a string angle to rotation_matrix": (lambda: T.rotation_matrix("90"), TypeError,
                                          m("angle:", "expected a number", "got str '90'")),
    "a list to rms": (lambda: T.rms([1.0, 2.0]), TypeError, m("x:", "expected a torch.Tensor", "got list")),
    "0 positions to sinusoidal_encoding": (lambda: T.sinusoidal_encoding(0, 4), ValueError,
                                           m("n_positions:", "expected a positive int", "got 0")),
    "a number to split_words": (lambda: T.split_words(3), TypeError, m("text:", "expected str", "got int")),
    "a flat prefix to generate": (lambda: T.generate(lambda ids: r(1, ids.shape[1], 5), torch.tensor([1, 2]), 3),
                                  ValueError, m("prefix:", "expected 2 dimensions", "got 1 with shape (2)")),
    "a flat source to greedy_decode": (lambda: T.greedy_decode(T.EncoderDecoder(cfg()), torch.tensor([4, 5]), 3, 1, 2),
                                       ValueError, m("src:", "expected 2 dimensions", "got 1 with shape (2)")),
    "greedy_decode's old max_len keyword": (lambda: T.greedy_decode(T.EncoderDecoder(cfg()), torch.ones(1, 2).long(),
                                                                     max_len=3, sos_id=1, eos_id=2),
                                            TypeError, m("max_len is now called max_new_tokens", "got max_len=3")),
    "a flat source to sample_decode": (lambda: T.sample_decode(T.EncoderDecoder(cfg()), torch.tensor([4, 5]), 3, 1, 2),
                                       ValueError, m("src:", "expected 2 dimensions", "got 1 with shape (2)")),
    "a flat target to train_step": (lambda: T.train_step(T.EncoderDecoder(cfg()), None,
                                                         torch.ones(1, 3, dtype=torch.long), torch.tensor([1, 4, 2])),
                                    ValueError,
                                    m("tgt:", "expected 2 dimensions", "got 1 with shape (3)")),
    # ---- mismatched sizes and dtypes
    "k dtype differs from q": (lambda: sdpa(k=r(2, 7, 8).double()), TypeError,
                               m("k, v:", "dtype of q (torch.float32)", "got k torch.float64")),
    "x rank 1 to RotaryEmbedding": (lambda: T.RotaryEmbedding(8)(r(8)), ValueError,
                                    m("x:", "expected 2 or 3 or 4 dimensions", "got 1 with shape (8)")),
    "d_k differs between q and k": (lambda: sdpa(k=r(2, 7, 6)), ValueError,
                                    m("k:", "expected d_k=8", "got 6 (shape (2, 7, 6))")),
    "T differs between k and v": (lambda: sdpa(v=r(2, 4, 6)), ValueError,
                                  m("v:", "seq=7", "got 4 (shape (2, 4, 6))")),
    "batch differs": (lambda: sdpa(k=r(3, 7, 8), v=r(3, 7, 6)), ValueError,
                      m("k, v:", "same leading (batch, [heads]) sizes as q (2,)", "got k (3, 7, 8)")),
    "heads differ": (lambda: sdpa(q=r(2, 4, 5, 8), k=r(2, 2, 7, 8), v=r(2, 2, 7, 6)), ValueError,
                     m("k, v:", "as q (2, 4)", "got k (2, 2, 7, 8)")),
    "x has the wrong d_model": (lambda: mha(r(2, 5, 8)), ValueError,
                                m("x:", "expected d_model=16", "got shape (2, 5, 8)")),
    "memory has another batch": (lambda: mha(r(2, 5, 16), memory=r(3, 4, 16)), ValueError,
                                 m("memory:", "expected (batch=2, T_k, d_model=16)", "got (3, 4, 16)")),
    "LayerNorm on the wrong d_model": (lambda: T.LayerNorm(16)(r(2, 5, 12)), ValueError,
                                       m("x:", "expected d_model=16", "got shape (2, 5, 12)")),
    "labels do not match logits": (lambda: T.sequence_loss(r(2, 3, 10), torch.ones(2, 4, dtype=torch.long)),
                                   ValueError, m("labels:", "expected shape (2, 3)", "got (2, 4)")),
    "teacher_forcing with one token": (lambda: T.teacher_forcing(torch.tensor([[1]])), ValueError,
                                       m("tgt:", "expected at least 2 tokens", "got 1")),
    # ---- d_model not divisible by the number of heads
    "MultiHeadAttention 10 / 3": (lambda: T.MultiHeadAttention(10, 3), ValueError,
                                  m("d_model:", "multiple of n_heads=3", "got d_model=10")),
    "TransformerConfig 30 / 4": (lambda: cfg(d_model=30, n_heads=4), ValueError,
                                 m("d_model:", "multiple of n_heads=4", "got d_model=30")),
    "split_heads 16 / 3": (lambda: T.split_heads(r(2, 5, 16), 3), ValueError,
                           m("d_model:", "multiple of n_heads=3", "got d_model=16")),
    # ---- masks
    "mask of the wrong shape": (lambda: sdpa(mask=torch.ones(5, 6, dtype=torch.bool)), ValueError,
                                m("mask:", "broadcastable to (batch, [heads,] T_q, T_k) = (2, 5, 7)", "got (5, 6)")),
    "mask with too many dimensions": (lambda: sdpa(mask=torch.ones(1, 2, 5, 7, dtype=torch.bool)), ValueError,
                                      m("mask:", "expected 2 to 3 dimensions", "(2, 5, 7)", "got shape (1, 2, 5, 7)")),
    "float mask": (lambda: sdpa(mask=torch.ones(5, 7)), TypeError,
                   m("mask:", "expected dtype torch.bool", "got torch.float32")),
    "int mask": (lambda: sdpa(mask=torch.ones(5, 7, dtype=torch.long)), TypeError,
                 m("mask:", "expected dtype torch.bool", "got torch.int64")),
    "attention_with_weights, mask of the wrong shape": (
        lambda: T.attention_with_weights(r(2, 5, 8), r(2, 7, 8), r(2, 7, 6), torch.ones(5, 6, dtype=torch.bool)),
        ValueError, m("mask:", "broadcastable to (batch, [heads,] T_q, T_k) = (2, 5, 7)", "got (5, 6)")),
    "MultiHeadAttention mask of the wrong shape": (
        lambda: mha(r(2, 5, 16), mask=torch.ones(2, 5, 4, dtype=torch.bool)),
        ValueError, m("mask:", "(batch, T_q, T_k) = (2, 5, 5)", "got (2, 5, 4)")),
    "MultiHeadAttention 4-d mask with the wrong heads": (lambda: mha(r(2, 5, 16),
                                                                     mask=torch.ones(2, 3, 5, 5, dtype=torch.bool)),
                                                         ValueError, m("mask:", "= (2, 4, 5, 5)", "got (2, 3, 5, 5)")),
    "MultiHeadAttention float mask": (lambda: mha(r(2, 5, 16), mask=torch.ones(2, 5, 5)), TypeError,
                                      m("mask:", "expected dtype torch.bool", "got torch.float32")),
    # ---- longer than the positional table
    "SinusoidalPositionalEncoding too long": (lambda: T.SinusoidalPositionalEncoding(16, max_len=8)(r(1, 10, 16)),
                                              ValueError, m("x:", "at most max_len=8 positions", "got 10")),
    "LearnedPositionalEncoding too long": (lambda: T.LearnedPositionalEncoding(16, max_len=8)(r(1, 9, 16)),
                                           ValueError, m("x:", "at most max_len=8 positions", "got 9")),
    "RotaryEmbedding too long": (lambda: T.RotaryEmbedding(8, max_len=8)(r(1, 2, 10, 8)), ValueError,
                                 m("x:", "at most max_len=8 positions", "got 10")),
    "RotaryEmbedding offset too long": (lambda: T.RotaryEmbedding(8, max_len=8)(r(1, 2, 3, 8), offset=6),
                                        ValueError, m("x:", "at most max_len=8 positions", "got 9")),
    "RotaryEmbedding negative offset": (lambda: T.RotaryEmbedding(8, max_len=8)(r(1, 2, 3, 8), offset=-1),
                                        ValueError, m("offset:", "an int >= 0", "got -1")),
    "RotaryEmbedding float offset": (lambda: T.RotaryEmbedding(8, max_len=8)(r(1, 2, 3, 8), offset=1.5),
                                     TypeError, m("offset:", "expected an int", "got float")),
    "RotaryEmbedding of the wrong head size": (lambda: T.RotaryEmbedding(8)(r(1, 2, 3, 6)), ValueError,
                                               m("x:", "d_h=8 in the last dimension", "got shape (1, 2, 3, 6)")),
    "DecoderOnly with rope too long": (lambda: T.DecoderOnly(cfg(positional="rope"))(LONG_IDS), ValueError,
                                       m("ids:", "at most max_len=8 positions", "got 10")),
    "EncoderOnly with sinusoidal too long": (lambda: T.EncoderOnly(cfg())(LONG_IDS), ValueError,
                                             m("ids:", "at most max_len=8 positions", "got 10")),
    # ---- vocabulary and ids
    "unknown token without <unk>": (lambda: Vocabulary(["apple"], specials=("<pad>", "<sos>", "<eos>")).id_of("pear"),
                                    ValueError, m("token:", "'<unk>'", "got unknown token 'pear'")),
    "WordTokenizer without <unk>": (lambda: T.WordTokenizer.fit(["I ate"], specials=("<pad>",)).encode(
        "I ate an apple", add_special=False), ValueError, m("token:", "'<unk>'", "got unknown token 'an'")),
    "encode with specials but no <sos>": (lambda: T.WordTokenizer.fit(["I ate"], specials=("<pad>", "<unk>")).encode(
        "I ate"), ValueError, m("add_special:", "expected a vocabulary with <sos>", "got none")),
    "id out of range in token_of": (lambda: Vocabulary(["a"]).token_of(9), ValueError,
                                    m("id:", "expected an int in [0, 4]", "got 9")),
    "TokenEmbedding id too large": (lambda: T.TokenEmbedding(10, 4)(torch.tensor([[1, 12, 3]])), ValueError,
                                    m("ids:", "token ids in [0, 9]", "got values in [1, 12]")),
    "TokenEmbedding negative id": (lambda: T.TokenEmbedding(10, 4)(torch.tensor([[-1, 2]])), ValueError,
                                   m("ids:", "token ids in [0, 9]", "got values in [-1, 2]")),
    "TokenEmbedding float ids": (lambda: T.TokenEmbedding(10, 4)(torch.tensor([[1.0, 2.0]])), TypeError,
                                 m("ids:", "expected an integer tensor", "got dtype torch.float32")),
    "one_hot id too large": (lambda: T.one_hot([0, 5], 5), ValueError,
                             m("ids:", "token ids in [0, 4]", "got values in [0, 5]")),
    "one_hot float ids": (lambda: T.one_hot(torch.tensor([0.0, 1.0]), 5), TypeError,
                          m("ids:", "expected an integer tensor", "got dtype torch.float32")),
    "OutputHead tied to the wrong shape": (lambda: T.OutputHead(8, 10, tie_to=T.TokenEmbedding(12, 8)), ValueError,
                                           m("tie_to:", "(vocab_size=10, d_model=8)", "got (12, 8)")),
    # ---- configuration choices
    "positional='abc'": (lambda: cfg(positional="abc"), ValueError,
                         m("positional:", "['learned', 'none', 'relative', 'rope', 'sinusoidal']", "got 'abc'")),
    "norm='batch'": (lambda: cfg(norm="batch"), ValueError, m("norm:", "['layer', 'rms']", "got 'batch'")),
    "activation='tanh'": (lambda: cfg(activation="tanh"), ValueError,
                          m("activation:", "['gelu', 'gelu_tanh', 'relu', 'silu']", "got 'tanh'")),
    "dropout=1.5": (lambda: cfg(dropout=1.5), ValueError, m("dropout:", "[0, 1)", "got 1.5")),
    "n_layers=0": (lambda: cfg(n_layers=0), ValueError, m("n_layers:", "positive int", "got 0")),
    "d_model=16.0": (lambda: cfg(d_model=16.0), TypeError, m("d_model:", "positive int", "got float 16.0")),
    "causal_mask(0)": (lambda: T.causal_mask(0), ValueError, m("seq_len:", "positive int", "got 0")),
    "n_merges=-1": (lambda: T.BPETokenizer.train(["a b"], -1), ValueError, m("n_merges:", "int >= 0", "got -1")),
    "byte-level vocab_size below 256": (lambda: T.ByteBPETokenizer.train(["a b"], 100), ValueError,
                                        m("vocab_size:", "at least 256", "got 100")),
    "byte-level decode of an id past the vocabulary": (lambda: T.ByteBPETokenizer([]).decode([256]), ValueError,
                                                       m("ids:", "[0, 256)", "got 256")),
    # ---- the fields that express GPT-2 and BERT
    "pad_id = vocab_size": (lambda: cfg(pad_id=20), ValueError, m("pad_id:", "a token id in [0, 20)", "got 20")),
    "negative pad_id": (lambda: cfg(pad_id=-1), ValueError, m("pad_id:", "[0, 20)", "got -1")),
    "pad_id beyond the source vocabulary": (lambda: cfg(src_vocab_size=5, pad_id=6), ValueError,
                                            m("pad_id:", "[0, 5)", "got 6")),
    "pad_id as a string": (lambda: cfg(pad_id="0"), TypeError,
                           m("pad_id:", "None (no padding) or an int", "got str '0'")),
    "type_vocab_size=-1": (lambda: cfg(type_vocab_size=-1), ValueError, m("type_vocab_size:", "int >= 0", "got -1")),
    "type_vocab_size=2.0": (lambda: cfg(type_vocab_size=2.0), TypeError,
                            m("type_vocab_size:", "int >= 0", "got float 2.0")),
    "scale_embeddings='no'": (lambda: cfg(scale_embeddings="no"), TypeError,
                              m("scale_embeddings:", "True or False", "got str 'no'")),
    "head_bias=1": (lambda: cfg(head_bias=1), TypeError, m("head_bias:", "True or False", "got int 1")),
    "rope_pairs='adjacent'": (lambda: cfg(rope_pairs="adjacent"), ValueError,
                              m("rope_pairs:", "['half', 'interleaved']", "got 'adjacent'")),
    "RotaryEmbedding pairs='odd'": (lambda: T.RotaryEmbedding(8, pairs="odd"), ValueError,
                                    m("pairs:", "['half', 'interleaved']", "got 'odd'")),
    "apply_rope pairs='even'": (lambda: T.apply_rope(r(3, 4), pairs="even"), ValueError,
                                m("pairs:", "['half', 'interleaved']", "got 'even'")),
    "token types without type_vocab_size": (lambda: T.EncoderOnly(cfg()).encode(IDS_13, torch.zeros_like(IDS_13)),
                                            ValueError, m("token_type_ids:", "expected None", "type_vocab_size=0")),
    "a token type too large": (lambda: T.EncoderOnly(cfg(type_vocab_size=2)).encode(IDS_13, torch.tensor([[0, 1, 2]])),
                               ValueError, m("token_type_ids:", "types in [0, 1]", "got values in [0, 2]")),
    "token types of another shape": (lambda: T.EncoderOnly(cfg(type_vocab_size=2))(IDS_13, torch.zeros(1, 4).long()),
                                     ValueError, m("token_type_ids:", "the shape of ids (1, 3)", "got (1, 4)")),
    "float token types": (lambda: T.EncoderOnly(cfg(type_vocab_size=2))(IDS_13, torch.zeros(1, 3)), TypeError,
                          m("token_type_ids:", "integer tensor", "got dtype torch.float32")),
    "token types as a list": (lambda: T.EncoderOnly(cfg(type_vocab_size=2))(IDS_13, [[0, 1, 1]]), TypeError,
                              m("token_type_ids:", "expected a torch.Tensor", "got list")),
    "from_hf of a number": (lambda: from_hf(3), TypeError, m("model:", "expected a Hugging Face GPT2LMHeadModel",
                                                              "BertForMaskedLM", "got int")),
    "from_hf of a dict of weights": (lambda: from_hf({"wte.weight": r(4, 2)}), TypeError,
                                     m("model:", "expected a Hugging Face", "got dict")),
    # ---- odd sizes for rotations
    "RoPE on odd d": (lambda: T.apply_rope(r(5, 7)), ValueError, m("x:", "even last dimension", "got 7")),
    "RotaryEmbedding odd d_h": (lambda: T.RotaryEmbedding(5), ValueError, m("d_h:", "even head size", "got 5")),
    "rope config with odd d_h": (lambda: cfg(d_model=12, n_heads=4, positional="rope"), ValueError,
                                 m("d_model:", "even d_h", "got d_h=3")),
    "shift_matrix odd d": (lambda: T.shift_matrix(1, 5), ValueError, m("d_model:", "even d_model", "got 5")),
    "shift_matrix float offset": (lambda: T.shift_matrix(1.5, 4), TypeError,
                                  m("c:", "expected an int offset", "got float")),
    "RoPE positions of the wrong length": (lambda: T.apply_rope(r(5, 8), torch.arange(4)), ValueError,
                                           m("positions:", "expected 5 positions", "got shape (4)")),
    # ---- temperature
    "temperature 0 in softmax_with_temperature": (lambda: T.softmax_with_temperature(r(2, 5), 0.0), ValueError,
                                                  m("temperature:", "> 0", "got 0.0")),
    "negative temperature in next_token": (lambda: T.next_token(r(2, 5), -0.5), ValueError,
                                           m("temperature:", "> 0", "got -0.5")),
    # ---- not tensors
    "q as a list": (lambda: sdpa(q=[[[1.0]]]), TypeError, m("q:", "expected a torch.Tensor", "got list")),
    "v as a float": (lambda: sdpa(v=3.0), TypeError, m("v:", "expected a torch.Tensor", "got float")),
    "mask as a list": (lambda: sdpa(mask=[[True] * 7] * 5), TypeError,
                       m("mask:", "expected a torch.Tensor", "got list")),
    "MultiHeadAttention x as a list": (lambda: mha([[[0.0] * 16]]), TypeError,
                                       m("x:", "expected a torch.Tensor", "got list")),
    "MultiHeadAttention mask as a list": (lambda: mha(r(1, 5, 16), mask=[[True] * 5] * 5), TypeError,
                                          m("mask:", "expected a torch.Tensor", "got list")),
    "padding_mask of a list": (lambda: T.padding_mask([[1, 0]], 0), TypeError,
                               m("ids:", "expected a torch.Tensor", "got list")),
    "TokenEmbedding of a list": (lambda: T.TokenEmbedding(10, 4)([[1, 2]]), TypeError,
                                 m("ids:", "expected a torch.Tensor", "got list")),
    "RMSNorm of a list": (lambda: T.RMSNorm(4)([1.0, 2.0, 3.0, 4.0]), TypeError,
                          m("x:", "expected a torch.Tensor", "got list")),
    "RotaryEmbedding of a list": (lambda: T.RotaryEmbedding(8)([[0.0] * 8]), TypeError,
                                  m("x:", "expected a torch.Tensor", "got list")),
    "RoPE positions as a list": (lambda: T.apply_rope(r(3, 4), [0, 1, 2]), TypeError,
                                 m("positions:", "expected a torch.Tensor", "got list")),
    "masked_softmax of a list": (lambda: T.masked_softmax([[1.0, 2.0]], BOOL_55), TypeError,
                                 m("scores:", "expected a torch.Tensor", "got list")),
    "softmax_with_temperature of a list": (lambda: T.softmax_with_temperature([1.0, 2.0], 1.0), TypeError,
                                           m("logits:", "expected a torch.Tensor", "got list")),
    "causal_mask(2.5)": (lambda: T.causal_mask(2.5), TypeError, m("seq_len:", "positive int", "got float 2.5")),
    "causal_mask(3, past=-1)": (lambda: T.causal_mask(3, past=-1), ValueError, m("past:", "an int >= 0", "got -1")),
    "causal_mask(3, past=1.5)": (lambda: T.causal_mask(3, past=1.5), TypeError,
                                 m("past:", "an int >= 0", "got float 1.5")),
    # ---- int tensors to attention
    "int q": (lambda: sdpa(q=torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
              m("q:", "expected a floating-point tensor", "got dtype torch.int64")),
    "int k": (lambda: sdpa(k=torch.ones(2, 7, 8, dtype=torch.int32)), TypeError,
              m("k:", "expected a floating-point tensor", "got dtype torch.int32")),
    "bool v": (lambda: sdpa(v=torch.ones(2, 7, 6, dtype=torch.bool)), TypeError,
               m("v:", "expected a floating-point tensor", "got dtype torch.bool")),
    "int x to MultiHeadAttention": (lambda: mha(torch.ones(2, 5, 16, dtype=torch.long)), TypeError,
                                    m("x:", "expected a floating-point tensor", "got dtype torch.int64")),
    "int x to LayerNorm": (lambda: T.LayerNorm(4)(torch.ones(2, 4, dtype=torch.long)), TypeError,
                           m("x:", "expected a floating-point tensor", "got dtype torch.int64")),
    # ---- sampling and masking (chapter 11)
    "k = 0 to top_k_filter": (lambda: T.top_k_filter(r(2, 5), 0), ValueError, m("k:", "whole number >= 1", "got 0")),
    "p = 1.5 to top_p_filter": (lambda: T.top_p_filter(r(2, 5), 1.5), ValueError, m("p:", "(0, 1]", "got 1.5")),
    "int logits to sampling_distribution": (lambda: T.sampling_distribution(torch.ones(2, 5, dtype=torch.long)),
                                            TypeError, m("logits:", "floating-point tensor", "got dtype torch.int64")),
    "flat logits to sample_next": (lambda: T.sample_next(r(5)), ValueError,
                                   m("logits:", "expected 2 dimensions (batch, vocab)", "got 1 with shape (5)")),
    "ids beyond the vocabulary to mask_tokens": (lambda: T.mask_tokens(torch.tensor([[1, 12]]), 3, 10), ValueError,
                                                 m("ids:", "token ids in [0, 9]", "got values in [1, 12]")),
    # ---- chapter 12: tiled attention, the key/value cache, grouped-query attention, SwiGLU
    "block_size=0 to flash_attention": (lambda: T.flash_attention(r(1, 4, 8), r(1, 4, 8), r(1, 4, 8), block_size=0),
                                        ValueError, m("block_size:", "positive int", "got 0")),
    "int q to flash_attention": (lambda: T.flash_attention(torch.ones(1, 4, 8, dtype=torch.long), r(1, 4, 8),
                                                           r(1, 4, 8)), TypeError,
                                 m("q:", "floating-point tensor", "got dtype torch.int64")),
    "float mask to flash_attention": (lambda: T.flash_attention(r(1, 4, 8), r(1, 4, 8), r(1, 4, 8), r(4, 4)),
                                      TypeError, m("mask:", "torch.bool", "got torch.float32")),
    "3-d x to repeat_kv": (lambda: T.repeat_kv(r(2, 3, 4), 2), ValueError,
                           m("x:", "expected 4 dimensions (batch, n_kv_heads, seq, d_h)", "got 3")),
    "n_rep=0 to repeat_kv": (lambda: T.repeat_kv(r(1, 2, 3, 4), 0), ValueError, m("n_rep:", "positive int", "got 0")),
    "n_kv_heads=3 with 4 heads": (lambda: cfg(n_kv_heads=3), ValueError,
                                  m("n_kv_heads:", "divisor of n_heads=4", "got 3")),
    "n_kv_heads=3 to MultiHeadAttention": (lambda: T.MultiHeadAttention(16, 4, n_kv_heads=3), ValueError,
                                           m("n_kv_heads:", "divisor of n_heads=4", "got 3")),
    "ffn='glu'": (lambda: cfg(ffn="glu"), ValueError, m("ffn:", "['gated', 'mlp', 'none']", "got 'glu'")),
    "rope_base=0": (lambda: cfg(rope_base=0), ValueError, m("rope_base:", "number > 0", "got 0")),
    "linear_bias='no'": (lambda: cfg(linear_bias="no"), TypeError, m("linear_bias:", "True or False", "got str")),
    "d_ff=0 to GatedFeedForward": (lambda: T.GatedFeedForward(8, 0), ValueError, m("d_ff:", "positive int", "got 0")),
    "KVCache(0)": (lambda: T.KVCache(0), ValueError, m("n_layers:", "positive int", "got 0")),
    "a KVCache of the wrong depth": (lambda: T.DecoderOnly(cfg())(IDS_13, cache=T.KVCache(2)), TypeError,
                                     m("cache:", "KVCache with 1 layers", "got KVCache")),
    "int dtype to cache_bytes_per_token": (lambda: T.cache_bytes_per_token(cfg(), torch.int64), TypeError,
                                           m("dtype:", "floating-point torch.dtype", "got torch.int64")),
    "a Linear to generate_cached": (lambda: T.generate_cached(torch.nn.Linear(2, 2), IDS_13, 2), TypeError,
                                    m("model:", "expected a DecoderOnly", "got Linear")),
    "1-d prefix to generate_cached": (lambda: T.generate_cached(T.DecoderOnly(cfg()), IDS_13[0], 2), ValueError,
                                      m("prefix:", "expected 2 dimensions (batch, seq)", "got 1")),
    "cached generation beyond max_len": (lambda: T.generate_cached(T.DecoderOnly(cfg()), IDS_13, 7), ValueError,
                                         m("ids:", "at most max_len=8 positions", "got 9")),
    # ---- chapter 14
    "window=0 to sliding_window_mask": (lambda: T.sliding_window_mask(4, 0), ValueError,
                                        m("window:", "positive int", "got 0")),
    "window=0 to MultiHeadAttention": (lambda: T.MultiHeadAttention(16, 4, window=0), ValueError,
                                       m("window:", "positive int", "got 0")),
    "window=0 to RollingLayerCache": (lambda: T.RollingLayerCache(0), ValueError,
                                      m("window:", "positive int", "got 0")),
    "a Linear to rolling_cache": (lambda: T.rolling_cache(torch.nn.Linear(2, 2)), TypeError,
                                  m("model:", "expected a DecoderOnly", "got Linear")),
    "too few windows in the config": (lambda: cfg(n_layers=2, sliding_window=(3,)), ValueError,
                                      m("sliding_window:", "tuple of n_layers=2 windows", "got 1")),
    "an unknown rope_type to rope_frequencies": (lambda: T.rope_frequencies(8, 1e4, {"rope_type": "ntk"}),
                                                 ValueError, m("scaling['rope_type']:", "expected one of", "'ntk'")),
    "a yarn scaling without its length to ScaledRotaryEmbedding": (
        lambda: T.ScaledRotaryEmbedding(8, 16, 1e4, "half", {"rope_type": "yarn", "factor": 2.0}), ValueError,
        m("scaling:", "'original_max_position_embeddings'", "got none for")),
    "a dynamic rope_scaling in the config": (lambda: cfg(positional="rope", rope_scaling={"rope_type": "dynamic"}),
                                             ValueError, m("rope_scaling['rope_type']:", "expected one of", "dynamic")),
    "top_k above n_experts to MoEConfig": (lambda: T.MoEConfig(4, 5), ValueError, m("top_k:", "in [1, n_experts=4]",
                                                                                     "got 5")),
    "a dict for moe": (lambda: cfg(moe={"n_experts": 4}), TypeError, m("moe:", "None or a MoEConfig", "got dict")),
    "3-d x to Router": (lambda: T.Router(16, T.MoEConfig(4))(r(2, 3, 16)), ValueError,
                        m("x:", "2 dimensions (tokens, d_model)", "got 3")),
    "wrong width to MixtureOfExperts": (lambda: T.MixtureOfExperts(16, 8, T.MoEConfig(4))(r(2, 3, 8)), ValueError,
                                        m("x:", "d_model=16", "got shape (2, 3, 8)")),
    "an expert out of range to load_balancing_loss": (
        lambda: T.load_balancing_loss(r(3, 4).softmax(-1), torch.tensor([[0], [1], [4]]), 4), ValueError,
        m("experts:", "expert indices in [0, 3]", "got values in [0, 4]")),
    "a context of 0 to cache_bytes": (lambda: T.cache_bytes(cfg(), 0), ValueError,
                                      m("context:", "positive int", "got 0")),
    "float experts to update_correction_bias": (lambda: T.update_correction_bias(torch.zeros(4), r(3, 2)), TypeError,
                                                m("experts:", "integer tensor of expert indices", "float32")),
    "a RoPE of the wrong size to LatentAttention": (
        lambda: T.LatentAttention(16, 4, T.LatentConfig(6, 4, 4, 4), T.RotaryEmbedding(8)), ValueError,
        m("rope:", "d_h=4 (qk_rope_head_dim)", "got d_h=8")),
    "a dict to Router": (lambda: T.Router(16, {"n_experts": 4}), TypeError, m("moe:", "a MoEConfig", "got dict")),
    "kv_lora_rank=0 to LatentConfig": (lambda: T.LatentConfig(0, 4, 4, 4), ValueError,
                                       m("kv_lora_rank:", "positive int", "got 0")),
    "wrong width to LatentAttention": (
        lambda: T.LatentAttention(16, 4, T.LatentConfig(6, 4, 4, 4), T.ScaledRotaryEmbedding(4, 8, 1e4, "half", {}))(
            r(1, 3, 8)), ValueError, m("x:", "d_model=16", "got shape (1, 3, 8)")),
    # ---- the shared checks of _validate: bounds and types that used to slip through
    "NaN temperature to softmax_with_temperature": (lambda: T.softmax_with_temperature(r(2, 5), float("nan")),
                                                    ValueError, m("temperature:", "a number > 0", "got nan")),
    "NaN temperature to sample_next": (lambda: T.sample_next(r(2, 5), float("nan")), ValueError,
                                       m("temperature:", "a number > 0", "got nan")),
    "NaN p to top_p_filter": (lambda: T.top_p_filter(r(2, 5), float("nan")), ValueError,
                              m("p:", "(0, 1]", "got nan")),
    "a string temperature to sampling_distribution": (lambda: T.sampling_distribution(r(2, 5), "hot"), TypeError,
                                                      m("temperature:", "a number > 0", "got str 'hot'")),
    "top_k=0 to greedy sample_next": (lambda: T.sample_next(r(2, 5), 0.0, top_k=0), ValueError,
                                      m("top_k:", "whole number >= 1", "got 0")),
    "a float beam_size to beam_search": (lambda: beam_search(lambda ids: r(1, ids.shape[1], 5), [1], 2.0, 3, 2),
                                         TypeError, m("beam_size:", "whole number >= 1", "got float 2.0")),
    "a fractional max_new_tokens to generate": (lambda: T.generate(lambda ids: r(1, ids.shape[1], 5), IDS_13, 2.5),
                                                TypeError, m("max_new_tokens:", "whole number >= 0", "got float 2.5")),
    "a negative max_new_tokens to generate": (lambda: T.generate(lambda ids: r(1, ids.shape[1], 5), IDS_13, -1),
                                              ValueError, m("max_new_tokens:", "whole number >= 0", "got -1")),
    "dropout as a string": (lambda: cfg(dropout="0.1"), TypeError, m("dropout:", "[0, 1)", "got str '0.1'")),
    "NaN dropout": (lambda: cfg(dropout=float("nan")), ValueError, m("dropout:", "[0, 1)", "got nan")),
    "rope_base as a string": (lambda: cfg(rope_base="1e4"), TypeError, m("rope_base:", "number > 0", "got str")),
    "SinusoidalPositionalEncoding negative offset": (lambda: T.SinusoidalPositionalEncoding(16)(r(1, 3, 16), -1),
                                                     ValueError, m("offset:", "an int >= 0", "got -1")),
    "LearnedPositionalEncoding float offset": (lambda: T.LearnedPositionalEncoding(16)(r(1, 3, 16), 1.0), TypeError,
                                               m("offset:", "an int >= 0", "got float 1.0")),
    "apply_rope of one vector": (lambda: T.apply_rope(r(8)), ValueError,
                                 m("x:", "at least 2 dimensions (..., seq, d)", "got shape (8)")),
    "mask_id as a string to mask_tokens": (lambda: T.mask_tokens(IDS_13, "3", 10), TypeError,
                                           m("mask_id:", "a token id in [0, 9]", "got str '3'")),
    "one_hot with vocab_size 0": (lambda: T.one_hot([0], 0), ValueError, m("vocab_size:", "positive int", "got 0")),
    "truncated to a float number of merges": (lambda: T.BPETokenizer.train(["a b"], 1).truncated(1.0), TypeError,
                                              m("n_merges:", "an int in [0, 0]", "got float 1.0")),
    "only special ids to mask_tokens": (lambda: T.mask_tokens(IDS_13, 0, 4, special_ids=[1, 2, 3]), ValueError,
                                        m("special_ids:", "some ordinary tokens left", "got all 4 special")),
    # ---- the name of the argument given, through every function that takes it
    "top_k=0 to sampling_distribution": (lambda: T.sampling_distribution(r(2, 5), top_k=0), ValueError,
                                         "^" + m("top_k:", "whole number >= 1", "got 0")),
    "top_p=0 to sample_next": (lambda: T.sample_next(r(2, 5), 1.0, top_p=0), ValueError,
                               "^" + m("top_p:", "(0, 1]", "got 0")),
    "top_p=1.5 to sampling_distribution": (lambda: T.sampling_distribution(r(2, 5), top_p=1.5), ValueError,
                                           "^" + m("top_p:", "(0, 1]", "got 1.5")),
    "k=0 to top_k_filter, by its own name": (lambda: T.top_k_filter(r(2, 5), 0), ValueError,
                                             "^" + m("k:", "whole number >= 1", "got 0")),
    "top_k=0 to generate, before any step": (lambda: T.generate(lambda ids: r(1, ids.shape[1], 5), IDS_13, 0, top_k=0),
                                             ValueError, m("top_k:", "whole number >= 1", "got 0")),
    "a negative temperature to generate, before any step": (lambda: T.generate(lambda ids: r(1, ids.shape[1], 5),
                                                                               IDS_13, 0, None, -1.0),
                                                            ValueError, m("temperature:", "a number > 0", "got -1.0")),
    "a logits_fn that returns (batch, vocab) to generate": (lambda: T.generate(lambda ids: r(1, 5), IDS_13, 2),
                                                            ValueError, m("logits_fn(ids):", "3 dimensions",
                                                                          "(batch, seq, vocab)", "got 2")),
    "a logits_fn that returns a list to generate": (lambda: T.generate(lambda ids: [[[0.0]]], IDS_13, 2), TypeError,
                                                    m("logits_fn(ids):", "expected a torch.Tensor", "got list")),
    "n_heads=0 to split_heads": (lambda: T.split_heads(r(2, 3, 16), 0), ValueError,
                                 m("n_heads:", "positive int", "got 0")),
    "n_heads=True to split_heads": (lambda: T.split_heads(r(2, 3, 16), True), TypeError,
                                    m("n_heads:", "positive int", "got bool True")),
    "a bool tensor as pad_id to padding_mask": (lambda: T.padding_mask(IDS_13, torch.tensor(True)), TypeError,
                                                m("pad_id:", "expected an int", "got Tensor")),
    "src beyond the source vocabulary to EncoderDecoder": (lambda: T.EncoderDecoder(cfg(src_vocab_size=5))(
        torch.tensor([[1, 7]]), IDS_13), ValueError, m("src:", "token ids in [0, 4]", "got values in [1, 7]")),
}


@pytest.mark.parametrize("call, exc, pattern", list(CASES.values()), ids=list(CASES))
def test_invalid_call(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_there_are_enough_cases():
    assert len(CASES) >= 30


def test_valid_calls_in_the_same_style_pass():
    # The happy path of the calls above, so that a check that always raises would be caught.
    out = T.scaled_dot_product_attention(r(2, 5, 8), r(2, 7, 8), r(2, 7, 6), BOOL_55[:, :1].expand(5, 7).clone())
    assert out.shape == (2, 5, 6)
    assert T.MultiHeadAttention(16, 4)(r(2, 5, 16), mask=BOOL_55).shape == (2, 5, 16)
    assert T.SinusoidalPositionalEncoding(16, max_len=8)(r(1, 8, 16)).shape == (1, 8, 16)
    assert T.RotaryEmbedding(8, max_len=8)(r(1, 2, 8, 8)).shape == (1, 2, 8, 8)
    assert T.DecoderOnly(cfg(positional="rope"))(torch.full((1, 8), 3)).shape == (1, 8, 20)
    assert T.TokenEmbedding(10, 4)(torch.tensor([[0, 9]])).shape == (1, 2, 4)
    assert T.one_hot([0, 4], 5).shape == (2, 5)
    assert T.one_hot(torch.tensor([1, 3], dtype=torch.uint8), 5).argmax(-1).tolist() == [1, 3]  # any integer type
    assert T.shift_matrix(1, 4).shape == (4, 4)
    assert T.softmax_with_temperature(r(2, 5), 1e-3).shape == (2, 5)
    assert cfg(d_model=12, n_heads=3, positional="rope", norm="rms").d_h == 4
    assert cfg(pad_id=None).pad_id is None and cfg(pad_id=19, rope_pairs="half", type_vocab_size=2).pad_id == 19
    assert T.padding_mask(IDS_13, None).all() and T.causal_padding_mask(IDS_13, None).equal(T.causal_mask(3)[None])
    assert T.EncoderOnly(cfg(type_vocab_size=2)).encode(IDS_13, torch.tensor([[0, 1, 1]])).shape == (1, 3, 16)


def test_from_hf_refuses_a_module_that_is_not_a_supported_hugging_face_model():
    tf = pytest.importorskip("transformers")
    with pytest.raises(TypeError, match=m("model:", "expected a Hugging Face", "got Linear")):
        from_hf(torch.nn.Linear(4, 4))
    config = tf.BertConfig(vocab_size=20, hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
                           intermediate_size=16)
    with pytest.raises(TypeError, match=m("model:", "GPT2LMHeadModel, GPT2Model, BertForMaskedLM, BertModel",
                                          "got BertForSequenceClassification")):
        from_hf(tf.BertForSequenceClassification(config))


def test_every_public_function_has_an_invalid_call_here():
    """The invalid-input suite covers every public callable of the package."""
    source = open(__file__, encoding="utf-8").read()
    exempt = {"count_parameters"}  # takes any nn.Module; nothing about it can be wrong but the type
    missing = [n for n in T.__all__ if callable(getattr(T, n)) and n not in exempt
               and not re.search(rf"\b{n}[.(]", source)]
    assert not missing, f"no invalid call for: {missing}"
