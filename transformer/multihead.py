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
    require_kv_heads,
    require_last_dim,
    require_mask,
    require_max_len,
    require_positive_int,
    require_rank,
    require_sizes,
)
from .attention import attention_scores
from .flash import fused_attention
from .masks import softmax_over_allowed, window_band
from .norm import RMSNorm
from .positional import RelativePositionBias, RotaryEmbedding


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(batch, seq, d_model) -> (batch, heads, seq, d_h)`` with ``d_h = d_model / heads``."""
    require_positive_int("n_heads", n_heads)
    require_rank("x", x, (3,), "(batch, seq, d_model)")
    require_divisible(x.shape[-1], n_heads)
    return _split_heads(x, n_heads)


def _split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)  # (batch, heads, seq, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(batch, heads, seq, d_h) -> (batch, seq, heads * d_h)``: concatenate the heads."""
    require_rank("x", x, (4,), "(batch, heads, seq, d_h)")
    return concat_heads(x)


def concat_heads(x: torch.Tensor) -> torch.Tensor:
    """:func:`merge_heads` on an ``x`` already checked (the attention layers call it)."""
    batch, heads, seq, d_h = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * d_h)  # (batch, seq, d_model)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``(batch, n_kv_heads, seq, d_h) -> (batch, n_kv_heads * n_rep, seq, d_h)``, each key/value head repeated
    ``n_rep`` times in a row, so that query heads ``g n_rep .. (g + 1) n_rep - 1`` share kv head ``g`` (chapter 12)."""
    require_rank("x", x, (4,), "(batch, n_kv_heads, seq, d_h)")
    require_positive_int("n_rep", n_rep)
    return _repeat_kv(x, n_rep)


def _repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    if n_rep == 1:
        return x
    batch, n_kv, seq, d_h = x.shape
    x = x[:, :, None].expand(batch, n_kv, n_rep, seq, d_h)  # (batch, n_kv_heads, n_rep, seq, d_h), a view
    return x.reshape(batch, n_kv * n_rep, seq, d_h)  # (batch, n_kv_heads * n_rep, seq, d_h)


class MultiHeadAttention(nn.Module):
    """``forward(x, memory=None, mask=None)``: ``(batch, T_q, d_model) -> (batch, T_q, d_model)`` (chapter 5).

    Self-attention when ``memory`` is None; cross-attention (queries from ``x``, keys and values from
    ``memory (batch, T_k, d_model)``, chapter 8) otherwise. ``mask`` is bool, True = may attend, broadcastable
    to ``(batch, T_q, T_k)`` or ``(batch, heads, T_q, T_k)`` (chapter 7). ``dropout`` drops attention weights in
    training; ``bias`` gives the four projections their biases.

    The options of later chapters are keywords, none of them on by default:

    - chapter 3: ``rope`` (a :class:`~transformer.positional.RotaryEmbedding`) or ``relative_bias`` (a
      :class:`~transformer.positional.RelativePositionBias`), for self-attention only;
    - chapter 12: ``n_kv_heads`` gives the keys and values fewer heads than the queries (grouped-query attention,
      :func:`repeat_kv`; 1 is multi-query attention); ``fast=True`` computes the same numbers through PyTorch's
      fused paths (:meth:`_fused_qkv`, :func:`~transformer.flash.fused_attention`); and ``forward``'s ``cache``
      (one layer of a :class:`~transformer.kv_cache.KVCache`) holds the keys and values already seen;
    - chapter 14: ``window`` lets self-attention see only the last ``window`` positions (the band of
      :func:`~transformer.masks.sliding_window_mask`); ``qk_norm=True`` normalises each head's queries and keys
      with an RMSNorm of size ``d_h`` (epsilon ``eps``) before RoPE, as Qwen3 does.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, *,
                 rope: RotaryEmbedding | None = None, relative_bias: RelativePositionBias | None = None,
                 n_kv_heads: int | None = None, fast: bool = False,
                 window: int | None = None, qk_norm: bool = False, eps: float = 1e-6):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("n_heads", n_heads)
        self.d_h = require_divisible(d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.n_rep = require_kv_heads(n_kv_heads, n_heads)  # query heads per key/value head
        self.d_model, self.n_heads, self.dropout, self.fast = d_model, n_heads, dropout, fast
        self.n_kv_heads = n_kv_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_h, bias=bias)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_h, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.rope, self.relative_bias = rope, relative_bias
        _check_positional(rope, relative_bias, self.d_h, n_heads)
        self.window = None if window is None else require_positive_int("window", window)  # chapter 14
        self.q_norm = RMSNorm(self.d_h, eps) if qk_norm else None  # Qwen3 (chapter 14)
        self.k_norm = RMSNorm(self.d_h, eps) if qk_norm else None

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                return_weights: bool = False, cache=None):
        self._check(x, memory, mask, cache)
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]  # (batch, T_q, T_k) -> (batch, 1, T_q, T_k): every head obeys the same mask
        if self._plain(cache):  # chapters 5 and 8: keys and values from x itself, or from the memory
            out, weights = self._multi_head(x, x if memory is None else memory, mask)
        else:  # RoPE or the relative bias (chapter 3), a cache, grouped-query attention or the fused path (chapter 12)
            out, weights = self._with_options(x, memory, mask, return_weights, cache)
        return (out, weights) if return_weights else out

    def _multi_head(self, x: torch.Tensor, source: torch.Tensor, mask: torch.Tensor | None = None):
        """``Concat(head_1, ..., head_h) W^O`` (chapter 5), all heads at once. Queries from ``x (batch, T_q, d_model)``;
        keys and values from ``source (batch, T_k, d_model)``: ``x`` itself in self-attention, the encoder's memory in
        cross-attention (chapter 8). Returns ``(batch, T_q, d_model)`` and the weights ``(batch, heads, T_q, T_k)``."""
        q = _split_heads(self.w_q(x), self.n_heads)  # (batch, T_q, d_model) -> (batch, heads, T_q, d_h)
        k = _split_heads(self.w_k(source), self.n_heads)  # (batch, T_k, d_model) -> (batch, heads, T_k, d_h)
        v = _split_heads(self.w_v(source), self.n_heads)  # (batch, T_k, d_model) -> (batch, heads, T_k, d_h)
        weights = softmax_over_allowed(attention_scores(q, k), mask)  # chapter 4, every head: (batch, heads, T_q, T_k)
        weights = self._dropped(weights)  # dropout on the weights acts in training only
        heads = weights @ v  # (batch, heads, T_q, T_k) @ (batch, heads, T_k, d_h) -> (batch, heads, T_q, d_h)
        return self.w_o(concat_heads(heads)), weights  # (batch, heads, T_q, d_h) -> (batch, T_q, d_model)

    def _plain(self, cache) -> bool:
        """True when no option of a later chapter is on: the layer is then :meth:`_multi_head` and nothing else."""
        later = self.window is not None or self.q_norm is not None  # chapter 14
        return cache is None and self.rope is None and self.relative_bias is None and self.n_rep == 1 and not (
            self.fast or later)

    def _with_options(self, x: torch.Tensor, memory: torch.Tensor | None, mask, return_weights: bool, cache):
        """:meth:`_multi_head` with the options of later chapters: RoPE and the relative bias (chapter 3), the
        key/value cache, grouped-query attention and the fused path (chapter 12)."""
        q, k, v = self._project(x, memory)  # (batch, heads, T_q, d_h), 2 x (batch, n_kv_heads, T_k, d_h)
        if self.q_norm is not None:  # Qwen3's norm of each head's queries and keys (chapter 14)
            q, k = self.q_norm.normalize(q), self.k_norm.normalize(k)
        offset = 0 if cache is None else cache.length  # the position of x's first row (chapter 12)
        q, k = self._positions(q, k, offset, memory)  # RoPE (chapter 3)
        if cache is not None:  # the cached past, then the new positions (chapter 12)
            k, v = cache.append(k, v)  # (batch, n_kv_heads, offset + T_q, d_h) each
        mask = self._windowed(mask, q.shape[2], k.shape[2], offset, memory)  # sliding window (chapter 14)
        bias = self._bias(q, k, offset, memory)  # the relative bias (chapter 3): (heads, T_q, T_k) or None
        out, weights = self._attend(q, k, v, mask, bias, return_weights)  # (batch, heads, T_q, d_h)
        return self.w_o(concat_heads(out)), weights  # (batch, heads, T_q, d_h) -> (batch, T_q, d_model)

    def _project(self, x: torch.Tensor, memory: torch.Tensor | None):
        """Queries from ``x``, keys and values from ``memory`` (or ``x``), split into their heads."""
        if self.fast and memory is None:  # the fast path: the same three projections as one matrix product
            q, k, v = self._fused_qkv(x)
        else:
            source = x if memory is None else memory
            q, k, v = self.w_q(x), self.w_k(source), self.w_v(source)
        q = _split_heads(q, self.n_heads)  # (batch, T_q, d_model) -> (batch, heads, T_q, d_h)
        k = _split_heads(k, self.n_kv_heads)  # (batch, T_k, n_kv_heads d_h) -> (batch, n_kv_heads, T_k, d_h)
        v = _split_heads(v, self.n_kv_heads)  # (batch, T_k, n_kv_heads d_h) -> (batch, n_kv_heads, T_k, d_h)
        return q, k, v

    def _fused_qkv(self, x: torch.Tensor):
        """``x W^Q, x W^K, x W^V`` from one product with the stacked ``(d_model + 2 d_kv, d_model)`` matrix."""
        weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])  # (d_model + 2 d_kv, d_model)
        bias = None if self.w_q.bias is None else torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        d_kv = self.n_kv_heads * self.d_h
        return F.linear(x, weight, bias).split([self.d_model, d_kv, d_kv], dim=-1)  # (batch, seq, d_model), 2 x d_kv

    def _positions(self, q: torch.Tensor, k: torch.Tensor, offset: int, memory: torch.Tensor | None):
        """RoPE (chapter 3) rotates the queries and keys of self-attention by their positions, the first at
        ``offset``; cross-attention (``memory`` given) and a layer without RoPE leave them as they are."""
        if self.rope is None or memory is not None:
            return q, k
        return self.rope.rotate(q, offset), self.rope.rotate(k, offset)  # sizes checked in _check and __init__

    def _windowed(self, mask, t_q: int, t_k: int, offset: int, memory):
        """With a ``window`` (chapter 14), ``mask`` on the keys attended (a rolling cache keeps only the last ones)
        and the band: query ``offset + i`` sees keys ``offset + i - window + 1 .. offset + i``."""
        if self.window is None or memory is not None:
            return mask
        band = window_band(t_q, t_k, self.window, offset, offset + t_q - t_k, _device(mask, self))
        return band if mask is None else mask[..., -t_k:] & band  # (batch, 1, T_q, T_k) & (T_q, T_k)

    def _bias(self, q: torch.Tensor, k: torch.Tensor, offset: int, memory: torch.Tensor | None):
        """The relative bias of self-attention (chapter 3), ``(heads, T_q, T_k)`` for queries from position
        ``offset`` on; None in cross-attention or without one."""
        if self.relative_bias is None or memory is not None:
            return None
        return self.relative_bias(q.shape[2], k.shape[2], offset)  # (heads, T_q, T_k)

    def _attend(self, q, k, v, mask, bias, return_weights: bool):
        """Chapter 4's equation for every head at once, with the relative bias added to the scores: ``(batch,
        heads, T_q, d_h)`` and the weights (None on the fast path). Each key/value head serves its group of query
        heads (chapter 12); ``mask`` has its heads dimension. The arguments were checked in ``_check``."""
        k, v = _repeat_kv(k, self.n_rep), _repeat_kv(v, self.n_rep)  # (batch, heads, T_k, d_h)
        if self.fast and not return_weights:  # PyTorch's fused kernel, the same numbers (chapter 12)
            return fused_attention(q, k, v, mask, bias, self.dropout if self.training else 0.0), None
        scores = attention_scores(q, k)  # (batch, heads, T_q, T_k)
        if bias is not None:  # the relative bias (chapter 3)
            scores = scores + bias
        weights = self._dropped(softmax_over_allowed(scores, mask))  # (batch, heads, T_q, T_k)
        return weights @ v, weights  # (batch, heads, T_q, d_h)

    def _dropped(self, weights: torch.Tensor) -> torch.Tensor:
        """Dropout on the attention weights, in training only (chapter 5)."""
        if self.training and self.dropout > 0.0:
            return F.dropout(weights, self.dropout)
        return weights

    def extra_repr(self) -> str:
        kv = "" if self.n_kv_heads == self.n_heads else f", n_kv_heads={self.n_kv_heads}"
        window = "" if self.window is None else f", window={self.window}"
        return f"d_model={self.d_model}, n_heads={self.n_heads}{kv}, d_h={self.d_h}{window}, fast={self.fast}"

    def _check(self, x, memory, mask, cache):
        """``x``, ``memory``, ``mask`` and ``cache``, once: attention and the steps above take them as they are."""
        require_float("x", x)
        require_rank("x", x, (3,), "(batch, T_q, d_model)")
        require_last_dim("x", x, self.d_model)
        if memory is not None:
            _check_memory(memory, x, cache, self.d_model)
        t_k = (x if memory is None else memory).shape[1] + (0 if cache is None else cache.length)
        if memory is None and self.rope is not None:  # RoPE's table has a row per position
            require_max_len("x", t_k, self.rope.max_len)
        if mask is not None:
            per_head = isinstance(mask, torch.Tensor) and mask.dim() == 4
            target = (x.shape[0], self.n_heads, x.shape[1], t_k) if per_head else (x.shape[0], x.shape[1], t_k)
            require_mask("mask", mask, target, "(batch, heads, T_q, T_k)" if per_head else "(batch, T_q, T_k)")


