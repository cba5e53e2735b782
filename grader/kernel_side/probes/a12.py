"""Kernel-side probes of assignment 12 (standard library and torch only; see ``probes/__init__.py``)."""

from __future__ import annotations


def decode_loop(user, q, k, v):
    """The student's ``cache_step`` run token by token from an empty cache over ``q, k, v``
    ``(batch, heads, seq, d_h)``: every step's output and the caches after the last step."""
    step = user["cache_step"]
    batch, heads, seq, d_h = k.shape
    k_cache, v_cache = k.new_zeros(batch, heads, 0, d_h), v.new_zeros(batch, heads, 0, d_h)
    outs = []
    for t in range(seq):
        out, k_cache, v_cache = step(q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1], k_cache, v_cache)
        outs.append(out)
    return {"outs": outs, "k_cache": k_cache, "v_cache": v_cache}
