"""Sliding-window attention: each position sees only the last ``W`` (chapter 14).

Query ``t`` may attend to keys ``t - W + 1 .. t``: ``W`` keys, itself included (Beltagy et al. 2020; Mistral 7B,
Jiang et al. 2023). This is Hugging Face's off-by-one: ``sliding_window_overlay`` in
``transformers/masking_utils.py`` keeps ``kv_idx > q_idx - sliding_window``, and
``sliding_window_causal_mask_function`` adds ``kv_idx <= q_idx``; Mistral (``models/mistral/modeling_mistral.py``)
builds its mask with ``create_sliding_window_causal_mask`` whenever ``config.sliding_window`` is set, in every
layer. Gemma 2 and 3 alternate local (windowed) and global layers: ``config.layer_types`` holds
``"sliding_attention"`` or ``"full_attention"`` per layer (``gemma2/configuration_gemma2.py``: every other layer
local, the first included; ``gemma3/configuration_gemma3.py``: five local then one global), each local layer with
the same mask. Here a layer's window is one entry of ``TransformerConfig(sliding_window=...)``: an int for every
layer, or a tuple with an int or None (global) per layer, e.g. Gemma 2's ``(W, None, W, None)``.

The mask is :func:`~transformer.masks.sliding_window_mask`; attention with a ``window``
(:class:`~transformer.multihead.MultiHeadAttention`) applies it. Information still travels further: after ``n``
windowed layers a position has heard from up to ``n (W - 1)`` positions back.

:class:`RollingLayerCache` keeps the keys and values of the last ``W - 1`` positions only: the next query needs
those and its own, so the cache never grows past the window, however long the sequence.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int
from .kv_cache import KVCache


class RollingLayerCache:
    """One layer's keys and values of the last ``window - 1`` positions, ``(batch, n_kv_heads, <= window - 1, d_h)``.

    ``length`` counts every position seen (the position of the next query, for RoPE); ``first`` is the position of
    the oldest one kept. :meth:`append` returns the kept past and the new positions, then forgets what the next
    query can no longer see.
    """

    def __init__(self, window: int):
        self.window = require_positive_int("window", window)
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.length = 0

    @property
    def first(self) -> int:
        """The position of the oldest key kept."""
        return self.length - (0 if self.k is None else self.k.shape[-2])

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``k, v (batch, n_kv_heads, T_new, d_h)``; return the kept past and them, ``(..., kept + T_new, d_h)``."""
        k_all = k if self.k is None else torch.cat([self.k, k], dim=-2)  # (batch, n_kv_heads, kept + T_new, d_h)
        v_all = v if self.v is None else torch.cat([self.v, v], dim=-2)  # (batch, n_kv_heads, kept + T_new, d_h)
        self.length += k.shape[-2]
        keep = min(self.window - 1, k_all.shape[-2])
        start = k_all.shape[-2] - keep
        self.k, self.v = k_all[..., start:, :].clone(), v_all[..., start:, :].clone()  # (..., <= window - 1, d_h)
        return k_all, v_all


def rolling_cache(model):
    """A :class:`~transformer.kv_cache.KVCache` for a :class:`~transformer.model.DecoderOnly` whose windowed layers
    keep a :class:`RollingLayerCache` (the others a full one): pass it as ``model(ids, cache=...)``."""
    layers = getattr(getattr(model, "causal_stack", None), "layers", None)
    if layers is None:
        raise TypeError(f"model: expected a DecoderOnly (a causal stack to cache), got {type(model).__name__}")
    cache = KVCache(len(layers))
    for i, layer in enumerate(layers):
        window = getattr(layer.self_attn, "window", None)  # latent attention has none
        if window is not None:
            cache.layers[i] = RollingLayerCache(window)
    return cache
