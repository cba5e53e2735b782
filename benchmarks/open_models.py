"""Benchmarks of chapter 14: what a decoding step costs with 2,048 tokens cached, per kind of attention, and a
mixture of experts against a dense layer of the same active parameters (``make bench`` writes
``_build/bench/open_models.json``; the reference run is ``benchmarks/results/open_models.json``).

- ``decode-2k-<kind>``: one attention layer (``d_model`` 1024, 16 query heads of 64; grouped-query with 4
  key/value heads; multi-query; a window of 512 with 4 key/value heads; latent attention with ``d_c = 4 d_h = 256``
  and ``d_h^R = 32``, absorbed), float32, one thread: the median time of one decoding step with 2,048 positions
  before it, interleaved with multi-head attention's, and the cache's bytes weighed after the 2,048 positions, per
  position (the window's holds 511 of them).
- ``moe-top2-of-8``: :class:`~transformer.moe.MixtureOfExperts` (8 SwiGLU experts of 1024, top 2) on 256 tokens
  against one SwiGLU of 2048, the same parameters per token.

These are CPU timings of the teaching code: a GPU's differ. On a GPU serving many sequences, decoding waits on
reading the cache, and latent and grouped-query attention gain by reading less; here one sequence's step is
short, and Python's overhead weighs more.

    python -m benchmarks.open_models [--quick]
"""

from __future__ import annotations

import json
import sys

import torch

import transformer as T
from layout.env import one_thread
from transformer.kv_cache import LayerCache
from transformer.latent_attention import LatentAttention, LatentConfig
from transformer.positional import RotaryEmbedding

from .timing import interleaved

D_MODEL, HEADS, CACHED = 1024, 16, 2048


def layers() -> dict:
    """Each kind's attention layer and a fresh cache for it."""
    torch.manual_seed(0)
    mha = lambda kv=None, window=None: T.MultiHeadAttention(D_MODEL, HEADS, bias=False, n_kv_heads=kv,  # noqa: E731
                                                             window=window).eval()
    latent = LatentAttention(D_MODEL, HEADS, LatentConfig(256, 64, 32, 64), RotaryEmbedding(32, CACHED + 64)).eval()
    latent.absorb = True
    return {"multi-head": (mha(), LayerCache), "grouped-query, 4 kv heads": (mha(4), LayerCache),
            "multi-query": (mha(1), LayerCache),
            "window 512, 4 kv heads": (mha(4, 512), lambda: T.RollingLayerCache(512)),
            "latent, absorbed": (latent, LayerCache)}


def filled(layer, make_cache):
    """A cache holding ``CACHED`` positions (filled in chunks), and a function that runs one decoding step on it and
    forgets the step's position again, so that every call sees the same cache."""
    cache = make_cache()
    x = torch.randn(1, CACHED + 1, D_MODEL, generator=torch.Generator().manual_seed(1))  # (batch, T, d_model)
    with torch.no_grad():
        for start in range(0, CACHED, 256):
            layer(x[:, start:start + 256], cache=cache)
    kept = (cache.k, cache.v, getattr(cache, "length", None))
    weighed = cache.k.numel() * cache.k.element_size() + cache.v.numel() * cache.v.element_size()  # bytes held

    def step():
        with torch.no_grad():
            layer(x[:, CACHED:], cache=cache)
        cache.k, cache.v = kept[0], kept[1]
        if isinstance(cache, T.RollingLayerCache):
            cache.length = kept[2]

    return step, weighed


def decoding(repeats: int) -> list[dict]:
    rows = []
    with one_thread():
        kinds = layers()
        base, base_bytes = filled(*kinds.pop("multi-head"))
        for kind, (layer, make_cache) in kinds.items():
            step, weighed = filled(layer, make_cache)
            ours, ref = interleaved(step, base, repeats)
            rows.append({"name": f"decode-2k-{kind}", "ours_s": ours, "reference": "multi-head attention, 16 heads "
                         "of 64, the same step (one layer, 2,048 positions cached, float32, 1 thread)",
                         "reference_s": ref, "ratio": ours / ref, "cache_bytes_per_token": weighed / CACHED,
                         "reference_cache_bytes_per_token": base_bytes / CACHED})
    return rows


def experts(repeats: int) -> dict:
    torch.manual_seed(0)
    moe = T.MixtureOfExperts(D_MODEL, 1024, T.MoEConfig(8, top_k=2)).eval()
    dense = T.GatedFeedForward(D_MODEL, 2048).eval()
    x = torch.randn(1, 256, D_MODEL, generator=torch.Generator().manual_seed(2))  # (batch, tokens, d_model)
    with one_thread(), torch.no_grad():
        ours, ref = interleaved(lambda: moe(x), lambda: dense(x), repeats)
    return {"name": "moe-top2-of-8", "ours_s": ours, "reference": "one SwiGLU of 2048 (the same parameters per "
            "token), 256 tokens, d_model 1024, float32, 1 thread", "reference_s": ref, "ratio": ours / ref}


def open_models(repeats: int) -> list[dict]:
    """The rows of chapter 14: decoding per kind of attention against multi-head, experts against dense."""
    return [*decoding(repeats), experts(repeats)]


def print_rows(rows: list[dict]) -> None:
    print(f"\n{'chapter 14':<42} {'ours (s)':>10} {'reference (s)':>14} {'ratio':>7} {'cache B/token':>14}")
    for r in rows:
        size = f"{r['cache_bytes_per_token']:.0f}" if "cache_bytes_per_token" in r else ""
        print(f"{r['name']:<42} {r['ours_s']:>10.5f} {r['reference_s']:>14.5f} {r['ratio']:>7.2f} {size:>14}")


if __name__ == "__main__":
    found = open_models(5 if "--quick" in sys.argv else 15)
    print_rows(found)
    print(json.dumps(found, indent=1))
