"""Forward hooks that look inside a model (transformer.hooks), against PyTorch's own modules and
against running the model's blocks one by one. The residual stream is checked in test_viz_norm.py."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from transformer import DecoderOnly, EncoderDecoder, EncoderOnly, TransformerConfig
from transformer.hooks import attention_modules, attention_weights, layer_outputs, recorded
from transformer.interop import copy_multihead

D, HEADS = 16, 4


def cfg(**kw):
    base = dict(vocab_size=12, d_model=D, n_heads=HEADS, d_ff=32, n_layers=2, dropout=0.1, max_len=16)
    return TransformerConfig(**{**base, **kw})


def ids(seed=0, batch=2, seq=6):
    return torch.randint(1, 12, (batch, seq), generator=torch.Generator().manual_seed(seed))


def test_attention_modules_are_found_by_name_and_kind():
    model = EncoderDecoder(cfg())
    names = attention_modules(model)
    assert list(names) == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn",
                           "decoder.layers.0.self_attn", "decoder.layers.0.cross_attn",
                           "decoder.layers.1.self_attn", "decoder.layers.1.cross_attn"]
    assert list(attention_modules(model, "cross")) == ["decoder.layers.0.cross_attn", "decoder.layers.1.cross_attn"]
    assert len(attention_modules(model, "self")) == 4
    with pytest.raises(ValueError, match=r"kind: expected one of \['cross', 'self'\], got 'both'"):
        attention_modules(model, "both")


def test_attention_weights_equal_nn_multihead_attention():
    torch.manual_seed(0)
    model = EncoderOnly(cfg(positional="learned"))
    theirs = nn.MultiheadAttention(D, HEADS, batch_first=True).eval()
    copy_multihead(model.encoder.layers[0].self_attn, theirs)  # PyTorch's weights into our first block
    model.train()  # attention_weights switches to eval for the pass and back
    x = ids()
    got = attention_weights(model, x)
    assert model.training is True
    # the reference: PyTorch's attention on the input our first block reads
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.eval()
        h = model.embed(x)
        _, ref = theirs(h, h, h, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(got["encoder.layers.0.self_attn"], ref, atol=1e-6, rtol=0)
    assert got["encoder.layers.1.self_attn"].shape == (2, HEADS, 6, 6)


def test_attention_weights_of_a_decoder_only_model_are_causal():
    model = DecoderOnly(cfg())
    w = attention_weights(model, ids(seq=7))["causal_stack.layers.1.self_attn"]  # (batch, heads, 7, 7)
    assert w.shape == (2, HEADS, 7, 7)
    assert w.triu(1).abs().max() == 0  # no weight on a later position
    torch.testing.assert_close(w.sum(-1), torch.ones(2, HEADS, 7))


def test_layer_outputs_equal_running_the_blocks_one_by_one():
    torch.manual_seed(1)
    model = EncoderDecoder(cfg(n_decoder_layers=3)).eval()
    src, tgt = ids(1), ids(2, seq=5)
    got = layer_outputs(model, src, tgt)
    assert list(got) == ["encoder.layers.0", "encoder.layers.1",
                         "decoder.layers.0", "decoder.layers.1", "decoder.layers.2"]
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        x, mask = model.src_embed(src), src_mask
        for i, layer in enumerate(model.encoder.layers):
            x = layer(x, mask)
            torch.testing.assert_close(got[f"encoder.layers.{i}"], x, atol=0, rtol=0)
        y = model.tgt_embed(tgt)
        self_mask = torch.ones(5, 5, dtype=torch.bool).tril()[None]
        for i, layer in enumerate(model.decoder.layers):
            y = layer(y, memory, self_mask, src_mask)
            torch.testing.assert_close(got[f"decoder.layers.{i}"], y, atol=0, rtol=0)


def test_recorded_inputs_and_outputs_leave_the_model_unchanged():
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    before = lin(x)
    with recorded({"lin": lin}) as out, recorded({"lin": lin}, "input") as inp:
        lin(x)
        lin(2 * x)
    assert torch.equal(inp["lin"][0], x) and torch.equal(inp["lin"][1], 2 * x)
    torch.testing.assert_close(out["lin"][1], lin(2 * x))
    assert not lin._forward_hooks and not lin._forward_pre_hooks
    assert torch.equal(lin(x), before)
    with pytest.raises(ValueError, match=r"what: expected one of \['input', 'output'\], got 'grad'"):
        with recorded({"lin": lin}, "grad"):
            pass
    with pytest.raises(TypeError, match=r"modules\['f'\]: expected an nn.Module, got function"):
        with recorded({"f": lambda t: t}):
            pass


def test_a_bad_module_after_a_good_one_leaves_no_hook_behind():
    """The hooks registered before an argument is refused are removed with the others (hooks.attached)."""
    lin = torch.nn.Linear(3, 3)
    with pytest.raises(TypeError, match=r"modules\['f'\]: expected an nn.Module, got function"):
        with recorded({"lin": lin, "f": lambda t: t}):
            pass
    assert not lin._forward_hooks and not lin._forward_pre_hooks
    with pytest.raises(RuntimeError, match="raised inside the block"):
        with recorded({"lin": lin}):
            raise RuntimeError("raised inside the block")
    assert not lin._forward_hooks
