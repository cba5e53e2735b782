"""Attention in tiles with an online softmax (chapter 12).

The teaching form of chapter 4 builds the whole ``T_q x T_k`` matrix of scores, then its softmax: memory that
grows with the square of the sequence length. The softmax of a row can be computed in one pass instead, block
by block of keys, keeping for every query only its running maximum ``m``, its running sum ``l`` of
``exp(s - m)`` and its running weighted sum of values (Milakov & Gimelshein, 2018). When a later block raises the
maximum from ``m`` to ``m'``, what was summed so far is multiplied by ``exp(m - m')``, which rescales it as if
``m'`` had been used all along. Tiling the queries too, so that only one ``block x block`` tile of scores
exists at a time, is FlashAttention's idea (Dao et al., 2022): memory grows linearly with the length.

The backward pass recomputes each tile from ``q``, ``k`` and the saved
log-sum-exp of each row rather than storing the weights.

Masks are boolean, ``True`` = may attend; a query row with no allowed key gets
the zero vector and zero gradients, as in :func:`~transformer.attention.scaled_dot_product_attention`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import require_attention_inputs, require_positive_int
from .masks import empty_rows

NEG_INF = float("-inf")


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *,
                    block_size: int = 256, scale: float | None = None) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d_k), masked) v``, computed ``block_size`` queries by ``block_size`` keys at a time.

    Shapes as in :func:`~transformer.attention.scaled_dot_product_attention`: ``q (batch, [heads,] T_q, d_k)``,
    ``k (batch, [heads,] T_k, d_k)``, ``v (batch, [heads,] T_k, d_v)``; ``mask`` bool, broadcastable to
    ``(batch, [heads,] T_q, T_k)``, True = may attend. Returns ``(batch, [heads,] T_q, d_v)``, equal to it
    (a row with no allowed key gives zeros), with gradients; no ``T_q x T_k`` matrix is ever held (chapter 12).
    """
    require_attention_inputs(q, k, v, mask)
    require_positive_int("block_size", block_size)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if mask is not None:
        mask = mask.expand(*q.shape[:-1], k.shape[-2])  # (..., T_q, T_k): a view, nothing is copied
    return _FlashAttention.apply(q, k, v, mask, scale, block_size)


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                    bias: torch.Tensor | None = None, dropout_p: float = 0.0) -> torch.Tensor:
    """Chapter 4's attention through PyTorch's fused kernels, ``F.scaled_dot_product_attention``, on arguments already
    checked: the fast path of :class:`~transformer.multihead.MultiHeadAttention` (``fast=True``). Shapes as in
    :func:`flash_attention`; ``bias`` is added to the scores (the relative bias of chapter 3), ``dropout_p`` drops
    weights (chapter 5). A query row with no allowed key sees every key inside the kernel, and its output is set to
    zero afterwards, as in :func:`~transformer.masks.masked_softmax`."""
    empty = None if mask is None else empty_rows(mask)[..., None]  # (..., T_q, 1)
    if empty is not None and bool(empty.any()):
        mask = mask | empty
    else:
        empty = None
    attn_mask = mask
    if bias is not None:
        attn_mask = bias if mask is None else bias.masked_fill(~mask, NEG_INF)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)  # (..., T_q, d_v)
    return out if empty is None else out.masked_fill(empty, 0.0)


def online_softmax_step(m: torch.Tensor, total: torch.Tensor, s: torch.Tensor, in_place: bool = False):
    """One tile of the online softmax (chapter 12): ``m (..., 1)``, the running maximum of the scores read so far,
    ``total (..., 1)``, the running sum of their ``exp(s - m)``, and the tile's scores ``s (..., block)``.

    Returns the new maximum ``m'``, the new sum ``total exp(m - m') + sum exp(s - m')``, the factor
    ``exp(m - m')`` that rescales what was summed so far, and ``p = exp(s - m') (..., block)``. A row with no
    allowed key yet (``m' = -inf``) is shifted by 0, so that its ``p`` are 0 rather than NaN. ``in_place``: ``p``
    is written over ``s`` (the kernel's own tile of scores: no second tile in memory).
    """
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # -inf while a row has had no allowed key
    shift = m_new.masked_fill(m_new == NEG_INF, 0.0)  # ... and then any finite shift will do
    p = s.sub_(shift).exp_() if in_place else torch.exp(s - shift)  # (..., block): exp(s - m'), 0 where blocked
    rescale = torch.exp(m - shift)  # (..., 1): what was summed with m now counts with m'
    return m_new, total * rescale + p.sum(dim=-1, keepdim=True), rescale, p


