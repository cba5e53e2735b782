"""Encoder and decoder blocks and stacks (chapters 6 and 8) against PyTorch's Transformer modules."""

import warnings

import pytest
import torch
from torch import nn

from transformer import Decoder, DecoderBlock, Encoder, EncoderBlock, TransformerConfig, causal_mask, padding_mask
from transformer.interop import copy_decoder_block, copy_encoder_block, copy_transformer

ATOL = 1e-5
D_MODEL, HEADS, D_FF = 16, 4, 32
PAD = 0
SRC_IDS = torch.tensor([[3, 5, 7, 2, 0, 0], [4, 4, 1, 6, 9, 8]])  # the first source has two pads
TGT_IDS = torch.tensor([[1, 5, 6, 2, 0], [1, 7, 3, 3, 2]])


def cfg(norm_first, **kw):
    return TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=HEADS, d_ff=D_FF, n_layers=2, dropout=0.0,
                             max_len=16, norm_first=norm_first, positional="none", **kw)


def randomize(module, seed):
    """Non-trivial weights everywhere, including LayerNorm gamma/beta and all biases."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.5) + (1.0 if p.dim() == 1 else 0.0))
    return module


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(params=[False, True], ids=["post_norm", "pre_norm"])
def norm_first(request):
    return request.param


@pytest.mark.parametrize("fast", [False, True], ids=["teaching", "fast"])
@pytest.mark.parametrize("padded", [False, True])
def test_encoder_block_matches_torch(norm_first, padded, fast):
    theirs = randomize(nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True,
                                                  norm_first=norm_first), seed=1).eval()
    ours = EncoderBlock(cfg(norm_first, fast=fast)).eval()
    copy_encoder_block(ours, theirs)
    x = randn(2, 6, D_MODEL, seed=2)
    if padded:
        ref = theirs(x, src_key_padding_mask=SRC_IDS == PAD)
        out = ours(x, padding_mask(SRC_IDS, PAD))
    else:
        ref, out = theirs(x), ours(x)
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("target_padding", [False, True])
def test_decoder_block_matches_torch(norm_first, target_padding):
    theirs = randomize(nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True,
                                                  norm_first=norm_first), seed=3).eval()
    ours = DecoderBlock(cfg(norm_first)).eval()
    copy_decoder_block(ours, theirs)
    x = randn(2, 5, D_MODEL, seed=4)
    memory = randn(2, 6, D_MODEL, seed=5)
    tgt_padding = TGT_IDS == PAD if target_padding else None
    ref = theirs(x, memory, tgt_mask=~causal_mask(5), tgt_key_padding_mask=tgt_padding,
                 memory_key_padding_mask=SRC_IDS == PAD)
    self_mask = causal_mask(5) & padding_mask(TGT_IDS, PAD) if target_padding else causal_mask(5)
    out = ours(x, memory, self_mask=self_mask, memory_mask=padding_mask(SRC_IDS, PAD))
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)


def test_post_norm_and_pre_norm_differ():
    # Guard against a block that ignores norm_first: the two wirings give different outputs.
    x = randn(2, 5, D_MODEL, seed=6)
    outs = []
    for nf in (False, True):
        torch.manual_seed(0)
        outs.append(randomize(EncoderBlock(cfg(nf)), seed=7).eval()(x))
    assert not torch.allclose(outs[0], outs[1], atol=1e-3)


def test_stacks_match_nn_transformer(norm_first):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nn.Transformer warns that pre-norm disables its nested-tensor path
        theirs = nn.Transformer(D_MODEL, HEADS, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=D_FF,
                                dropout=0.0, batch_first=True, norm_first=norm_first)
    randomize(theirs, seed=8).eval()
    c = cfg(norm_first, final_norm=True)
    encoder, decoder = Encoder(c).eval(), Decoder(c).eval()
    copy_transformer(encoder, decoder, theirs)
    src = randn(2, 6, D_MODEL, seed=9)
    tgt = randn(2, 5, D_MODEL, seed=10)
    ref = theirs(src, tgt, tgt_mask=~causal_mask(5), src_key_padding_mask=SRC_IDS == PAD,
                 tgt_key_padding_mask=TGT_IDS == PAD, memory_key_padding_mask=SRC_IDS == PAD)
    memory = encoder(src, padding_mask(SRC_IDS, PAD))
    torch.testing.assert_close(memory, theirs.encoder(src, src_key_padding_mask=SRC_IDS == PAD), atol=ATOL, rtol=0)
    out = decoder(tgt, memory, causal_mask(5) & padding_mask(TGT_IDS, PAD), padding_mask(SRC_IDS, PAD))
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)


def test_final_norm_defaults():
    # Only pre-norm stacks get a final norm by default; nn.Transformer always has one.
    assert isinstance(Encoder(cfg(False)).norm, nn.Identity)
    assert not isinstance(Encoder(cfg(True)).norm, nn.Identity)
    with pytest.raises(ValueError, match="final_norm=True"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = nn.Transformer(D_MODEL, HEADS, 2, 2, D_FF, dropout=0.0, batch_first=True)
        copy_transformer(Encoder(cfg(False)), Decoder(cfg(False)), theirs)


def test_stack_has_n_layers():
    c = TransformerConfig(vocab_size=10, d_model=16, n_heads=2, d_ff=32, n_layers=3, n_decoder_layers=2, dropout=0.0)
    assert len(Encoder(c).layers) == 3
    assert len(Decoder(c).layers) == 2


def test_linear_bias_false_leaves_no_bias_in_any_projection():
    """``linear_bias`` covers the cross-attention of a decoder block too (it kept its biases before)."""
    from transformer import EncoderDecoder

    c = TransformerConfig(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0, max_len=8,
                          linear_bias=False)
    linear_biases = [n for n, m in EncoderDecoder(c).named_modules() if isinstance(m, nn.Linear) and m.bias is not None]
    assert linear_biases == [n for n in linear_biases if n.startswith("head")], linear_biases
