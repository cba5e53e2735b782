"""The residual stream and the norm explorer (chapter 6), against PyTorch's own modules."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer import Encoder, EncoderBlock, TransformerConfig
from transformer.hooks import residual_stream
from transformer.interop import copy_encoder_block, copy_layer_norm
from transformer.viz.norm import NormExplorer, signed_bars

D_MODEL, HEADS, D_FF = 16, 4, 32


def cfg(norm_first, n_layers=1):
    return TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=HEADS, d_ff=D_FF, n_layers=n_layers,
                             dropout=0.0, max_len=16, norm_first=norm_first, positional="none")


def torch_layer(norm_first, seed):
    torch.manual_seed(seed)
    theirs = nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))  # non-trivial gamma, beta and biases
    return theirs.eval()


def x_in(seed=0):
    return torch.randn(2, 5, D_MODEL, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_residual_stream_of_one_block_matches_torch(norm_first):
    theirs = torch_layer(norm_first, seed=1)
    ours = EncoderBlock(cfg(norm_first)).eval()
    copy_encoder_block(ours, theirs)
    x = x_in()
    with torch.no_grad():
        states, labels = residual_stream(ours, x)
        sa = lambda z: theirs.self_attn(z, z, z, need_weights=False)[0]  # noqa: E731
        after_attention = x + sa(theirs.norm1(x)) if norm_first else theirs.norm1(x + sa(x))
        ref = theirs(x)
    assert labels == ["input", "1: + attention", "1: + feed-forward"]
    assert torch.equal(states[0], x)
    torch.testing.assert_close(states[1], after_attention, atol=1e-5, rtol=0)
    torch.testing.assert_close(states[2], ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_residual_stream_of_an_encoder_matches_torch(norm_first):
    layers = [torch_layer(norm_first, seed=s) for s in (2, 3)]
    final = nn.LayerNorm(D_MODEL)
    with torch.no_grad():
        final.weight.uniform_(0.5, 1.5)
        final.bias.uniform_(-0.5, 0.5)
    ours = Encoder(cfg(norm_first, n_layers=2)).eval()
    for a, b in zip(ours.layers, layers):
        copy_encoder_block(a, b)
    x = x_in(seed=4)
    with torch.no_grad():
        states, labels = residual_stream(ours, x)
        ref = x
        for layer in layers:
            ref = layer(ref)
        if norm_first:  # a pre-norm stack ends with a norm; a post-norm stack has none by default
            copy_layer_norm(ours.norm, final)
            states, labels = residual_stream(ours, x)
            ref = final(ref)
    expected = ["input", "1: + attention", "1: + feed-forward", "2: + attention", "2: + feed-forward"]
    assert labels == expected + (["final norm"] if norm_first else [])
    torch.testing.assert_close(states[-1], ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_residual_stream_of_attention_only_blocks_is_one_state_per_block(norm_first):
    """Chapter 13's blocks (ffn="none") have no feed-forward: one state each, after attention, written out here."""
    blocks = [EncoderBlock(TransformerConfig(**{**vars(cfg(norm_first)), "ffn": "none"})).eval() for _ in range(2)]
    x = x_in(seed=5)
    with torch.no_grad():
        states, labels = residual_stream(blocks, x)
        ref = [x]
        for b in blocks:
            z = ref[-1]
            sa = b.self_attn(b.norm1(z)) if norm_first else b.self_attn(z)
            ref.append(z + sa if norm_first else b.norm1(z + sa))
    assert labels == ["input", "1: + attention", "2: + attention"]
    for got, want in zip(states, ref, strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_post_norm_stream_is_normalised_after_every_sublayer():
    ours = Encoder(cfg(False, n_layers=3)).eval()  # gamma = 1, beta = 0 at initialisation
    with torch.no_grad():
        states, _ = residual_stream(ours, 5 * x_in(seed=5) + 3)
    for s in states[1:]:
        torch.testing.assert_close(s.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
        torch.testing.assert_close(s.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


def test_residual_stream_rejects_bad_input():
    with pytest.raises(ValueError, match=r"x: expected 3 dimensions \(batch, seq, d_model\), got 2"):
        residual_stream(EncoderBlock(cfg(False)), torch.zeros(5, D_MODEL))
    with pytest.raises(TypeError, match="blocks: expected EncoderBlock modules, got Linear"):
        residual_stream([nn.Linear(D_MODEL, D_MODEL)], x_in())


X = torch.tensor([1.0, -2.0, 0.5, 3.0, -1.0])


def test_layer_norm_ignores_scale_and_shift():
    ex = NormExplorer(X)
    start = F.layer_norm(X, (5,))
    torch.testing.assert_close(ex.output, start, atol=1e-5, rtol=0)
    ex.scale.value, ex.shift.value = 20.0, -7.5
    torch.testing.assert_close(ex.input, 20.0 * X - 7.5)
    torch.testing.assert_close(ex.output, F.layer_norm(20.0 * X - 7.5, (5,)), atol=1e-5, rtol=0)
    assert ex.change < 1e-4
    assert "largest change of the LayerNorm output since scale 1, shift 0: <b>0.0000</b>" in ex.view.value


def test_rms_norm_ignores_scale_but_not_shift():
    ex = NormExplorer(X, norm="RMSNorm")
    rms = nn.RMSNorm(5, eps=1e-5)
    ex.scale.value = 50.0
    with torch.no_grad():
        torch.testing.assert_close(ex.output, rms(50.0 * X), atol=1e-5, rtol=0)
    assert ex.change < 1e-4
    ex.scale.value, ex.shift.value = 1.0, 4.0
    with torch.no_grad():
        torch.testing.assert_close(ex.output, rms(X + 4.0), atol=1e-5, rtol=0)
    assert ex.change > 0.5
    ex.norm.value = "LayerNorm"  # switching back: the shift no longer matters
    assert ex.change < 1e-4
    assert "LayerNorm(input)" in ex.view.value


def test_norm_explorer_rejects_bad_input():
    with pytest.raises(ValueError, match=r"x: expected 1 dimensions \(d_model,\), got 2"):
        NormExplorer(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"norm: expected one of \['LayerNorm', 'RMSNorm'\], got 'BatchNorm'"):
        NormExplorer(X, norm="BatchNorm")


def test_signed_bars_draw_negatives_left_and_escape_labels():
    page = signed_bars(["<a>", "b"], {"v": torch.tensor([-1.0, 0.5])}, width=40)
    assert "&lt;a&gt;" in page
    assert "width:40px;height:10px;background:#c1604a;margin-left:0px" in page  # -1 fills the left cell
    assert "width:20px;height:10px;background:#4a7fc1" in page  # 0.5 fills half of the right cell
