"""Scaled dot-product attention (chapter 4) against F.scaled_dot_product_attention and a hand computation; and its
two other forms: with a bias added to the scores, as MultiHeadAttention composes it for the relative bias (chapter 3),
and the fast path through PyTorch's fused kernel, ``flash.fused_attention`` (chapter 12)."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer import attention_with_weights, scaled_dot_product_attention
from transformer.attention import attention_scores
from transformer.flash import fused_attention
from transformer.masks import softmax_over_allowed

ATOL = 1e-5

# (batch, seq, d) and (batch, heads, seq, d); T_q != T_k and d_v != d_k so transposes cannot hide.
SHAPES = {
    "3d": ((2, 5, 8), (2, 7, 8), (2, 7, 6)),
    "4d": ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)),
}


def make_qkv(kind, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(s, generator=g, dtype=dtype) for s in SHAPES[kind])


def random_mask(shape, seed=1, p=0.6):
    """A bool mask, True = may attend, with at least one allowed key in every row."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) < p
    mask[..., 0] = True
    return mask


@pytest.fixture(params=[False, True], ids=["teaching", "fast"])
def fast(request):
    return request.param


def attention(q, k, v, mask=None, bias=None, fast=False):
    """Chapter 4's function, or with a bias the cores as MultiHeadAttention composes them; ``fast``: the fused path."""
    if fast:
        return fused_attention(q, k, v, mask, bias)
    if bias is None:
        return scaled_dot_product_attention(q, k, v, mask)
    return softmax_over_allowed(attention_scores(q, k) + bias, mask) @ v


# ----------------------------------------------------------- against PyTorch


@pytest.mark.parametrize("kind", ["3d", "4d"])
def test_no_mask_matches_torch(kind, fast):
    q, k, v = make_qkv(kind)
    ours = attention(q, k, v, fast=fast)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert ours.shape == ref.shape == (*q.shape[:-1], v.shape[-1])
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", ["3d", "4d"])
@pytest.mark.parametrize("mask_layout", ["full", "broadcast_queries", "shared_2d"])
def test_bool_mask_matches_torch(kind, mask_layout, fast):
    q, k, v = make_qkv(kind)
    t_q, t_k = q.shape[-2], k.shape[-2]
    if mask_layout == "full":
        shape = (*q.shape[:-1], t_k)
    elif mask_layout == "broadcast_queries":  # like a padding mask: (batch, [1,] 1, T_k)
        shape = (q.shape[0],) + (1,) * (q.dim() - 2) + (t_k,)
    else:
        shape = (t_q, t_k)
    mask = random_mask(shape)
    ours = attention(q, k, v, mask, fast=fast)
    # F.scaled_dot_product_attention uses the same convention as ours: True = may attend.
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_mask_convention_true_means_attend(fast):
    # One allowed key per query: the output must be exactly that key's value.
    q, k, v = make_qkv("3d")
    allowed = torch.tensor([3, 0, 6, 6, 1])
    mask = F.one_hot(allowed, k.shape[1]).bool()  # (T_q, T_k)
    out = attention(q, k, v, mask, fast=fast)
    torch.testing.assert_close(out, v[:, allowed], atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", ["3d", "4d"])
@pytest.mark.parametrize("with_mask", [False, True])
def test_float_bias_matches_torch(kind, with_mask, fast):
    q, k, v = make_qkv(kind)
    t_q, t_k = q.shape[-2], k.shape[-2]
    bias = torch.randn(t_q, t_k, generator=torch.Generator().manual_seed(5))
    mask = random_mask((*q.shape[:-1], t_k)) if with_mask else None
    ours = attention(q, k, v, mask, bias=bias, fast=fast)
    # A float attn_mask is added to the scores; -inf blocks a key.
    additive = bias if mask is None else bias + torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_per_head_bias_matches_torch(fast):
    # The relative-position bias has shape (heads, T_q, T_k).
    q, k, v = make_qkv("4d")
    bias = torch.randn(q.shape[1], q.shape[2], k.shape[2], generator=torch.Generator().manual_seed(6))
    mask = random_mask((q.shape[0], 1, 1, k.shape[2]))
    ours = attention(q, k, v, mask, bias=bias, fast=fast)
    additive = bias + torch.zeros(mask.shape).masked_fill(~mask, -math.inf)  # (batch, heads, T_q, T_k)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_default_scale_is_one_over_sqrt_dk():
    q, k, v = make_qkv("3d")
    ours = scaled_dot_product_attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(8))
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
    unscaled = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    assert not torch.allclose(ours, unscaled, atol=1e-3)


