"""Encoder and decoder blocks, post-norm and pre-norm (chapters 6 and 8).

Post-norm (the 2017 paper): ``x = Norm(x + Sublayer(x))``.
Pre-norm (most models today): ``x = x + Sublayer(Norm(x))``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from .config import TransformerConfig
from .feedforward import feed_forward_for
from .latent_attention import LatentAttention, latent_attention_for
from .moe import moe_for
from .multihead import MultiHeadAttention
from .norm import make_norm
from .positional import ActsOn, positional_module
from .rope_scaling import rotary_for


def add_norm(x: torch.Tensor, sublayer: Callable, norm: nn.Module, dropout: nn.Module,
             norm_first: bool) -> torch.Tensor:
    """Add & norm around one sublayer, ``(batch, seq, d_model)`` in and out: the 2017 post-norm
    ``Norm(x + Sublayer(x))``, or the pre-norm ``x + Sublayer(Norm(x))``. Dropout acts on the sublayer's output
    before it is added, in training only."""
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def self_attention_for(cfg: TransformerConfig, layer: int = 0) -> MultiHeadAttention | LatentAttention:
    """Self-attention with the positional scheme that acts inside attention, if any (RoPE, scaled with
    ``cfg.rope_scaling``, or relative bias), and layer ``layer``'s sliding window (chapter 14); latent attention
    (chapter 14) when ``cfg.latent`` is set."""
    if cfg.latent is not None:
        return latent_attention_for(cfg)
    rope = rotary_for(cfg)
    relative_bias = positional_module(cfg, ActsOn.SCORES)
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, bias=cfg.linear_bias, rope=rope,
                              relative_bias=relative_bias, fast=cfg.fast, n_kv_heads=cfg.kv_heads,
                              window=cfg.layer_window(layer), qk_norm=cfg.qk_norm, eps=cfg.norm_eps)


class EncoderBlock(nn.Module):
    """Self-attention then feed-forward, each with add & norm: ``(batch, seq, d_model)`` in and out."""

    def __init__(self, cfg: TransformerConfig, layer: int = 0):
        super().__init__()
        self.self_attn = self_attention_for(cfg, layer)  # layer: its place in the stack (chapter 14)
        self.ff = moe_for(cfg, layer)  # a mixture of experts (chapter 14), or None: this layer is dense
        if self.ff is None:
            self.ff = feed_forward_for(cfg)  # None: an attention-only block (cfg.ffn="none", chapter 13)
        self.norm1 = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast)
        self.norm2 = None if self.ff is None else make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast)
        self.drop1, self.drop2 = nn.Dropout(cfg.dropout), nn.Dropout(cfg.dropout)
        self.norm_first = cfg.norm_first

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache=None) -> torch.Tensor:
        """``cache``: this layer's :class:`~transformer.kv_cache.LayerCache` (chapter 12), or None."""
        attend = partial(self.self_attn, mask=mask, cache=cache)
        x = add_norm(x, attend, self.norm1, self.drop1, self.norm_first)
        return x if self.ff is None else add_norm(x, self.ff, self.norm2, self.drop2, self.norm_first)


class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, feed-forward; each with add & norm.

    ``x (batch, T_d, d_model)``, ``memory (batch, T_e, d_model)`` -> ``(batch, T_d, d_model)``.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = self_attention_for(cfg)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, bias=cfg.linear_bias, fast=cfg.fast)
        self.ff = feed_forward_for(cfg)
        self.norm1 = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast)
        self.norm2 = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast)
        self.norm3 = None if self.ff is None else make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast)
        self.drop1, self.drop2, self.drop3 = (nn.Dropout(cfg.dropout) for _ in range(3))
        self.norm_first = cfg.norm_first

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = add_norm(x, partial(self.self_attn, mask=self_mask), self.norm1, self.drop1, self.norm_first)
        read = partial(self.cross_attn, memory=memory, mask=memory_mask)  # queries from x, keys and values from memory
        x = add_norm(x, read, self.norm2, self.drop2, self.norm_first)
        return x if self.ff is None else add_norm(x, self.ff, self.norm3, self.drop3, self.norm_first)


class SelfAttentionStack(nn.Module):
    """A stack of self-attention blocks, :class:`EncoderBlock` (and a final norm for pre-norm models).

    Chapter 6 builds it as the encoder, :data:`Encoder`; a decoder-only model uses the same stack under a
    causal mask, and a Vision Transformer on patches.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList(EncoderBlock(cfg, i) for i in range(cfg.n_layers))
        self.norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast) if cfg.use_final_norm else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache=None) -> torch.Tensor:
        """``cache``: a :class:`~transformer.kv_cache.KVCache` with a layer for each block (chapter 12), or None."""
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, None if cache is None else cache.layers[i])
        return self.norm(x)


Encoder = SelfAttentionStack  # chapter 6's name: the stack is the encoder of the 2017 model


class Decoder(nn.Module):
    """A stack of :class:`DecoderBlock`; every block reads the same final encoder output."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.decoder_layers))
        self.norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast) if cfg.use_final_norm else nn.Identity()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return self.norm(x)
