"""Checks for the exercises of chapter 12: from 2017 to today.

The references are PyTorch's own: ``F.scaled_dot_product_attention`` (plain and causal),
``torch.cat``, ``torch.repeat_interleave`` and ``F.silu``; the by-hand numbers are worked below.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from transformer.flash import online_steps

from .answers import check_numbers_by_hand
from .core import Mistake, call, compare, fail, outputs, report
from .mistakes.a12 import CACHE_MISTAKES, ONLINE_MISTAKES, REPEAT_KV_MISTAKES, SWIGLU_MISTAKES

__all__ = ["check_online_by_hand", "check_online_softmax_attention", "check_cache_step", "check_repeat_kv",
           "check_swiglu", "ONLINE_SCORES", "online_by_hand"]

ONLINE_SCORES = (1.0, 2.0, 4.0, 1.0)  # one query's scaled scores, in two tiles of two keys
BY_HAND_TOLERANCE = 1e-3
BY_HAND_KEYS = ("m1", "l1", "m2", "l2")


def online_by_hand(scores=ONLINE_SCORES, block: int = 2) -> dict[str, float]:
    """The running maximum ``m`` and running sum ``l`` of ``exp(s - m)`` after each tile (``m1``, ``l1``, ``m2``,
    ...), as :func:`~transformer.flash.online_steps` computes them with the kernel's step, for the chapter's
    explorer too."""
    steps = online_steps(torch.tensor(scores, dtype=torch.float64), block, len(scores))
    return {f"{key}{i}": step[key] for i, step in enumerate(steps, 1) for key in ("m", "l")}


# ----------------------------------------------------------------------------- exercise 1


def _online_by_hand_mistakes() -> list[Mistake]:
    e = math.exp
    right = online_by_hand()
    l1, tile2 = right["l1"], e(4 - 4) + e(1 - 4)
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    return [
        Mistake("not rescaled", "the maximum grew from m1 to m2 in tile 2, but l1 was not rescaled: it counts "
                "exp(s - m1), so multiply it by exp(m1 - m2) before adding tile 2's exp(s - m2).",
                t(l1 + tile2), "l2"),
        Mistake("rescaled twice", "l1 was multiplied by exp(m1 - m2) twice; once turns exp(s - m1) into "
                "exp(s - m2).", t(l1 * e(2 * (2 - 4)) + tile2), "l2"),
        Mistake("old maximum", "tile 2's exponentials were taken against the old maximum m1; the running "
                "maximum is updated first (to m2), then every new term uses it.", t(l1 + e(4 - 2) + e(1 - 2)), "l2"),
        Mistake("tile 2 alone", "this is the sum of tile 2 alone; the running sum also carries tile 1's "
                "(rescaled).", t(tile2), "l2"),
        Mistake("no shift", "these are plain exp(s); the online softmax sums exp(s - m) with the running maximum "
                "m subtracted, which keeps every term at most 1.", t(e(1) + e(2)), "l1"),
        Mistake("no shift, total", "these are plain exp(s); the online softmax sums exp(s - m) with the running "
                "maximum m subtracted, which keeps every term at most 1.", t(e(1) + e(2) + e(4) + e(1)), "l2"),
        Mistake("the whole row's maximum", "after tile 1 the running maximum has seen only tile 1's scores.",
                t(4.0), "m1"),
        Mistake("the whole row's maximum, sum", "after tile 1 the sum can only use tile 1's maximum; the last "
                "tiles are not read yet.", t(e(1 - 4) + e(2 - 4)), "l1"),
    ]


ONLINE_BY_HAND_MISTAKES = _online_by_hand_mistakes()


def check_online_by_hand(answer) -> None:
    """``answer = {"m1", "l1", "m2", "l2"}``: the running maximum and sum after each tile, each within 1e-3."""
    __tracebackhide__ = True
    right = online_by_hand()
    check_numbers_by_hand("online softmax by hand", answer, {k: right[k] for k in BY_HAND_KEYS},
                          ONLINE_BY_HAND_MISTAKES, BY_HAND_TOLERANCE)


# ----------------------------------------------------------------------------- exercise 2


def _online_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, s=1.0: s * torch.randn(*shape, generator=g)  # noqa: E731
    return [
        ("one query, 4 keys, tiles of 2", (r(1, 1, 4, s=2.0), r(1, 4, 4), r(1, 4, 3), 2)),
        ("5 queries, 7 keys, tiles of 3 (the last tile is shorter)", (r(2, 5, 8, s=2.0), r(2, 7, 8), r(2, 7, 4), 3)),
        ("heads, 10 keys, tiles of 4", (r(2, 3, 6, 16), r(2, 3, 10, 16), r(2, 3, 10, 16), 4)),
        ("tiles of 1 key", (r(1, 3, 4, s=2.0), r(1, 5, 4), r(1, 5, 2), 1)),
        ("one tile holds every key", (r(2, 4, 8), r(2, 6, 8), r(2, 6, 5), 16)),
        ("scores near 100 (exp would overflow)", (r(1, 4, 8, s=12.0), r(1, 6, 8, s=12.0), r(1, 6, 3), 2)),
    ]


def check_online_softmax_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(q, k, v, block_size)`` equals ``F.scaled_dot_product_attention(q, k, v)`` (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    cases = _online_cases(seed)
    q, k, v, b = cases[2][1]
    cases.append(("float64 inputs", (q.double(), k.double(), v.double(), b)))
    for case, args in cases:
        got = call(fn, args, f"online_softmax_attention ({case})")
        if isinstance(got, tuple):
            fail(f"✗ online_softmax_attention ({case})", ["returned a tuple; return only the output tensor"])
        q, k, v, _ = args
        expected = F.scaled_dot_product_attention(q, k, v)
        dims = ("batch", "T_q", "d_v") if q.dim() == 3 else ("batch", "heads", "T_q", "d_v")
        problems = compare(got, expected, dims, mistakes=outputs(ONLINE_MISTAKES, *args), what=f"output ({case})",
                           promised=("q", q.dtype))
        if problems and "overflow" in case and isinstance(got, torch.Tensor) and not got.isfinite().all():
            problems.append("Hint: exp(100), about 2.7e43, overflows float32 (at most 3.4e38). Subtract the "
                            "running maximum before exp, so that every exponential is at most 1.")
        if problems:
            report(f"online_softmax_attention ({case})", problems)
    report("online_softmax_attention", [])


# ----------------------------------------------------------------------------- exercise 3


def _cache_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    out = []
    for case, (b, h, t, d) in [("one head, one cached token", (1, 1, 1, 4)), ("one cached token", (2, 2, 1, 4)),
                               ("five cached tokens", (2, 3, 5, 8)), ("an empty cache (first token)", (1, 2, 0, 4))]:
        new = [torch.randn(b, h, 1, d, generator=g) for _ in range(3)]
        out.append((case, (*new, torch.randn(b, h, t, d, generator=g), torch.randn(b, h, t, d, generator=g))))
    return out


def _cache_problems(got, args, case: str) -> list[str]:
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return [f"expected a triple (out, k_cache, v_cache), got {type(got).__name__}"
                + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "")]
    q, k, v, k_cache, v_cache = args
    keys, values = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)  # (batch, heads, seq + 1, d_h)
    wrong = outputs(CACHE_MISTAKES, *args)
    dims = ("batch", "heads", "seq", "d_h")
    problems = []
    for i, (what, expected, atol) in enumerate([("k_cache", keys, 0.0), ("v_cache", values, 0.0),
                                                ("out", F.scaled_dot_product_attention(q, keys, values), 1e-5)]):
        part = (1, 2, 0)[i]
        mistakes = {hint: w[part] for hint, w in wrong.items() if isinstance(w, tuple)}
        problems += compare(got[part], expected, dims, atol=atol, rtol=0.0 if atol == 0 else 1e-4,
                            mistakes=mistakes, what=f"{what} ({case})")
        if problems:
            return problems
    return problems


def check_cache_step(fn: Callable, seed: int = 0) -> None:
    """``fn(q, k, v, k_cache, v_cache)`` returns ``(out, k_cache, v_cache)``: the caches one position longer,
    ``out`` the new query's attention over all of them; step by step, equal to causal attention."""
    __tracebackhide__ = True
    for case, args in _cache_cases(seed):
        got = call(fn, args, f"cache_step ({case})")
        problems = _cache_problems(got, args, case)
        if problems:
            report(f"cache_step ({case})", problems)
    g = torch.Generator().manual_seed(seed + 1)
    q, k, v = (torch.randn(1, 2, 6, 4, generator=g) for _ in range(3))  # (batch, heads, seq, d_h)
    k_cache, v_cache = torch.zeros(1, 2, 0, 4), torch.zeros(1, 2, 0, 4)
    outs = []
    for t in range(q.shape[2]):
        got = call(fn, (q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1], k_cache, v_cache),
                   f"cache_step (token {t} of a decoding loop)")
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            fail("✗ cache_step (decoding loop)", ["expected a triple (out, k_cache, v_cache)"])
        out, k_cache, v_cache = got
        outs.append(out)
    loop = torch.cat(outs, dim=2) if all(isinstance(o, torch.Tensor) and o.dim() == 4 for o in outs) else outs
    problems = compare(loop, F.scaled_dot_product_attention(q, k, v, is_causal=True), ("batch", "heads", "seq", "d_h"),
                       what="the outputs of 6 steps from an empty cache, side by side")
    if problems:
        report("cache_step (a decoding loop against causal attention over the whole sequence)", problems)
    report("cache_step", [])