@pytest.mark.parametrize("kind", ["3d", "4d"])
@pytest.mark.parametrize("with_mask", [False, True])
def test_return_weights(kind, with_mask):
    q, k, v = make_qkv(kind)
    mask = random_mask((*q.shape[:-1], k.shape[-2])) if with_mask else None
    out, weights = attention_with_weights(q, k, v, mask)
    assert weights.shape == (*q.shape[:-1], k.shape[-2])
    torch.testing.assert_close(weights.sum(-1), torch.ones(q.shape[:-1]), atol=1e-6, rtol=0)
    assert (weights >= 0).all()
    if with_mask:
        assert (weights[~mask] == 0).all()
    # The output is the weighted sum of the values, and the same as PyTorch's.
    torch.testing.assert_close(out, weights @ v, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, mask), out, atol=0, rtol=0)


def test_weights_match_the_softmax_by_hand():
    # Two queries, three keys, d_k = 1: the scores are the plain products q_t * k_i.
    q = torch.tensor([[[1.0], [2.0]]])
    k = torch.tensor([[[0.0], [1.0], [-1.0]]])
    v = torch.eye(3)[None]
    _, w = attention_with_weights(q, k, v)
    e = math.e
    expected = torch.tensor([
        [1 / (1 + e + 1 / e), e / (1 + e + 1 / e), (1 / e) / (1 + e + 1 / e)],
        [1 / (1 + e**2 + e**-2), e**2 / (1 + e**2 + e**-2), e**-2 / (1 + e**2 + e**-2)],
    ])
    torch.testing.assert_close(w[0], expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kind", ["3d", "4d"])
def test_gradients_teaching_and_fast_agree(kind):
    q, k, v = make_qkv(kind, dtype=torch.float64)
    t_q, t_k = q.shape[-2], k.shape[-2]
    mask = random_mask((*q.shape[:-1], t_k))
    bias = torch.randn(t_q, t_k, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    grads = []
    for fast in (False, True):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, bias)]
        out = attention(*leaves[:3], mask, bias=leaves[3], fast=fast)
        (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)).sum().backward()
        grads.append([t.grad for t in leaves])
    # and both agree with PyTorch's own kernel
    leaves = [t.clone().requires_grad_() for t in (q, k, v, bias)]
    additive = leaves[3] + torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, -math.inf)
    out = F.scaled_dot_product_attention(*leaves[:3], attn_mask=additive)
    (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)).sum().backward()
    grads.append([t.grad for t in leaves])
    for name, a, b, c in zip("qkvb", *grads):
        assert a is not None and b is not None, name
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0, msg=name)
        torch.testing.assert_close(a, c, atol=1e-10, rtol=0, msg=name)


# ----------------------------------------------------------- the lecture's example, by hand


