"""Scaled dot-product attention (chapter 4).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Each query row is compared with every key (a dot product), the scores are
divided by ``sqrt(d_k)`` so that their spread does not grow with the size of
the vectors, a softmax turns each row into weights that sum to 1, and the
output of a query is the weighted sum of the values.

Masks are boolean, ``True`` = may attend. A query row whose keys are *all*
masked has nothing to attend to: its weights are all zero and its output is
the zero vector (never NaN, never a uniform average). Pass
``empty_rows="raise"`` to turn such a row into an error instead.

:func:`scaled_dot_product_attention` checks its arguments, then runs the
equation, :func:`_scaled_dot_product_attention`, which the package's own layers
call directly once they have checked their inputs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import require_attention_inputs, require_choice
from .masks import _fully_masked_rows, _masked_softmax

EMPTY_ROW_POLICIES = ("zero", "raise")


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    scale: float | None = None,
    dropout_p: float = 0.0,
    return_weights: bool = False,
    fast: bool = False,
    empty_rows: str = "zero",
):
    """``softmax(q k^T / sqrt(d_k) + bias, masked) v`` (chapter 4).

    Shapes: ``q (batch, [heads,] T_q, d_k)``, ``k (batch, [heads,] T_k, d_k)``,
    ``v (batch, [heads,] T_k, d_v)``; ``mask`` bool, broadcastable to
    ``(batch, [heads,] T_q, T_k)``, True = may attend; ``bias`` float, added to
    the scores (the relative-position bias of chapter 3).

    Returns the output ``(batch, [heads,] T_q, d_v)``, or ``(output, weights)``
    with ``weights (batch, [heads,] T_q, T_k)`` when ``return_weights=True``.
    ``fast=True`` computes the same thing with ``F.scaled_dot_product_attention``.
    """
    require_attention_inputs(q, k, v, mask, bias)
    _check_empty_rows(mask, empty_rows)
    return _scaled_dot_product_attention(q, k, v, mask, bias, scale, dropout_p, return_weights, fast)


def _scaled_dot_product_attention(q, k, v, mask=None, bias=None, scale=None, dropout_p=0.0,
                                  return_weights=False, fast=False):
    """The equation, on arguments already checked (shapes as in :func:`scaled_dot_product_attention`)."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])  # 1 / sqrt(d_k)
    if fast and not return_weights:  # the same numbers from PyTorch's fused kernel: see _fused below
        return _fused(q, k, v, mask, bias, scale, dropout_p)
    # Scaling q before the product equals scaling the scores, and touches T_q*d_k numbers, not T_q*T_k.
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if bias is not None:
        scores = scores + bias
    weights = _masked_softmax(scores, mask)  # blocked keys get 0; a query with no allowed key gets all zeros
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    out = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return (out, weights) if return_weights else out


def _fused(q, k, v, mask, bias, scale: float, dropout_p: float) -> torch.Tensor:
    """The fast path: ``F.scaled_dot_product_attention``.

    As in :func:`~transformer.masks.masked_softmax`, a query row with no allowed key sees
    every key inside the kernel, and its output is set to zero afterwards.
    """
    empty = None if mask is None else _fully_masked_rows(mask)[..., None]  # (..., T_q, 1)
    if empty is not None and bool(empty.any()):
        mask = mask | empty
    else:
        empty = None
    attn_mask = mask
    if bias is not None:
        attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=scale)
    return out if empty is None else out.masked_fill(empty, 0.0)


# ----------------------------------------------------------------------------- argument checks

def _check_empty_rows(mask, empty_rows: str) -> None:
    """``empty_rows`` is a known policy; with ``"raise"``, every query row of ``mask`` allows some key."""
    require_choice("empty_rows", empty_rows, EMPTY_ROW_POLICIES)
    if mask is None or empty_rows != "raise":
        return
    empty = _fully_masked_rows(mask)
    if bool(empty.any()):
        raise ValueError(
            "mask: expected every query row to allow at least one key, got "
            f"{int(empty.sum())} fully masked row(s); pass empty_rows='zero' to give them a zero output"
        )
