"""Multi-head attention (chapters 5 and 8) against nn.MultiheadAttention."""

import pytest
import torch
from torch import nn

from transformer import MultiHeadAttention, causal_mask, merge_heads, padding_mask, split_heads
from transformer.interop import copy_multihead

ATOL = 1e-5
D_MODEL, HEADS = 24, 4


def pair(d_model=D_MODEL, n_heads=HEADS, fast=False, seed=0):
    """Our module and PyTorch's, with the same random weights (biases randomized too)."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_bias.normal_()
        theirs.out_proj.bias.normal_()
    ours = MultiHeadAttention(d_model, n_heads, fast=fast)
    copy_multihead(ours, theirs)
    return ours.eval(), theirs.eval()


def randn(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(params=[False, True], ids=["teaching", "fast"])
def fast(request):
    return request.param


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_self_attention_matches_torch(n_heads, fast):
    ours, theirs = pair(n_heads=n_heads, fast=fast)
    x = randn(3, 6, D_MODEL)
    ref, _ = theirs(x, x, x, need_weights=False)
    torch.testing.assert_close(ours(x), ref, atol=ATOL, rtol=0)


def test_cross_attention_matches_torch(fast):
    ours, theirs = pair(fast=fast)
    x = randn(3, 4, D_MODEL, seed=1)  # T_q = 4
    memory = randn(3, 9, D_MODEL, seed=2)  # T_k = 9
    ref, _ = theirs(x, memory, memory, need_weights=False)
    out = ours(x, memory)
    assert out.shape == (3, 4, D_MODEL)
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)


def test_causal_mask_matches_torch(fast):
    ours, theirs = pair(fast=fast)
    x = randn(2, 7, D_MODEL)
    mask = causal_mask(7)
    # nn.MultiheadAttention's boolean attn_mask means True = blocked: the opposite of ours.
    ref, _ = theirs(x, x, x, attn_mask=~mask, need_weights=False)
    torch.testing.assert_close(ours(x, mask=mask), ref, atol=ATOL, rtol=0)


def test_key_padding_mask_matches_torch(fast):
    ours, theirs = pair(fast=fast)
    pad_id = 0
    ids = torch.tensor([[5, 3, 8, 2, 0, 0], [7, 7, 1, 4, 9, 0], [1, 2, 3, 4, 5, 6]])
    x = randn(3, 6, D_MODEL)
    ref, _ = theirs(x, x, x, key_padding_mask=ids == pad_id, need_weights=False)
    torch.testing.assert_close(ours(x, mask=padding_mask(ids, pad_id)), ref, atol=ATOL, rtol=0)


def test_cross_attention_with_memory_padding_matches_torch(fast):
    ours, theirs = pair(fast=fast)
    src = torch.tensor([[4, 4, 4, 0, 0], [1, 2, 3, 4, 5]])
    memory = randn(2, 5, D_MODEL, seed=3)
    x = randn(2, 3, D_MODEL, seed=4)
    ref, _ = theirs(x, memory, memory, key_padding_mask=src == 0, need_weights=False)
    torch.testing.assert_close(ours(x, memory, mask=padding_mask(src, 0)), ref, atol=ATOL, rtol=0)


def test_causal_and_padding_combined_match_torch(fast):
    ours, theirs = pair(fast=fast)
    ids = torch.tensor([[5, 3, 8, 0, 0], [7, 7, 1, 4, 9]])
    x = randn(2, 5, D_MODEL)
    mask = causal_mask(5) & padding_mask(ids, 0)  # (batch, T, T)
    ref, _ = theirs(x, x, x, attn_mask=~causal_mask(5), key_padding_mask=ids == 0, need_weights=False)
    torch.testing.assert_close(ours(x, mask=mask), ref, atol=ATOL, rtol=0)


def test_per_head_mask_matches_torch(fast):
    # A 4-d mask (batch, heads, T_q, T_k); PyTorch takes a 3-d (batch * heads, T_q, T_k).
    ours, theirs = pair(fast=fast)
    mask = randn(2, HEADS, 5, 5) > -0.5
    mask[..., 0] = True
    x = randn(2, 5, D_MODEL, seed=5)
    ref, _ = theirs(x, x, x, attn_mask=~mask.reshape(2 * HEADS, 5, 5), need_weights=False)
    torch.testing.assert_close(ours(x, mask=mask), ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("masked", [False, True])
def test_averaged_weights_match_torch(masked):
    ours, theirs = pair()
    x = randn(2, 6, D_MODEL)
    ids = torch.tensor([[1, 2, 3, 4, 0, 0], [1, 2, 3, 4, 5, 6]])
    kw, mask = ({"attn_mask": ~causal_mask(6), "key_padding_mask": ids == 0},
                causal_mask(6) & padding_mask(ids, 0)) if masked else ({}, None)
    ref_out, ref_w = theirs(x, x, x, need_weights=True, average_attn_weights=True, **kw)
    out, w = ours(x, mask=mask, return_weights=True)
    assert w.shape == (2, HEADS, 6, 6)
    torch.testing.assert_close(out, ref_out, atol=ATOL, rtol=0)
    torch.testing.assert_close(w.mean(1), ref_w, atol=1e-6, rtol=0)
    # and per head, too
    _, ref_heads = theirs(x, x, x, need_weights=True, average_attn_weights=False, **kw)
    torch.testing.assert_close(w, ref_heads, atol=1e-6, rtol=0)


def test_gradients_match_torch(fast):
    ours, theirs = pair(fast=fast)
    x = randn(2, 5, D_MODEL)
    mask = causal_mask(5)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours(x1, mask=mask).pow(2).sum().backward()
    theirs(x2, x2, x2, attn_mask=~mask, need_weights=False)[0].pow(2).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, atol=1e-4, rtol=0)
    w_q_grad_theirs = theirs.in_proj_weight.grad[:D_MODEL]
    torch.testing.assert_close(ours.w_q.weight.grad, w_q_grad_theirs, atol=1e-4, rtol=0)
    torch.testing.assert_close(ours.w_o.weight.grad, theirs.out_proj.weight.grad, atol=1e-4, rtol=0)


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_dropout_on_the_weights_matches_torch_in_training_only(cross):
    # PyTorch drops attention weights of the same shape in the same order: with one seed, the same numbers.
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D_MODEL, HEADS, dropout=0.3, batch_first=True)
    ours = MultiHeadAttention(D_MODEL, HEADS, dropout=0.3)
    copy_multihead(ours, theirs)
    x = randn(2, 5, D_MODEL)
    source = randn(2, 7, D_MODEL, seed=2) if cross else x
    torch.manual_seed(7)
    ref, _ = theirs(x, source, source, need_weights=True, average_attn_weights=False)
    torch.manual_seed(7)
    out = ours(x, source if cross else None)
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)
    ours.eval()
    theirs.eval()
    ref_eval, _ = theirs(x, source, source, need_weights=False)
    torch.testing.assert_close(ours(x, source if cross else None), ref_eval, atol=ATOL, rtol=0)
    assert not torch.allclose(out, ref_eval, atol=1e-3)  # the training output was dropped out


def test_a_plain_layer_runs_the_code_that_chapters_5_and_8_show(monkeypatch):
    """The chapters show ``MultiHeadAttention._multi_head`` as the layer's code: ``forward`` runs it for self- and
    cross-attention, and a layer with an option of a later chapter (here the fused path) runs the other path."""
    sources = []
    shown = MultiHeadAttention._multi_head

    def spy(self, x, source, mask=None):
        sources.append("x" if source is x else "memory")
        return shown(self, x, source, mask)

    monkeypatch.setattr(MultiHeadAttention, "_multi_head", spy)
    ours, theirs = pair()
    x, memory = randn(2, 4, D_MODEL), randn(2, 6, D_MODEL, seed=2)
    torch.testing.assert_close(ours(x, memory), theirs(x, memory, memory, need_weights=False)[0], atol=ATOL, rtol=0)
    torch.testing.assert_close(ours(x), theirs(x, x, x, need_weights=False)[0], atol=ATOL, rtol=0)
    assert sources == ["memory", "x"]
    fast, _ = pair(fast=True)
    fast(x)
    assert sources == ["memory", "x"]


# ----------------------------------------------------------- heads


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 12])
def test_split_heads_shape_and_layout(n_heads):
    d_model = 12
    d_h = d_model // n_heads
    x = torch.arange(2 * 5 * d_model, dtype=torch.float32).view(2, 5, d_model)
    heads = split_heads(x, n_heads)
    assert heads.shape == (2, n_heads, 5, d_h)
    # Head h holds features h*d_h .. (h+1)*d_h - 1 of every token.
    for h in range(n_heads):
        assert torch.equal(heads[:, h], x[:, :, h * d_h:(h + 1) * d_h])
    back = merge_heads(heads)
    assert back.shape == x.shape
    assert torch.equal(back, x)


def test_merge_heads_concatenates_in_head_order():
    heads = torch.stack([torch.full((2, 3, 2), float(h)) for h in range(4)], dim=1)  # (2, 4, 3, 2)
    merged = merge_heads(heads)
    assert merged.shape == (2, 3, 8)
    assert merged[0, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("d_model, n_heads", [(16, 1), (16, 2), (16, 4), (16, 8), (16, 16), (48, 3), (48, 6)])
def test_parameter_count_does_not_depend_on_heads(d_model, n_heads):
    mha = MultiHeadAttention(d_model, n_heads)
    assert sum(p.numel() for p in mha.parameters()) == 4 * d_model**2 + 4 * d_model
    assert mha.d_h == d_model // n_heads


def test_parameter_count_equals_torch():
    for n_heads in (1, 2, 4):
        ours, theirs = pair(n_heads=n_heads)
        assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