def test_flying_arrows_by_hand():
    # Embeddings from the lecture notes (d_model = 6):
    #   flying = [0, 1,  1,  1,  1, 0]
    #   arrows = [1, 1,  0, -1, -1, 1]
    # query = dims 0-1, key = dims 2-3, value = dims 4-5:
    #   q_flying = [0, 1]   k_flying = [1, 1]    v_flying = [1, 0]
    #   q_arrows = [1, 1]   k_arrows = [0, -1]   v_arrows = [-1, 1]
    # Query "flying", d_k = 2:
    #   scores  q_flying . k_flying / sqrt(2) = (0*1 + 1*1) / sqrt(2)   =  1/sqrt(2) =  0.70711
    #           q_flying . k_arrows / sqrt(2) = (0*0 + 1*(-1)) / sqrt(2) = -1/sqrt(2) = -0.70711
    #   weights softmax of two numbers = sigmoid of their difference:
    #           sigmoid(sqrt(2)) = 1 / (1 + e^-1.41421) = 0.80442, and 1 - 0.80442 = 0.19558
    #   output  0.80442 * [1, 0] + 0.19558 * [-1, 1] = [0.60884, 0.19558]
    # Query "arrows":
    #   scores  (1*1 + 1*1) / sqrt(2) = 1.41421 and (1*0 + 1*(-1)) / sqrt(2) = -0.70711
    #   weights sigmoid(3/sqrt(2)) = sigmoid(2.12132) = 1 / (1 + e^-2.12132) = 0.89296, and 0.10704
    #   output  0.89296 * [1, 0] + 0.10704 * [-1, 1] = [0.78592, 0.10704]
    flying = torch.tensor([0.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    arrows = torch.tensor([1.0, 1.0, 0.0, -1.0, -1.0, 1.0])
    x = torch.stack([flying, arrows])[None]  # (batch=1, seq=2, 6)
    q, k, v = x[..., 0:2], x[..., 2:4], x[..., 4:6]  # (1, 2, 2) each
    for fast in (False, True):
        out = attention(q, k, v, fast=fast)
        assert out.shape == (1, 2, 2)
        torch.testing.assert_close(out[0, 0], torch.tensor([0.60884, 0.19558]), atol=1e-4, rtol=0)
        torch.testing.assert_close(out[0, 1], torch.tensor([0.78592, 0.10704]), atol=1e-4, rtol=0)
    _, w = attention_with_weights(q, k, v)
    torch.testing.assert_close(w[0], torch.tensor([[0.80442, 0.19558], [0.89296, 0.10704]]), atol=1e-4, rtol=0)


# ----------------------------------------------------------- fully masked rows


def _mask_with_empty_row(t_q=5, t_k=7, empty=2):
    mask = random_mask((t_q, t_k), seed=4)
    mask[empty] = False
    return mask


@pytest.mark.parametrize("kind", ["3d", "4d"])
def test_fully_masked_row_gives_zero_weights_and_output(kind, fast):
    q, k, v = make_qkv(kind)
    mask = _mask_with_empty_row()
    keep = torch.tensor([0, 1, 3, 4])
    out = attention(q, k, v, mask, fast=fast)
    assert not torch.isnan(out).any()
    assert (out[..., 2, :] == 0).all()
    # The other rows are untouched: same as PyTorch on the rows that have keys.
    ref = F.scaled_dot_product_attention(q[..., keep, :], k, v, attn_mask=mask[keep])
    torch.testing.assert_close(out[..., keep, :], ref, atol=ATOL, rtol=0)
    if not fast:
        out_w, w = attention_with_weights(q, k, v, mask)
        assert not torch.isnan(w).any()
        assert (w[..., 2, :] == 0).all()
        torch.testing.assert_close(w[..., keep, :].sum(-1), torch.ones(*q.shape[:-2], 4), atol=1e-6, rtol=0)
        torch.testing.assert_close(out_w, out, atol=0, rtol=0)


def test_fully_masked_row_per_batch(fast):
    # Batch 0 has an empty row 1, batch 1 has none: only that one row is zero.
    q, k, v = make_qkv("3d")
    mask = random_mask((2, 5, 7))
    mask[0, 1] = False
    out = attention(q, k, v, mask, fast=fast)
    assert (out[0, 1] == 0).all()
    assert not torch.isnan(out).any()
    ref1 = F.scaled_dot_product_attention(q[1:], k[1:], v[1:], attn_mask=mask[1:])
    torch.testing.assert_close(out[1:], ref1, atol=ATOL, rtol=0)
    rows = torch.tensor([0, 2, 3, 4])
    ref0 = F.scaled_dot_product_attention(q[:1, rows], k[:1], v[:1], attn_mask=mask[:1, rows])
    torch.testing.assert_close(out[:1, rows], ref0, atol=ATOL, rtol=0)


@pytest.mark.parametrize("with_bias", [False, True])
def test_fully_masked_row_gradients_are_finite(fast, with_bias):
    q, k, v = make_qkv("4d", dtype=torch.float64)
    mask = _mask_with_empty_row()
    keep = torch.tensor([0, 1, 3, 4])
    bias = torch.randn(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(8)) if with_bias else None
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = attention(*leaves, mask, bias=bias, fast=fast)
    weight = torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)
    (out * weight).sum().backward()
    for t in leaves:
        assert torch.isfinite(t.grad).all()
    assert (leaves[0].grad[..., 2, :] == 0).all()  # the empty row's query does not influence anything
    # Reference: PyTorch on the rows that have keys (the empty row contributes nothing).
    ref_leaves = [t.clone().requires_grad_() for t in (q[..., keep, :], k, v)]
    additive = torch.zeros(4, 7, dtype=torch.float64).masked_fill(~mask[keep], -math.inf)
    if with_bias:
        additive = additive + bias[keep]
    ref = F.scaled_dot_product_attention(*ref_leaves, attn_mask=additive)
    (ref * weight[..., keep, :]).sum().backward()
    torch.testing.assert_close(leaves[0].grad[..., keep, :], ref_leaves[0].grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(leaves[1].grad, ref_leaves[1].grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(leaves[2].grad, ref_leaves[2].grad, atol=1e-10, rtol=0)


def test_causal_mask_matches_is_causal(fast):
    from transformer import causal_mask

    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, 6, 8, generator=g) for _ in range(3))
    ours = attention(q, k, v, causal_mask(6), fast=fast)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