def _device(mask, layer):
    """Where a mask is made: the given mask's device, else the layer's."""
    return layer.w_q.weight.device if mask is None else mask.device


def _check_memory(memory, x: torch.Tensor, cache, d_model: int) -> None:
    """Cross-attention's ``memory (batch, T_k, d_model)``, of ``x``'s batch, and no cache."""
    require_float("memory", memory)
    require_rank("memory", memory, (3,), "(batch, T_k, d_model)")
    require_sizes("memory", memory, (x.shape[0], None, d_model), f"(batch={x.shape[0]}, T_k, d_model={d_model})")
    if cache is not None:
        raise ValueError("cache: expected None for cross-attention (memory is given), got a cache")


def _check_positional(rope, relative_bias, d_h: int, n_heads: int) -> None:
    """A RoPE of the layer's head size and a relative bias with one row per head, checked once, when built."""
    if rope is not None and (not isinstance(rope, RotaryEmbedding) or rope.d_h != d_h):
        got = f"d_h={rope.d_h}" if isinstance(rope, RotaryEmbedding) else type(rope).__name__
        raise ValueError(f"rope: expected a RotaryEmbedding with d_h={d_h} (d_model / n_heads), got {got}")
    if relative_bias is not None and (not isinstance(relative_bias, RelativePositionBias)
                                      or relative_bias.bias.shape[0] != n_heads):
        got = (f"n_heads={relative_bias.bias.shape[0]}" if isinstance(relative_bias, RelativePositionBias)
               else type(relative_bias).__name__)
        raise ValueError(f"relative_bias: expected a RelativePositionBias with n_heads={n_heads}, got {got}")
