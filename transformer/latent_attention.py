"""Multi-head latent attention: keys and values from one small latent per token (DeepSeek-V2 and V3; chapter 14).

Each token is compressed to a latent ``c = RMSNorm(x W_dkv)`` of ``kv_lora_rank`` numbers; every head's key part
``k_nope = c W_uk`` and value ``v = c W_uv`` are expanded from it. RoPE cannot act on ``c`` (a rotation between
``W_uk`` and the query would depend on the position, and could no longer be absorbed), so a *decoupled* part
carries the positions: ``qk_rope_head_dim`` more features per head for the queries, and one rotated key
``k_rope = RoPE(x W_kr)`` shared by all the heads. A head's score is ``q_nope . k_nope + q_rope . k_rope`` divided
by ``sqrt(qk_nope_head_dim + qk_rope_head_dim)``. The queries may be compressed too (``q_lora_rank``):
``q = RMSNorm(x W_dq) W_uq``.

The cache keeps, per token and layer, ``c`` and ``k_rope`` only: ``kv_lora_rank + qk_rope_head_dim`` numbers
instead of ``2 n_heads d_h``. Stored in a :class:`~transformer.kv_cache.LayerCache`, ``c`` is its ``k``
``(batch, 1, seq, kv_lora_rank)`` and ``k_rope`` its ``v`` ``(batch, 1, seq, qk_rope_head_dim)``.

Absorbed (``absorb=True``, for decoding): ``q_nope . (c W_uk) = (q_nope W_uk^T) . c``, so each query is moved into
the latent space once and the keys are never expanded; likewise the weighted sum of ``c`` is expanded by ``W_uv``
after attention. The same numbers, computed on the cache as it is.

As Hugging Face's ``DeepseekV3Attention`` (``transformers/models/deepseek_v3/modeling_deepseek_v3.py``):
``kv_a_proj_with_mqa`` is ``[W_dkv; W_kr]``, ``kv_b_proj`` holds per head ``[W_uk; W_uv]``, RoPE pairs are
interleaved when ``config.rope_interleave`` (half-split otherwise), and the scale ``1 / sqrt(qk_head_dim)`` is
multiplied by ``mscale(factor, mscale_all_dim)^2`` under YaRN (``yarn_apply_mscale``), given here as ``scale``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ._validate import (
    require_float,
    require_last_dim,
    require_mask,
    require_max_len,
    require_positive_int,
    require_rank,
)
from .masks import softmax_over_allowed
from .multihead import concat_heads
from .norm import RMSNorm
from .positional import RotaryEmbedding
from .rope_scaling import ScaledRotaryEmbedding


@dataclass
class LatentConfig:
    """The sizes of latent attention (the field ``latent`` of :class:`~transformer.config.TransformerConfig`)."""

    kv_lora_rank: int  # the latent c per token
    qk_nope_head_dim: int  # each head's key and query features from c
    qk_rope_head_dim: int  # each head's rotated query features, and the one rotated key they share
    v_head_dim: int  # each head's value
    q_lora_rank: int | None = None  # the queries' own latent; None = one projection
    scale: float | None = None  # the scores' factor; None = 1 / sqrt(qk_nope_head_dim + qk_rope_head_dim)

    def __post_init__(self):
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            require_positive_int(name, getattr(self, name))
        if self.q_lora_rank is not None:
            require_positive_int("q_lora_rank", self.q_lora_rank)


class LatentAttention(nn.Module):
    """``forward(x (batch, T_q, d_model), mask=None, cache=None) -> (batch, T_q, d_model)``: self-attention with
    a latent key/value cache. ``mask`` bool ``(batch, T_q, T_k)``, True = may attend; ``cache`` a
    :class:`~transformer.kv_cache.LayerCache` that receives ``c`` and ``k_rope``."""

    def __init__(self, d_model: int, n_heads: int, latent: LatentConfig, rope: RotaryEmbedding,
                 eps: float = 1e-6, bias: bool = False):
        super().__init__()
        _check_parts(d_model, n_heads, latent, rope)
        self.n_heads, self.latent, self.rope, self.absorb = n_heads, latent, rope, False
        qk = latent.qk_nope_head_dim + latent.qk_rope_head_dim
        if latent.q_lora_rank is None:
            self.w_q = nn.Linear(d_model, n_heads * qk, bias=False)
        else:
            self.w_dq = nn.Linear(d_model, latent.q_lora_rank, bias=bias)
            self.q_norm = RMSNorm(latent.q_lora_rank, eps)
            self.w_uq = nn.Linear(latent.q_lora_rank, n_heads * qk, bias=False)
        self.w_dkv = nn.Linear(d_model, latent.kv_lora_rank + latent.qk_rope_head_dim, bias=bias)  # [W_dkv; W_kr]
        self.kv_norm = RMSNorm(latent.kv_lora_rank, eps)
        self.w_ukv = nn.Linear(latent.kv_lora_rank, n_heads * (latent.qk_nope_head_dim + latent.v_head_dim),
                               bias=False)  # per head [W_uk; W_uv]
        self.w_o = nn.Linear(n_heads * latent.v_head_dim, d_model, bias=bias)
        self.scale = latent.scale or 1.0 / math.sqrt(qk)

    def forward(self, x: torch.Tensor, memory=None, mask: torch.Tensor | None = None, cache=None) -> torch.Tensor:
        self._check(x, memory, mask, cache)
        lat, (batch, t_q, _) = self.latent, x.shape
        offset = 0 if cache is None else cache.length
        q = self._queries(x).view(batch, t_q, self.n_heads, -1).transpose(1, 2)  # (batch, heads, T_q, qk)
        q_nope, q_rope = q.split([lat.qk_nope_head_dim, lat.qk_rope_head_dim], dim=-1)  # (.., d_nope), (.., d_r)
        c, k_rope = self.w_dkv(x).split([lat.kv_lora_rank, lat.qk_rope_head_dim], dim=-1)  # (batch, T_q, r), (.., d_r)
        c = self.kv_norm.normalize(c)[:, None]  # (batch, 1, T_q, kv_lora_rank)
        q_rope = self.rope.rotate(q_rope, offset)  # (batch, heads, T_q, d_r)
        k_rope = self.rope.rotate(k_rope[:, None], offset)  # (batch, 1, T_q, d_r): one key for every head
        if cache is not None:
            c, k_rope = cache.append(c, k_rope)  # (batch, 1, T_k, r), (batch, 1, T_k, d_r): the latent cache
        mask = None if mask is None else mask[:, None]  # (batch, T_q, T_k) -> (batch, 1, T_q, T_k)
        attend = self._absorbed if self.absorb else self._expanded
        return self.w_o(concat_heads(attend(q_nope, q_rope, c, k_rope, mask)))  # (batch, T_q, heads * d_v)

    def _queries(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, T_q, d_model) -> (batch, T_q, heads * qk)``, through the queries' latent if there is one."""
        if self.latent.q_lora_rank is None:
            return self.w_q(x)
        return self.w_uq(self.q_norm.normalize(self.w_dq(x)))

    def _up(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``W_uk (heads, d_nope, r)`` and ``W_uv (heads, d_v, r)`` from ``w_ukv``."""
        lat = self.latent
        w = self.w_ukv.weight.view(self.n_heads, lat.qk_nope_head_dim + lat.v_head_dim, lat.kv_lora_rank)  # per head
        return w.split([lat.qk_nope_head_dim, lat.v_head_dim], dim=1)  # (heads, d_nope, r), (heads, d_v, r)

    def _expanded(self, q_nope, q_rope, c, k_rope, mask):
        """The naive form: every head's keys and values expanded from ``c``, then chapter 4's attention."""
        w_uk, w_uv = self._up()
        k_nope = c @ w_uk.transpose(1, 2)  # (batch, 1, T_k, r) @ (heads, r, d_nope) -> (batch, heads, T_k, d_nope)
        v = c @ w_uv.transpose(1, 2)  # (batch, heads, T_k, d_v)
        k = torch.cat([k_nope, k_rope.expand(-1, self.n_heads, -1, -1)], dim=-1)  # (batch, heads, T_k, qk)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (batch, heads, T_q, qk)
        return self._attention(q, k, v, mask)  # (batch, heads, T_q, d_v)

    def _absorbed(self, q_nope, q_rope, c, k_rope, mask):
        """The absorbed form: queries moved into the latent space, attention over ``c`` itself, then ``W_uv``."""
        w_uk, w_uv = self._up()
        q_latent = q_nope @ w_uk  # (batch, heads, T_q, d_nope) @ (heads, d_nope, r) -> (batch, heads, T_q, r)
        q = torch.cat([q_latent, q_rope], dim=-1)  # (batch, heads, T_q, r + d_r)
        k = torch.cat([c, k_rope], dim=-1)  # (batch, 1, T_k, r + d_r): the cache as it is
        out = self._attention(q, k, c, mask)  # (batch, heads, T_q, r)
        return out @ w_uv.transpose(1, 2)  # (batch, heads, T_q, r) @ (heads, r, d_v) -> (batch, heads, T_q, d_v)

    def _attention(self, q, k, v, mask):
        """Chapter 4's equation with the scale of the full query, ``1 / sqrt(d_nope + d_rope)``, in both forms (the
        absorbed queries are wider): ``(batch, heads, T_q, d_v)``."""
        scores = (q * self.scale) @ k.transpose(-2, -1)  # (batch, heads, T_q, T_k)
        return softmax_over_allowed(scores, mask) @ v  # (batch, heads, T_q, T_k) @ (batch, ., T_k, d_v)

    def _check(self, x, memory, mask, cache) -> None:
        """``x (batch, T_q, d_model)``, no memory (self-attention only), ``mask (batch, T_q, T_k)``, once."""
        require_float("x", x)
        require_rank("x", x, (3,), "(batch, T_q, d_model)")
        require_last_dim("x", x, self.w_dkv.in_features)
        if memory is not None:
            raise ValueError("memory: expected None (latent attention is self-attention), got a tensor")
        t_k = x.shape[1] + (0 if cache is None else cache.length)
        require_max_len("x", t_k, self.rope.max_len)  # RoPE's table has a row per position
        if mask is not None:
            require_mask("mask", mask, (x.shape[0], x.shape[1], t_k), "(batch, T_q, T_k)")


def latent_attention_for(cfg) -> LatentAttention:
    """The latent attention of a :class:`~transformer.config.TransformerConfig` with ``latent`` set: RoPE of
    ``qk_rope_head_dim`` features, with the config's base, pairs and scaling."""
    d_rope = cfg.latent.qk_rope_head_dim
    rope = ScaledRotaryEmbedding(d_rope, cfg.max_len, float(cfg.rope_base), cfg.rope_pairs,
                                 cfg.rope_scaling or {"rope_type": "default"})
    # the latents' norms keep DeepseekV3RMSNorm's default epsilon, 1e-6, not the config's rms_norm_eps
    return LatentAttention(cfg.d_model, cfg.n_heads, cfg.latent, rope, 1e-6, cfg.linear_bias)


# ----------------------------------------------------------------------------- argument checks


def _check_parts(d_model, n_heads, latent, rope) -> None:
    """Positive sizes, a :class:`LatentConfig`, and a RoPE of ``qk_rope_head_dim`` features."""
    require_positive_int("d_model", d_model)
    require_positive_int("n_heads", n_heads)
    if not isinstance(latent, LatentConfig):
        raise TypeError(f"latent: expected a LatentConfig, got {type(latent).__name__}")
    if not isinstance(rope, RotaryEmbedding) or rope.d_h != latent.qk_rope_head_dim:
        got = f"d_h={rope.d_h}" if isinstance(rope, RotaryEmbedding) else type(rope).__name__
        raise ValueError(f"rope: expected a RotaryEmbedding with d_h={latent.qk_rope_head_dim} (qk_rope_head_dim), "
                         f"got {got}")
