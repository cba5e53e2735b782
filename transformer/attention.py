"""Scaled dot-product attention (chapter 4).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Each query row is compared with every key (a dot product), the scores are
divided by ``sqrt(d_k)`` so that their spread does not grow with the size of
the vectors, a softmax turns each row into weights that sum to 1, and the
output of a query is the weighted sum of the values.

Masks are boolean, ``True`` = may attend. A query row whose keys are *all*
masked has nothing to attend to: its weights are all zero and its output is
the zero vector (never NaN, never a uniform average).

:func:`scaled_dot_product_attention` and :func:`attention_with_weights` check their arguments, then run the
equation, :func:`attend`, which the package's own layers call directly once they have checked their inputs.
The options of later chapters live in the layers that use them: the relative bias (chapter 3) and dropout on
the weights (chapter 5) in :class:`~transformer.multihead.MultiHeadAttention`, PyTorch's fused kernel (chapter
12) in :func:`~transformer.flash.fused_attention`.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_attention_inputs
from .masks import softmax_over_allowed


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d_k), masked) v`` (chapter 4).

    Shapes: ``q (batch, [heads,] T_q, d_k)``, ``k (batch, [heads,] T_k, d_k)``,
    ``v (batch, [heads,] T_k, d_v)``; ``mask`` bool, broadcastable to
    ``(batch, [heads,] T_q, T_k)``, True = may attend.

    Returns the output ``(batch, [heads,] T_q, d_v)``; :func:`attention_with_weights` returns the weights too.
    """
    require_attention_inputs(q, k, v, mask)
    return attend(q, k, v, mask)[0]


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None):
    """The equation, on arguments already checked: the output ``(..., T_q, d_v)`` and the weights
    ``(..., T_q, T_k)`` (shapes as in :func:`scaled_dot_product_attention`)."""
    weights = softmax_over_allowed(attention_scores(q, k), mask)  # a query with no allowed key gets all zeros
    return weights @ v, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Every query against every key, ``q k^T / sqrt(d_k)``: ``(..., T_q, T_k)``, on arguments already checked."""
    scale = 1.0 / math.sqrt(q.shape[-1])  # 1 / sqrt(d_k)
    # Scaling q before the product equals scaling the scores, and touches T_q*d_k numbers, not T_q*T_k.
    return (q * scale) @ k.transpose(-2, -1)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)


def attention_with_weights(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`scaled_dot_product_attention` and its weights: ``(output (batch, [heads,] T_q, d_v),
    weights (batch, [heads,] T_q, T_k))``; row ``i`` of the weights says how query ``i`` shares out its attention."""
    require_attention_inputs(q, k, v, mask)
    return attend(q, k, v, mask)
