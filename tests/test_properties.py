"""Property-based tests (hypothesis): shapes, masks and broadcasting, over many random cases."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer as T
from transformer.flash import fused_attention

settings.register_profile("book", max_examples=40, deadline=None, derandomize=True)
settings.load_profile("book")

sizes = st.integers(min_value=1, max_value=6)


def seeded(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@given(batch=sizes, heads=st.one_of(st.none(), sizes), t_q=sizes, t_k=sizes, d=sizes, d_v=sizes,
       seed=st.integers(0, 10_000), mask_kind=st.sampled_from(["none", "full", "row", "key", "query"]))
def test_attention_equals_torch_for_any_shape_and_broadcast_mask(batch, heads, t_q, t_k, d, d_v, seed, mask_kind):
    lead = (batch,) if heads is None else (batch, heads)
    q, k, v = seeded(seed, *lead, t_q, d), seeded(seed + 1, *lead, t_k, d), seeded(seed + 2, *lead, t_k, d_v)
    g = torch.Generator().manual_seed(seed + 3)
    shapes = {"none": None, "full": (*lead, t_q, t_k), "row": (t_q, t_k), "key": (batch,) + (1,) * (len(lead) - 1)
              + (1, t_k), "query": (t_q, 1)}
    mask = None if shapes[mask_kind] is None else torch.rand(shapes[mask_kind], generator=g) > 0.3
    out, w = T.attention_with_weights(q, k, v, mask)
    assert out.shape == (*lead, t_q, d_v) and w.shape == (*lead, t_q, t_k)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    fast = fused_attention(q, k, v, mask)
    torch.testing.assert_close(fast, out)
    if mask is None:
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=w.dtype))
        return
    full = mask.expand(*lead, t_q, t_k)
    empty = ~full.any(-1)  # (..., T_q): queries with no key
    torch.testing.assert_close(w.sum(-1), (~empty).to(w.dtype))  # rows sum to 1, or to 0 when empty
    assert (w[~full.expand_as(w)] == 0).all()  # blocked keys get exactly zero weight
    assert (out[empty] == 0).all()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=full | empty[..., None])
    torch.testing.assert_close(out[~empty], ref[~empty])


@given(batch=sizes, seq=sizes, heads=sizes, d_h=sizes)
def test_split_then_merge_heads_is_the_identity(batch, seq, heads, d_h):
    x = seeded(0, batch, seq, heads * d_h)
    parts = T.split_heads(x, heads)
    assert parts.shape == (batch, heads, seq, d_h)
    torch.testing.assert_close(parts[:, 1 % heads], x[..., (1 % heads) * d_h:(1 % heads + 1) * d_h])
    torch.testing.assert_close(T.merge_heads(parts), x)


@given(shape=st.lists(sizes, min_size=1, max_size=3), d=st.integers(2, 16), seed=st.integers(0, 1000))
def test_layer_norm_equals_torch_on_any_leading_shape(shape, d, seed):
    x = seeded(seed, *shape, d).float() * 3 + 1
    ours, theirs = T.LayerNorm(d), torch.nn.LayerNorm(d)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)


@given(n=st.integers(1, 40))
def test_causal_mask_is_the_lower_triangle(n):
    m = T.causal_mask(n)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    assert torch.equal(m, j <= i)


@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4), pad=st.integers(0, 3))
def test_padding_mask_marks_exactly_the_real_tokens(lengths, pad):
    width = max(lengths) + 1
    ids = torch.full((len(lengths), width), pad)
    for row, n in enumerate(lengths):
        ids[row, :n] = pad + 1
    m = T.padding_mask(ids, pad)
    assert m.shape == (len(lengths), 1, width)
    assert m.sum(-1).squeeze(-1).tolist() == lengths


@given(t=st.integers(0, 50), i=st.integers(0, 50), shift=st.integers(0, 50), d=st.sampled_from([2, 4, 8]),
       seed=st.integers(0, 1000))
def test_rope_score_depends_only_on_the_distance(t, i, shift, d, seed):
    q, k = seeded(seed, d), seeded(seed + 1, d)

    def score(a, b):
        x = torch.stack([q, k])[:, None, :]  # (2, 1, d): one vector each at positions a and b
        rq = T.apply_rope(x[0:1], torch.tensor([a]))
        rk = T.apply_rope(x[1:2], torch.tensor([b]))
        return (rq * rk).sum()

    torch.testing.assert_close(score(t, i), score(t + shift, i + shift))


@given(c=st.integers(-20, 20), t=st.integers(0, 30), d=st.sampled_from([2, 4, 6, 10]))
def test_shift_matrix_moves_every_position(c, t, d):
    n = t + abs(c) + 1
    table = T.sinusoidal_encoding(n + abs(c), d).double()
    if t + c < 0:
        return
    torch.testing.assert_close(T.shift_matrix(c, d).double() @ table[t], table[t + c], atol=1e-5, rtol=1e-5)