def online_steps(scores: torch.Tensor, block: int, read: int) -> list[dict]:
    """The online softmax of one row ``scores[:read]`` ``(T_k,)`` in tiles of ``block`` keys, step by step, as
    chapter 12's explorer and exercise show it: after each tile, its keys ``(start, stop)``, the running maximum
    ``m``, the factor ``exp(m_old - m)`` the old sum was multiplied by, and the running sum ``l`` of ``exp(s - m)``."""
    m, total, steps = scores.new_full((1,), NEG_INF), scores.new_zeros(1), []
    for start in range(0, read, block):
        tile = scores[start:min(start + block, read)]  # (block,) or shorter at the end
        m, total, rescale, _ = online_softmax_step(m, total, tile)  # rescale is 0 on the first tile
        steps.append({"keys": (start, start + len(tile)), "m": float(m), "rescale": float(rescale), "l": float(total)})
    return steps


def _forward(q, k, v, mask, scale: float, block: int):
    """Output ``(..., T_q, d_v)`` and the log-sum-exp of every row of scores ``(..., T_q)`` (+inf if empty)."""
    out = q.new_empty(*q.shape[:-1], v.shape[-1])  # (..., T_q, d_v)
    lse = q.new_empty(q.shape[:-1])  # (..., T_q)
    for rows in _tiles(q.shape[-2], block):
        qi = q[..., rows, :] * scale  # (..., bq, d_k)
        m = qi.new_full((*qi.shape[:-1], 1), NEG_INF)  # (..., bq, 1): the running maximum
        total = qi.new_zeros((*qi.shape[:-1], 1))  # (..., bq, 1): the running sum of exp(s - m)
        acc = qi.new_zeros((*qi.shape[:-1], v.shape[-1]))  # (..., bq, d_v): the running sum of exp(s - m) v
        for cols in _tiles(k.shape[-2], block):
            s = _scores(qi, k[..., cols, :], mask, rows, cols)  # (..., bq, bk)
            m, total, rescale, p = online_softmax_step(m, total, s, in_place=True)  # p: (..., bq, bk), exp(s - m)
            acc = acc * rescale + p @ v[..., cols, :]  # (..., bq, bk) @ (..., bk, d_v) -> (..., bq, d_v)
            del s, p  # the tile is freed before the next one is made: one tile of scores at a time
        empty = total == 0  # (..., bq, 1): rows with no allowed key; acc is 0 there
        out[..., rows, :] = acc / total.masked_fill(empty, 1.0)
        lse[..., rows] = (m + torch.log(total)).masked_fill(empty, math.inf).squeeze(-1)
    return out, lse


def _backward(q, k, v, mask, out, lse, d_out, scale: float, block: int):
    """Gradients of ``q, k, v``, each tile's weights recomputed as ``exp(s - lse)``."""
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (d_out * out).sum(dim=-1, keepdim=True)  # (..., T_q, 1): sum_j P_ij dP_ij, row by row
    for rows in _tiles(q.shape[-2], block):
        qi, d_oi = q[..., rows, :], d_out[..., rows, :]  # (..., bq, d_k), (..., bq, d_v)
        lse_i = lse[..., rows, None]  # (..., bq, 1)
        for cols in _tiles(k.shape[-2], block):
            kj, vj = k[..., cols, :], v[..., cols, :]  # (..., bk, d_k), (..., bk, d_v)
            p = _scores(qi * scale, kj, mask, rows, cols).sub_(lse_i).exp_()  # (..., bq, bk): the weights
            dv[..., cols, :] += p.transpose(-2, -1) @ d_oi  # (..., bk, bq) @ (..., bq, d_v)
            dp = d_oi @ vj.transpose(-2, -1)  # (..., bq, d_v) @ (..., d_v, bk) -> (..., bq, bk)
            ds = dp.sub_(delta[..., rows, :]).mul_(p).mul_(scale)  # the softmax's backward, times the scale, in dp
            dq[..., rows, :] += ds @ kj  # (..., bq, bk) @ (..., bk, d_k)
            dk[..., cols, :] += ds.transpose(-2, -1) @ qi  # (..., bk, bq) @ (..., bq, d_k)
            del p, dp, ds  # freed before the next tile's are made: two tiles at a time
    return dq, dk, dv


class _FlashAttention(torch.autograd.Function):
    """The tiled forward; a backward that recomputes the tiles instead of storing the ``T_q x T_k`` weights."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, block):
        out, lse = _forward(q, k, v, mask, scale, block)
        ctx.save_for_backward(q, k, v, mask, out, lse)
        ctx.scale, ctx.block = scale, block
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, mask, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, mask, out, lse, d_out.contiguous(), ctx.scale, ctx.block)
        return dq, dk, dv, None, None, None


def _tiles(n: int, block: int):
    """``slice(0, block), slice(block, 2 block), ...`` covering ``0 .. n``; the last may be shorter."""
    return [slice(i, min(i + block, n)) for i in range(0, n, block)]


def _scores(qi, kj, mask, rows, cols):
    """One tile of scores ``(..., bq, bk)``, blocked keys at ``-inf``; ``qi`` is already scaled."""
    s = qi @ kj.transpose(-2, -1)  # (..., bq, d_k) @ (..., d_k, bk) -> (..., bq, bk)
    if mask is not None:
        s.masked_fill_(~mask[..., rows, cols], NEG_INF)
    return s
