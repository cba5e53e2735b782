"""The key/value cache: generating without recomputing the past (chapter 12).

A decoder-only model that generates one token at a time computes, at every
step, the keys and values of every position so far, although those of the
past positions have not changed: a causal mask lets no position see the
future, so nothing a new token does alters them. :class:`KVCache` keeps them,
layer by layer, as ``(batch, n_kv_heads, seq, d_h)`` tensors; each step
then feeds only the new token, whose query attends to the stored keys and its
own. The tokens are the same; the work per step no longer grows with the
length (but attention's still does, and so does the cache: :func:`cache_bytes_per_token`, and with sliding
windows :func:`cache_bytes`).
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int
from .decoding import generate
from .masks import causal_mask, real_tokens
from .modes import eval_mode


class LayerCache:
    """One layer's keys and values, ``(batch, n_kv_heads, seq, d_h)`` each (None before the first step)."""

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many positions are stored."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' ``k, v (batch, n_kv_heads, T_new, d_h)``; return all of them."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)  # (batch, n_kv_heads, seq + T_new, d_h)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)  # (batch, n_kv_heads, seq + T_new, d_h)
        return self.k, self.v


class KVCache:
    """The keys and values of every layer of a decoder-only model, and which positions are real tokens.

    ``cache.keys[i]``, ``cache.values[i]``: layer ``i``'s ``(batch, n_kv_heads, seq, d_h)``;
    ``len(cache)``: ``seq``. Pass it to :meth:`~transformer.model.DecoderOnly.forward` (``cache=``),
    which fills it; :func:`generate_cached` does so step by step.
    """

    def __init__(self, n_layers: int):
        require_positive_int("n_layers", n_layers)
        self.layers = [LayerCache() for _ in range(n_layers)]
        self.real: torch.Tensor | None = None  # (batch, seq) bool: the positions that are not <pad>

    def __len__(self) -> int:
        return self.layers[0].length if self.layers else 0

    @property
    def keys(self) -> list[torch.Tensor | None]:
        return [layer.k for layer in self.layers]

    @property
    def values(self) -> list[torch.Tensor | None]:
        return [layer.v for layer in self.layers]

    def nbytes(self) -> int:
        """The bytes held by every stored key and value."""
        return sum(t.numel() * t.element_size() for t in [*self.keys, *self.values] if t is not None)

    def bytes_per_token(self) -> float:
        """The bytes one position of one sequence costs: ``2 n_layers n_kv_heads d_h`` numbers."""
        if len(self) == 0:
            return 0.0
        return self.nbytes() / (len(self) * self.layers[0].k.shape[0])

    def self_mask(self, ids: torch.Tensor, pad_id: int | None) -> torch.Tensor:
        """The new positions' mask ``(batch, T_new, seq + T_new)`` over the stored and new keys; records ``ids``.

        Row ``r`` (position ``seq + r``) may attend to keys ``0 .. seq + r`` that are not ``<pad>``,
        the rows of :func:`~transformer.masks.causal_padding_mask` for the whole sequence.
        """
        real = real_tokens(ids, pad_id)[:, 0]  # (batch, T_new): the new positions that are not <pad>
        self.real = real if self.real is None else torch.cat([self.real, real], dim=1)  # (batch, seq + T_new)
        causal = causal_mask(ids.shape[1], ids.device, past=len(self))  # (T_new, seq + T_new)
        return causal & self.real[:, None, :]  # (T_new, seq + T_new) & (batch, 1, seq + T_new)


def cache_bytes_per_token(cfg, dtype: torch.dtype = torch.float32) -> int:
    """What one position costs in the cache of a :class:`~transformer.config.TransformerConfig`'s decoder:
    a key and a value of ``kv_heads * d_h`` numbers in each layer. Grouped-query attention divides it by
    ``n_heads / n_kv_heads``; latent attention (chapter 14) keeps ``kv_lora_rank + qk_rope_head_dim`` numbers."""
    _check_dtype(dtype)
    return cfg.n_layers * _numbers_per_layer(cfg) * torch.empty((), dtype=dtype).element_size()


def cache_bytes(cfg, context: int, dtype: torch.dtype = torch.float32) -> int:
    """What the cache of one sequence holds after ``context`` positions (chapter 14): every position in a layer
    that sees the whole past, the last ``window - 1`` in a windowed one (its
    :class:`~transformer.sliding_window.RollingLayerCache`)."""
    require_positive_int("context", context)
    _check_dtype(dtype)
    per_position = _numbers_per_layer(cfg) * torch.empty((), dtype=dtype).element_size()  # one position, one layer
    windows = [cfg.layer_window(layer) for layer in range(cfg.n_layers)]
    return per_position * sum(context if w is None else min(context, w - 1) for w in windows)


def _numbers_per_layer(cfg) -> int:
    """The numbers one position keeps in one layer's cache: a key and a value, or latent attention's ``c, k_rope``."""
    latent = getattr(cfg, "latent", None)
    if latent is not None:
        return latent.kv_lora_rank + latent.qk_rope_head_dim
    return 2 * cfg.kv_heads * cfg.d_h


def generate_cached(model, prefix: torch.Tensor, max_new_tokens: int, eos_id: int | None = None,
                    temperature: float = 0.0, generator: torch.Generator | None = None,
                    top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """:func:`~transformer.decoding.generate` for a :class:`~transformer.model.DecoderOnly`, with a :class:`KVCache`.

    The prefix ``(batch, seq)`` is read once; then each step feeds only the token just chosen. The model runs in
    eval mode (:func:`~transformer.modes.eval_mode`), as in :func:`~transformer.decoding.sample_decode`; the
    tokens (greedy, or sampled with the same ``generator``) are those of ``generate(model, prefix, ...)`` in eval mode.
    """
    stack = getattr(getattr(model, "causal_stack", None), "layers", None)
    if stack is None:
        raise TypeError(f"model: expected a DecoderOnly (a causal stack to cache), got {type(model).__name__}")
    cache = KVCache(len(stack))
    with eval_mode(model):
        # each step feeds only the positions the cache has not seen: the prefix first, then the token just chosen
        return generate(lambda ids: model(ids[:, len(cache):], cache=cache), prefix, max_new_tokens, eos_id,
                        temperature, generator, top_k, top_p)


# ----------------------------------------------------------------------------- argument checks


def _check_dtype(dtype) -> None:
    """A floating-point ``torch.dtype``: the numbers the cache would hold."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype (e.g. torch.float32), got {dtype!r}")
