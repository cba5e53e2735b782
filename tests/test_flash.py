"""Attention in tiles with an online softmax (chapter 12) equals attention all at once: PyTorch's fused
``F.scaled_dot_product_attention`` and the package's own, in float64 (1e-12) and float32 (1e-5), with masks,
fully masked rows, block sizes that do and do not divide the lengths, and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import transformer as T

TOL = {torch.float64: 1e-12, torch.float32: 1e-5}


def qkv(shape_q, t_k, d_v=None, dtype=torch.float64, seed=0, grad=False):
    g = torch.Generator().manual_seed(seed)
    *lead, t_q, d_k = shape_q
    q = torch.randn(*lead, t_q, d_k, generator=g, dtype=dtype)
    k = torch.randn(*lead, t_k, d_k, generator=g, dtype=dtype)
    v = torch.randn(*lead, t_k, d_v or d_k, generator=g, dtype=dtype)
    return tuple(x.requires_grad_(grad) for x in (q, k, v))


def close(a, b, tol):
    assert a.shape == b.shape
    assert (a - b).abs().max().item() <= tol


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("block_size", [1, 4, 5, 16, 64])
def test_equals_torch_fused_attention_without_a_mask(dtype, block_size):
    q, k, v = qkv((2, 3, 16, 8), 16, dtype=dtype)
    out = T.flash_attention(q, k, v, block_size=block_size)
    close(out, F.scaled_dot_product_attention(q, k, v), TOL[dtype])
    close(out, T.scaled_dot_product_attention(q, k, v), TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("block_size", [3, 8, 13])
def test_equals_with_masks_of_every_broadcast_shape_and_unequal_lengths(dtype, block_size):
    q, k, v = qkv((2, 3, 11, 8), 19, d_v=5, dtype=dtype, seed=1)
    g = torch.Generator().manual_seed(2)
    for mask in (torch.rand(2, 3, 11, 19, generator=g) > 0.3, torch.rand(2, 1, 11, 19, generator=g) > 0.3,
                 torch.rand(19, generator=g).gt(0.3).expand(11, 19), torch.ones(11, 19, dtype=torch.bool).tril(8)):
        mask = mask.clone()
        mask[..., :, 0] = True  # no fully masked row: PyTorch's kernel would give NaN there
        out = T.flash_attention(q, k, v, mask, block_size=block_size)
        close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), TOL[dtype])
        close(out, T.scaled_dot_product_attention(q, k, v, mask), TOL[dtype])


def test_three_dimensional_inputs_and_a_causal_mask():
    q, k, v = qkv((4, 23, 6), 23, seed=3)
    causal = T.causal_mask(23)
    out = T.flash_attention(q, k, v, causal, block_size=6)
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), 1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_fully_masked_row_gives_zeros_and_no_gradient_as_the_package_does(dtype):
    q, k, v = qkv((2, 2, 9, 4), 10, dtype=dtype, seed=4, grad=True)
    mask = torch.rand(2, 2, 9, 10, generator=torch.Generator().manual_seed(5)) > 0.5
    mask[0, 1, 3] = False  # one row with no allowed key ...
    mask[1, :, 7] = False  # ... and one in every head
    mask[..., 8, :] = False  # a row fully masked everywhere
    assert T.fully_masked_rows(mask).sum() == 2 + 2 + 4 - 1
    out = T.flash_attention(q, k, v, mask, block_size=4)
    ref = T.scaled_dot_product_attention(q, k, v, mask)
    assert not out.isnan().any()
    assert out[0, 1, 3].abs().max() == 0 and out[1, :, 7].abs().max() == 0 and out[..., 8, :].abs().max() == 0
    close(out, ref, TOL[dtype])
    d_out = torch.randn_like(out)
    ours = torch.autograd.grad(out, (q, k, v), d_out)
    theirs = torch.autograd.grad(ref, (q, k, v), d_out)
    for a, b in zip(ours, theirs):
        close(a, b, 10 * TOL[dtype])
    assert ours[0][0, 1, 3].abs().max() == 0  # the empty row's query gets no gradient


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("block_size", [4, 7, 32])
def test_gradients_equal_those_of_attention_all_at_once(dtype, block_size):
    q, k, v = qkv((2, 3, 14, 8), 17, d_v=6, dtype=dtype, seed=6, grad=True)
    mask = torch.rand(14, 17, generator=torch.Generator().manual_seed(7)) > 0.4
    mask[:, 2] = True
    d_out = torch.randn(2, 3, 14, 6, generator=torch.Generator().manual_seed(8), dtype=dtype)
    ours = torch.autograd.grad(T.flash_attention(q, k, v, mask, block_size=block_size), (q, k, v), d_out)
    theirs = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v), d_out)
    for a, b in zip(ours, theirs):
        close(a, b, 10 * TOL[dtype])


def test_gradcheck_in_float64():
    q, k, v = qkv((1, 2, 6, 3), 7, seed=9, grad=True)
    mask = torch.rand(6, 7, generator=torch.Generator().manual_seed(10)) > 0.3
    assert torch.autograd.gradcheck(lambda q, k, v: T.flash_attention(q, k, v, mask, block_size=4), (q, k, v))


def test_no_tensor_kept_for_the_backward_pass_grows_like_t_squared():
    """The backward recomputes the tiles: what autograd keeps is q, k, v, the output and one number per row."""
    t, block = 96, 16
    q, k, v = qkv((1, 2, t, 8), t, seed=11, grad=True)
    sizes = []
    with torch.autograd.graph.saved_tensors_hooks(lambda x: sizes.append(x.numel()) or x, lambda x: x):
        T.flash_attention(q, k, v, T.causal_mask(t), block_size=block).sum().backward()
    assert max(sizes) <= 2 * t * t  # the mask (a view of T x T bools) is the largest; no (2, T, T) float tensor
    float_sizes = []
    with torch.autograd.graph.saved_tensors_hooks(lambda x: float_sizes.append((x.dtype, x.numel())) or x,
                                                  lambda x: x):
        T.flash_attention(q, k, v, block_size=block).sum().backward()
    assert max(n for _, n in float_sizes) == 2 * t * 8  # q, k, v, out; not 2 * t * t
    with torch.autograd.graph.saved_tensors_hooks(lambda x: float_sizes.append((x.dtype, x.numel())) or x,
                                                  lambda x: x):
        T.scaled_dot_product_attention(q, k, v).sum().backward()
    assert max(n for _, n in float_sizes) == 2 * t * t  # the teaching form keeps the weights


def most_tiles_alive(fn, tile_bytes: int) -> int:
    """The most blocks of exactly ``tile_bytes`` allocated and not yet freed at one time while ``fn()`` runs."""
    from benchmarks.modern import allocations

    alive = most = 0
    for nbytes in allocations(fn):
        if abs(nbytes) == tile_bytes:
            alive += 1 if nbytes > 0 else -1
            most = max(most, alive)
    return most


def test_one_tile_of_scores_at_a_time():
    """The forward makes a tile of scores per block of keys and turns it into its weights in place: each tile is
    freed before the next is made, so one ``(heads, block, block)`` tile is alive at a time (two were, when the
    last tile's weights lived on while the next tile was computed). The backward holds two: a tile's weights, and
    the gradient of its weights turned into that of its scores in place (five were)."""
    heads, t, d, block = 2, 512, 16, 128  # a tile (2, 128, 128) is 128 KiB; nothing else here has that size
    q, k, v = qkv((1, heads, t, d), t, dtype=torch.float32, seed=5, grad=True)
    tile = heads * block * block * 4
    assert {x.numel() * 4 for x in (q, k, v)} == {heads * t * d * 4} != {tile}
    with torch.no_grad():
        assert most_tiles_alive(lambda: T.flash_attention(q, k, v, block_size=block), tile) == 1
    out = T.flash_attention(q, k, v, block_size=block)
    assert most_tiles_alive(lambda: out.sum().backward(), tile) == 2


def test_the_online_softmax_is_the_softmax():
    """Rescaling by exp(m - m') as the maximum grows, block by block, gives softmax(s) v exactly."""
    s = torch.tensor([[1.0, 3.0, -2.0, 7.0, 0.5]], dtype=torch.float64)  # one query, five keys
    v = torch.arange(10.0, dtype=torch.float64).reshape(5, 2)
    q, k = s[None], torch.eye(5, dtype=torch.float64)[None]  # (1, 1, 5), (1, 5, 5): q k^T = s, with scale 1
    out = T.flash_attention(q, k, v[None], block_size=2, scale=1.0)
    close(out[0], s.softmax(-1) @ v, 1e-15)


def test_a_row_whose_first_keys_are_masked_and_whose_scores_are_all_very_negative():
    """The running maximum stays -inf until a row meets its first allowed key; had it become 0, scores near
    -7000 would all give exp(s - 0) = 0 and the row would come out as zeros instead of the mean of its values."""
    q = torch.full((1, 4, 8), 50.0, dtype=torch.float64)
    k = torch.full((1, 12, 8), -50.0, dtype=torch.float64)  # every score -50 * 50 * 8 / sqrt(8), about -7071
    v = torch.randn(1, 12, 3, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
    mask = torch.ones(4, 12, dtype=torch.bool)
    mask[:, :4] = False  # the first tile of keys is masked for every query
    out = T.flash_attention(q, k, v, mask, block_size=4)
    close(out, v[:, 4:].mean(dim=1, keepdim=True).expand(1, 4, 3), 1e-12)
    close(out, T.scaled_dot_product_attention(q, k, v, mask), 1e-12)


def test_bad_inputs_are_refused_with_the_argument_named():
    q, k, v = qkv((1, 4, 8), 5)
    with pytest.raises(ValueError, match="k: expected d_k=8"):
        T.flash_attention(q, k[..., :4], v)
    with pytest.raises(ValueError, match="v: expected one value per key"):
        T.flash_attention(q, k, v[:, :3])
    with pytest.raises(ValueError, match="mask: expected a shape broadcastable"):
        T.flash_attention(q, k, v, torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="block_size: expected a positive int, got float 2.0"):
        T.flash_attention(q, k, v, block_size=2.0)
    with pytest.raises(TypeError, match="k, v: expected the dtype of q"):
        T.flash_attention(q, k.float(), v)
