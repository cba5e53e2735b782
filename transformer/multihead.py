"""Multi-head attention, self and cross (chapters 5 and 8).

``h`` heads each attend in a space of size ``d_h = d_model / h``, with their
own slices of ``W^Q``, ``W^K`` and ``W^V``; their outputs are concatenated and
projected by ``W^O``. The parameter count equals that of one head of width
``d_model``: the heads split the same matrices, they do not add to them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    require_divisible,
    require_float,
    require_mask,
    require_positive_int,
    require_rank,
    require_tensor,
    shape_str,
)
from .attention import scaled_dot_product_attention
from .positional import RelativePositionBias, RotaryEmbedding


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(batch, seq, d_model) -> (batch, heads, seq, d_h)`` with ``d_h = d_model / heads``."""
    require_rank("x", x, (3,), "(batch, seq, d_model)")
    batch, seq, d_model = x.shape
    d_h = require_divisible(d_model, n_heads)
    return x.view(batch, seq, n_heads, d_h).transpose(1, 2)  # (batch, heads, seq, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(batch, heads, seq, d_h) -> (batch, seq, heads * d_h)``: concatenate the heads."""
    require_rank("x", x, (4,), "(batch, heads, seq, d_h)")
    batch, heads, seq, d_h = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * d_h)  # (batch, seq, d_model)


class MultiHeadAttention(nn.Module):
    """``forward(x, memory=None, mask=None)``: ``(batch, T_q, d_model) -> (batch, T_q, d_model)``.

    Self-attention when ``memory`` is None; cross-attention (queries from ``x``,
    keys and values from ``memory (batch, T_k, d_model)``) otherwise.
    ``mask`` is bool, True = may attend, broadcastable to ``(batch, T_q, T_k)``
    or ``(batch, heads, T_q, T_k)``. ``rope`` and ``relative_bias`` apply to
    self-attention only.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 rope: RotaryEmbedding | None = None, relative_bias: RelativePositionBias | None = None,
                 fast: bool = False):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("n_heads", n_heads)
        self.d_h = require_divisible(d_model, n_heads)
        self.d_model, self.n_heads, self.dropout, self.fast = d_model, n_heads, dropout, fast
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.rope, self.relative_bias = rope, relative_bias

    def _check(self, x, memory, mask):
        require_float("x", x)
        require_rank("x", x, (3,), "(batch, T_q, d_model)")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected d_model={self.d_model} in the last dimension, got shape {shape_str(x)}")
        if memory is not None:
            require_float("memory", memory)
            require_rank("memory", memory, (3,), "(batch, T_k, d_model)")
            if memory.shape[-1] != self.d_model or memory.shape[0] != x.shape[0]:
                raise ValueError(
                    f"memory: expected (batch={x.shape[0]}, T_k, d_model={self.d_model}), got {shape_str(memory)}"
                )
        t_k = x.shape[1] if memory is None else memory.shape[1]
        if mask is not None:
            require_tensor("mask", mask)
            if mask.dim() == 4:
                require_mask("mask", mask, (x.shape[0], self.n_heads, x.shape[1], t_k), "(batch, heads, T_q, T_k)")
            else:
                require_mask("mask", mask, (x.shape[0], x.shape[1], t_k), "(batch, T_q, T_k)")

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                return_weights: bool = False):
        self._check(x, memory, mask)
        source = x if memory is None else memory
        if not (self.fast and memory is None):
            q, k, v = self.w_q(x), self.w_k(source), self.w_v(source)
        else:  # the fast path: the same three projections as one matrix product
            q, k, v = self._fused_qkv(x)
        q = split_heads(q, self.n_heads)  # (batch, T_q, d_model) -> (batch, heads, T_q, d_h)
        k = split_heads(k, self.n_heads)  # (batch, T_k, d_model) -> (batch, heads, T_k, d_h)
        v = split_heads(v, self.n_heads)  # (batch, T_k, d_model) -> (batch, heads, T_k, d_h)
        bias = None
        if memory is None and self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        if memory is None and self.relative_bias is not None:
            bias = self.relative_bias(q.shape[2], k.shape[2])  # (heads, T_q, T_k)
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]  # (batch, 1, T_q, T_k): the same mask for every head
        result = scaled_dot_product_attention(
            q, k, v, mask, bias=bias, dropout_p=self.dropout if self.training else 0.0,
            return_weights=return_weights, fast=self.fast,
        )
        out, weights = result if return_weights else (result, None)
        out = self.w_o(merge_heads(out))  # (batch, T_q, d_model)
        return (out, weights) if return_weights else out

    def _fused_qkv(self, x: torch.Tensor):
        """``x W^Q, x W^K, x W^V`` from one product with the stacked ``(3 d_model, d_model)`` matrix."""
        weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])  # (3 d_model, d_model)
        bias = None if self.w_q.bias is None else torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        return F.linear(x, weight, bias).chunk(3, dim=-1)  # 3 x (batch, T, d_model)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_h={self.d_h}, fast={self.fast}"
