"""The whole Transformer (chapter 10): equal to nn.Transformer, the 2017 parameter count, shared
embeddings, reading the cross-attention, the translation explorer, and a translator that learns."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from transformer import EncoderDecoder, TransformerConfig, count_parameters
from transformer.data import Corpus
from transformer.hooks import cross_attention_weights, recorded_attention
from transformer.interop import copy_transformer
from transformer.train import exact_match, fit, translate
from transformer.viz.training import TranslationExplorer, translation_attention

from conftest import small_translator

D, HEADS, D_FF, V_SRC, V_TGT, PAD = 16, 2, 32, 13, 11, 0


def small(norm_first=False, **kw):
    base = dict(vocab_size=V_TGT, src_vocab_size=V_SRC, d_model=D, n_heads=HEADS, d_ff=D_FF, n_layers=2,
                dropout=0.0, max_len=12, norm_first=norm_first, final_norm=True)
    base.update(kw)
    return TransformerConfig(**base)


def torch_transformer(seed, norm_first=False, layers=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        theirs = nn.Transformer(D, HEADS, layers, layers, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))  # make every bias and LayerNorm matter
    return theirs.eval()


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, V_SRC, (3, 6), generator=g)
    tgt = torch.randint(3, V_TGT, (3, 5), generator=g)
    src[1, 4:] = PAD
    src[2, 2:] = PAD
    tgt[:, 0] = 1
    tgt[1, 3:] = PAD
    return src, tgt


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_decoder_equals_nn_transformer(norm_first):
    torch.manual_seed(0)
    model = EncoderDecoder(small(norm_first)).eval()
    theirs = torch_transformer(1, norm_first)
    copy_transformer(model.encoder, model.decoder, theirs)
    src, tgt = batch()
    t = tgt.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = theirs(model.src_embed(src), model.tgt_embed(tgt), tgt_mask=torch.ones(t, t, dtype=torch.bool).triu(1),
                   src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
                   memory_key_padding_mask=src == PAD)
    ref = h @ model.tgt_embed.tokens.weight.T  # the tied output layer
    torch.testing.assert_close(model(src, tgt), ref, atol=1e-5, rtol=0)


def test_shared_embeddings_are_one_matrix():
    model = EncoderDecoder(small(src_vocab_size=None, share_embeddings=True))
    assert model.src_embed.tokens is model.tgt_embed.tokens
    assert model.head.weight is model.src_embed.tokens.weight
    separate = EncoderDecoder(small(src_vocab_size=None))
    assert count_parameters(separate) - count_parameters(model) == V_TGT * D
    with pytest.raises(ValueError, match="src_vocab_size: expected None or vocab_size=11 with share_embeddings"):
        small(share_embeddings=True)


def test_base_model_parameter_count_by_hand():
    d, d_ff, v, n = 512, 2048, 37000, 6
    attention = 4 * d * d + 4 * d  # 1,050,624
    ffn = 2 * d * d_ff + d_ff + d  # 2,099,712
    encoder_layer = attention + ffn + 2 * 2 * d
    decoder_layer = 2 * attention + ffn + 3 * 2 * d
    assert (encoder_layer, decoder_layer) == (3_152_384, 4_204_032)
    # PyTorch's own layers have the same parameters
    assert sum(p.numel() for p in nn.TransformerEncoderLayer(d, 8, d_ff).parameters()) == encoder_layer
    assert sum(p.numel() for p in nn.TransformerDecoderLayer(d, 8, d_ff).parameters()) == decoder_layer
    shared = v * d + n * (encoder_layer + decoder_layer)
    assert shared == 63_082_496
    model = EncoderDecoder(TransformerConfig(share_embeddings=True))
    assert count_parameters(model) == shared
    assert count_parameters(model.encoder.layers[0]) == encoder_layer
    assert count_parameters(model.decoder.layers[0]) == decoder_layer
    assert abs(shared - 65e6) / 65e6 < 0.03  # the paper's "65M", within 3%
    del model
    tied_only = 2 * v * d + n * (encoder_layer + decoder_layer)
    assert count_parameters(EncoderDecoder(TransformerConfig())) == tied_only == 82_026_496


def test_cross_attention_weights_equal_nn_multihead_attention():
    torch.manual_seed(0)
    model = EncoderDecoder(small()).eval()
    theirs = torch_transformer(2)
    copy_transformer(model.encoder, model.decoder, theirs)
    src, tgt = batch(1)
    t = tgt.shape[1]
    got = cross_attention_weights(model, src, tgt)
    assert got.shape == (2, 3, HEADS, t, 6)
    # the reference: run nn.Transformer's decoder layer by layer and ask each cross-attention for its weights
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = theirs.encoder(model.src_embed(src), src_key_padding_mask=src == PAD)
        x = model.tgt_embed(tgt)
        for i, layer in enumerate(theirs.decoder.layers):
            h = layer.norm1(x + layer.self_attn(x, x, x, attn_mask=causal, key_padding_mask=tgt == PAD)[0])
            _, w = layer.multihead_attn(h, memory, memory, key_padding_mask=src == PAD, need_weights=True,
                                        average_attn_weights=False)
            torch.testing.assert_close(got[i], w, atol=1e-5, rtol=0)
            x = layer(x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt == PAD,
                      memory_key_padding_mask=src == PAD)
    assert got[:, 1, ..., 4:].abs().max() == 0 and got[:, 2, ..., 2:].abs().max() == 0  # padding gets no weight
    assert model.training is False


def test_recorded_attention_removes_its_hooks():
    torch.manual_seed(0)
    model = EncoderDecoder(small()).eval()
    src, tgt = batch()
    before = model(src, tgt)
    layer = model.encoder.layers[0].self_attn
    with recorded_attention({"enc0": layer}) as record:
        during = model(src, tgt)
        model(src, tgt)
    assert len(record["enc0"]) == 2 and record["enc0"][0].shape == (3, HEADS, 6, 6)
    assert not layer._forward_hooks
    torch.testing.assert_close(during, before, atol=0, rtol=0)  # recording changes nothing
    with pytest.raises(TypeError, match=r"modules\['x'\]: expected a MultiHeadAttention, got Linear"):
        with recorded_attention({"x": nn.Linear(2, 2)}):
            pass


def test_translation_attention_shapes():
    torch.manual_seed(0)
    corpus = Corpus()
    model = small_translator(corpus)
    src_words, tgt_words, w = translation_attention(model, corpus, "I ate an apple")
    assert src_words == ["I", "ate", "an", "apple"]
    assert tgt_words[-1] == "<eos>" or len(tgt_words) == 13
    assert w.shape == (len(tgt_words), 4)
    torch.testing.assert_close(w.sum(dim=-1), torch.ones(len(tgt_words)))


def fake_translate(sentence):
    words = sentence.split()
    target = [w.upper() for w in reversed(words)] + ["<eos>"]
    weights = torch.zeros(len(target), len(words))
    for t in range(len(words)):
        weights[t, len(words) - 1 - t] = 1.0  # word t of the target comes from the mirrored source word
    weights[-1] = 1.0 / len(words)
    return words, target, weights


def test_translation_explorer():
    ex = TranslationExplorer(["a b c", "d e"], fake_translate, references={"a b c": "C B A", "d e": "nope"})
    assert ex.translation == "C B A"
    assert ex.weights.tolist() == [0.0, 0.0, 1.0]  # word 1 ("C") looks at "c"
    assert "correct" in ex.view.value and "<b>C</b>" in ex.view.value
    ex.word.value = 2
    assert ex.weights.tolist() == [1.0, 0.0, 0.0]
    menu = ex.word.options
    ex.sentence.value = "d e"
    assert ex.word.options == menu and len(menu) == 4  # one menu for every sentence: C, B, A, <eos> is the longest
    assert ex.word.value == 2 and ex.words == ["E", "D", "<eos>"]
    assert ex.translation == "E D"
    assert "expected: nope" in ex.view.value and "<b>&lt;eos&gt;</b>" in ex.view.value
    torch.testing.assert_close(ex.weights, torch.tensor([0.5, 0.5]))
    ex.word.value = 3  # past the end of "E D <eos>": its last word, and a note
    assert ex.position == 2 and "the translation has 3 words" in ex.view.value
    ex.word.value = 0
    assert ex.weights.tolist() == [0.0, 1.0] and "<b>E</b>" in ex.view.value


@pytest.mark.slow
def test_a_small_translator_learns_the_held_out_sentences():
    torch.manual_seed(0)
    corpus = Corpus()
    model = small_translator(corpus, d_model=64, n_heads=4, d_ff=128, n_layers=2)
    fit(model, corpus.batches(64, torch.Generator().manual_seed(0)), 250, lr=1e-3, warmup=100, label_smoothing=0.1)
    assert exact_match(model, corpus, corpus.held_out) >= 0.98
    assert translate(model, corpus, ["I ate an apple"]) == ["Ich habe einen Apfel gegessen"]