# ----------------------------------------------------------------------------- exercise 4


def check_repeat_kv(fn: Callable, seed: int = 0) -> None:
    """``fn(x, n_rep)``: ``(batch, n_kv_heads, seq, d_h) -> (batch, n_kv_heads * n_rep, seq, d_h)``, exactly
    ``torch.repeat_interleave(x, n_rep, dim=1)``."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for case, shape, n_rep in [("2 kv heads, n_rep = 3", (2, 2, 3, 4), 3),
                               ("4 kv heads, n_rep = 2", (1, 4, 5, 2), 2), ("n_rep = 1", (2, 3, 4, 5), 1),
                               ("one kv head (multi-query), n_rep = 4", (1, 1, 3, 2), 4)]:
        x = torch.randn(*shape, generator=g)
        got = call(fn, (x, n_rep), f"repeat_kv ({case})")
        problems = compare(got, torch.repeat_interleave(x, n_rep, dim=1), ("batch", "heads", "seq", "d_h"), atol=0.0,
                           rtol=0.0, mistakes=outputs(REPEAT_KV_MISTAKES, x, n_rep), what=f"repeat_kv ({case})")
        if problems:
            report(f"repeat_kv ({case})", problems)
    report("repeat_kv", [])


# ----------------------------------------------------------------------------- exercise 5


def check_swiglu(fn: Callable, seed: int = 0) -> None:
    """``fn(x, W1, W2, W3) = (silu(x @ W1) * (x @ W3)) @ W2`` (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for case, (b, t, d, d_ff), dtype in [("d_model 4, d_ff 6", (2, 3, 4, 6), torch.float32),
                                         ("d_model 8, d_ff 12", (1, 5, 8, 12), torch.float32),
                                         ("float64 inputs", (2, 2, 6, 10), torch.float64)]:
        x = torch.randn(b, t, d, generator=g, dtype=dtype)
        w1, w3 = (torch.randn(d, d_ff, generator=g, dtype=dtype) for _ in range(2))
        w2 = torch.randn(d_ff, d, generator=g, dtype=dtype) / math.sqrt(d_ff)
        got = call(fn, (x, w1, w2, w3), f"swiglu ({case})")
        expected = (F.silu(x @ w1) * (x @ w3)) @ w2  # (batch, seq, d_model)
        problems = compare(got, expected, ("batch", "seq", "d_model"), mistakes=outputs(SWIGLU_MISTAKES, x, w1, w2, w3),
                           what=f"swiglu ({case})", promised=("x", x.dtype))
        if problems:
            report(f"swiglu ({case})", problems)
    report("swiglu", [])


MISTAKES = {
    "check_online_by_hand": ONLINE_BY_HAND_MISTAKES,
    "check_online_softmax_attention": ONLINE_MISTAKES,
    "check_cache_step": CACHE_MISTAKES,
    "check_repeat_kv": REPEAT_KV_MISTAKES,
    "check_swiglu": SWIGLU_MISTAKES,
}
