"""Multi-query and grouped-query attention (chapter 12): fewer key/value heads, each shared by a group of query
heads. Equal to ordinary multi-head attention whose key and value heads are the shared ones repeated, and with
``n_kv_heads = n_heads`` to ``torch.nn.MultiheadAttention``; the key/value cache shrinks by the group factor."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import transformer as T
from transformer.interop import copy_multihead


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_repeat_kv_repeats_each_head_in_a_row():
    x = randn(2, 3, 5, 4)
    out = T.repeat_kv(x, 2)
    assert out.shape == (2, 6, 5, 4)
    for h in range(6):
        assert torch.equal(out[:, h], x[:, h // 2])  # query heads 0, 1 -> kv head 0; 2, 3 -> 1; 4, 5 -> 2
    assert torch.equal(out, torch.repeat_interleave(x, 2, dim=1))
    assert T.repeat_kv(x, 1) is x


def test_repeat_kv_equals_llamas():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    x = randn(2, 2, 7, 4, seed=1)
    for n_rep in (1, 3, 4):
        assert torch.equal(T.repeat_kv(x, n_rep), llama.repeat_kv(x, n_rep))


def repeated_heads(gqa: T.MultiHeadAttention) -> T.MultiHeadAttention:
    """Ordinary multi-head attention whose key and value heads are copies of the grouped ones."""
    mha = T.MultiHeadAttention(gqa.d_model, gqa.n_heads, bias=gqa.w_q.bias is not None).double()
    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("w_k", "w_v"):
            w = getattr(gqa, name).weight.view(gqa.n_kv_heads, gqa.d_h, gqa.d_model)  # one block of rows per head
            getattr(mha, name).weight.copy_(w.repeat_interleave(gqa.n_rep, dim=0).reshape(gqa.d_model, gqa.d_model))
            if getattr(gqa, name).bias is not None:
                b = getattr(gqa, name).bias.view(gqa.n_kv_heads, gqa.d_h)
                getattr(mha, name).bias.copy_(b.repeat_interleave(gqa.n_rep, dim=0).flatten())
    return mha


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
@pytest.mark.parametrize("fast", [False, True])
def test_grouped_query_attention_equals_multi_head_attention_with_repeated_heads(n_kv_heads, fast):
    torch.manual_seed(0)
    gqa = T.MultiHeadAttention(32, 8, n_kv_heads=n_kv_heads, fast=fast).double()
    assert gqa.w_k.weight.shape == gqa.w_v.weight.shape == (n_kv_heads * 4, 32)
    mha = repeated_heads(gqa)
    x = randn(2, 9, 32, seed=2)
    mask = T.causal_mask(9)[None]
    assert (gqa(x, mask=mask) - mha(x, mask=mask)).abs().max() <= 1e-12
    if 1 < n_kv_heads < 8:  # a wrong grouping (heads repeated in turn, not in a row) gives another answer
        with torch.no_grad():
            w = gqa.w_k.weight.view(n_kv_heads, 4, 32)
            mha.w_k.weight.copy_(w.repeat(8 // n_kv_heads, 1, 1).reshape(32, 32))
        assert (gqa(x, mask=mask) - mha(x, mask=mask)).abs().max() > 1e-3


def test_with_as_many_kv_heads_as_heads_it_is_torch_multihead_attention():
    torch.manual_seed(1)
    theirs = nn.MultiheadAttention(24, 4, batch_first=True).double()
    ours = T.MultiHeadAttention(24, 4, n_kv_heads=4).double()
    copy_multihead(ours, theirs)
    x = randn(3, 6, 24, seed=3)
    mask = T.causal_mask(6)
    expected = theirs(x, x, x, attn_mask=~mask, need_weights=False)[0]  # torch: True = blocked
    assert (ours(x, mask=mask[None]) - expected).abs().max() <= 1e-12


def test_multi_query_attention_has_one_key_and_one_value_head():
    mqa = T.MultiHeadAttention(32, 8, n_kv_heads=1)
    full = T.MultiHeadAttention(32, 8)
    assert T.count_parameters(full) - T.count_parameters(mqa) == 2 * (32 * 32 + 32) - 2 * (32 * 4 + 4)
    assert "n_kv_heads=1" in repr(mqa) and "n_kv_heads" not in repr(full)


@pytest.mark.parametrize("n_kv_heads", [None, 4, 2, 1])
def test_the_cache_shrinks_by_the_group_factor(n_kv_heads):
    cfg = T.TransformerConfig(vocab_size=30, d_model=32, n_heads=4, n_kv_heads=n_kv_heads, d_ff=64, n_layers=3,
                              dropout=0.0, max_len=32, norm_first=True, positional="rope", pad_id=None)
    kv = 4 if n_kv_heads is None else n_kv_heads
    assert cfg.kv_heads == kv
    assert T.cache_bytes_per_token(cfg) == 2 * 3 * kv * 8 * 4  # key and value, 3 layers, kv heads of 8 float32
    assert T.cache_bytes_per_token(cfg, torch.float64) == 2 * T.cache_bytes_per_token(cfg)
    model = T.DecoderOnly(cfg).eval()
    cache = T.KVCache(3)
    model(torch.tensor([[1, 2, 3, 4, 5]]), cache=cache)
    assert [tuple(k.shape) for k in cache.keys] == [(1, kv, 5, 8)] * 3
    assert cache.bytes_per_token() == T.cache_bytes_per_token(cfg)
    assert T.cache_bytes_per_token(cfg) * 4 // kv == T.cache_bytes_per_token(cfg.__class__(
        **{**cfg.__dict__, "n_kv_heads": None}))
