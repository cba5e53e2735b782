"""Hidden tests of assignment 12, from 2017 to today (references: PyTorch's F.scaled_dot_product_attention,
plain and causal, torch.cat, torch.repeat_interleave and F.silu, computed here; exercise 1 written out: after each
tile the running maximum and sum are those of all the scores read so far, which is what the update rule keeps).

Exercise 1 is the exercise's own worked example (the scores [1, 2, 4, 1] in two tiles): its answer is fixed by
the exercise's text, not drawn from the seed (``FIXED``). Every other input comes from the run's seed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import describe, fields, first, items, number, returns, tensor

ASSIGNMENT = "12_from_2017_to_today"
FIXED = {"ex1_online_by_hand"}  # the exercise's worked example: the same question in every run
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_online_by_hand": Forbid("running", ("torch.nn.functional.softmax", "torch.softmax")),
    "ex2_online_softmax_attention": Forbid("online_softmax_attention", (
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.softmax",
        "torch.softmax",
        "transformer",
    )),
    "ex3_cache_step": Forbid("cache_step", ("transformer",)),
    "ex4_repeat_kv": Forbid("repeat_kv", ("torch.repeat_interleave", "transformer")),
    "ex5_swiglu": Forbid("swiglu", ("transformer",)),
}
HEADS = ["batch", "heads", "seq", "d_h"]
SCORES = [1.0, 2.0, 4.0, 1.0]  # exercise 1's worked example: one query's scaled scores, in two tiles of two keys


# ----------------------------------------------------------------- exercise 1: by hand


def _by_hand_judge(got):
    if not isinstance(got, dict):
        return f"running: expected a dict, got {describe(got)}"
    want = _running(SCORES, 2)  # the scores [1, 2, 4, 1] in tiles of 2
    for key in ("m1", "l1", "m2", "l2"):
        if key not in got:
            return f"running is missing the key {key!r}"
    return first(*(number(got[key], want[key], 1e-3, f"running[{key!r}]") for key in want))


def _running(scores: list[float], block: int) -> dict[str, float]:
    """``m<i>``, ``l<i>`` after tile ``i``: the maximum of the scores read so far, the sum of their ``exp(s - m)``."""
    out = {}
    for i, end in enumerate(range(block, len(scores) + 1, block), 1):
        m = max(scores[:end])
        out[f"m{i}"], out[f"l{i}"] = m, sum(math.exp(s - m) for s in scores[:end])
    return out


def ex1_online_by_hand(seed: int):
    yield Case("running = {'m1', 'l1', 'm2', 'l2'}: the running maximum and sum after each tile (each within 1e-3)",
               reads("running"), _by_hand_judge)


# ----------------------------------------------------------------- exercise 2: key tiles


def ex2_online_softmax_attention(seed: int):
    g = generator(seed, "ex2_online_softmax_attention")
    r = lambda *shape, s=1.0, dtype=torch.float32: s * torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    for lead, t_q, t_k, d_k, d_v, spread in [((1,), 1, 4, 4, 3, 2.0), ((2,), 5, 7, 8, 4, 2.0),
                                             ((2, 3), 6, 11, 16, 16, 1.0), ((1,), 3, 9, 4, 2, 3.0)]:
        block = int(torch.randint(1, t_k, (1,), generator=g))  # at least two tiles
        q, k, v = r(*lead, t_q, d_k, s=spread), r(*lead, t_k, d_k), r(*lead, t_k, d_v)
        yield Case(f"online_softmax_attention with q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, "
                   f"tiles of {block} keys", calls("online_softmax_attention", q, k, v, block),
                   returns(F.scaled_dot_product_attention(q, k, v), ["..."] * len(lead) + ["T_q", "d_v"],
                           promised="q"))
    q, k, v = r(2, 4, 8), r(2, 5, 8), r(2, 5, 3)
    yield Case("online_softmax_attention with one tile holding every key (block_size larger than T_k)",
               calls("online_softmax_attention", q, k, v, 8),
               returns(F.scaled_dot_product_attention(q, k, v), ["batch", "T_q", "d_v"], promised="q"))
    q, k, v = r(1, 4, 8, s=12.0), r(1, 6, 8, s=12.0), r(1, 6, 3)
    yield Case("online_softmax_attention with scores near 100 (plain exp overflows float32), tiles of 2",
               calls("online_softmax_attention", q, k, v, 2),
               returns(F.scaled_dot_product_attention(q, k, v), ["batch", "T_q", "d_v"], promised="q"))
    q, k, v = (r(2, 2, 5, 8, dtype=torch.float64) for _ in range(3))
    yield Case("online_softmax_attention on float64 inputs returns float64 (tiles of 2)",
               calls("online_softmax_attention", q, k, v, 2),
               returns(F.scaled_dot_product_attention(q, k, v), HEADS[:2] + ["T_q", "d_v"], promised="q"))


# ----------------------------------------------------------------- exercise 3: the cache


def _cache_judge(q, k, v, k_cache, v_cache):
    keys, values = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)  # (batch, heads, T + 1, d_h)
    out_ref = F.scaled_dot_product_attention(q, keys, values)

    def judge(reply):
        got, _args = fields(reply, "out", "args")
        if not isinstance(got, (list, tuple)) or len(got) != 3:
            return f"expected a triple (out, k_cache, v_cache), got {describe(got)}"
        return first(*(f"{what}: {p}" if p else None for what, p in [
            ("k_cache", tensor(got[1], keys, dims=HEADS, exact=True)),
            ("v_cache", tensor(got[2], values, dims=HEADS, exact=True)),
            ("out", tensor(got[0], out_ref, dims=HEADS))]))
    return judge


def _loop_judge(q, k, v):
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (batch, heads, seq, d_h)

    def judge(reply):
        outs, k_cache, v_cache = fields(reply, "outs", "k_cache", "v_cache")
        outs = items(outs, q.shape[2], "the outputs of the steps")
        steps = [(f"step {t}", tensor(out, ref[:, :, t:t + 1], dims=HEADS)) for t, out in enumerate(outs)]
        return first(*(f"{what}: {p}" if p else None for what, p in [
            *steps, ("k_cache after the last step", tensor(k_cache, k, dims=HEADS, exact=True)),
            ("v_cache after the last step", tensor(v_cache, v, dims=HEADS, exact=True))]))
    return judge


def ex3_cache_step(seed: int):
    g = generator(seed, "ex3_cache_step")
    for t in [0, 1, int(torch.randint(2, 9, (1,), generator=g))]:
        b, h, d = (int(n) for n in torch.randint(1, 4, (3,), generator=g) * torch.tensor([1, 1, 2]))
        new = [torch.randn(b, h, 1, d, generator=g) for _ in range(3)]
        caches = [torch.randn(b, h, t, d, generator=g) for _ in range(2)]
        yield Case(f"cache_step with {t} cached token(s), (batch, heads, d_h) = ({b}, {h}, {d}): the caches one "
                   "position longer (exactly), out within atol 1e-5", calls("cache_step", *new, *caches),
                   _cache_judge(*new, *caches))
    seq = int(torch.randint(4, 9, (1,), generator=g))
    q, k, v = (torch.randn(2, 2, seq, 4, generator=g) for _ in range(3))  # (batch, heads, seq, d_h)
    yield Case(f"cache_step run {seq} times from an empty cache equals causal attention over the whole sequence",
               Request("a12.decode_loop", {"q": q, "k": k, "v": v}), _loop_judge(q, k, v))


# ----------------------------------------------------------------- exercise 4: repeat_kv


def ex4_repeat_kv(seed: int):
    g = generator(seed, "ex4_repeat_kv")
    for n_kv, n_rep in [(2, 3), (4, 2), (3, 1), (1, 4), tuple(int(n) for n in torch.randint(2, 5, (2,), generator=g))]:
        x = torch.randn(2, n_kv, 3, 4, generator=g)
        yield Case(f"repeat_kv with {n_kv} key/value head(s) of shape (batch, seq, d_h) = (2, 3, 4), n_rep = {n_rep} "
                   "(exact)", calls("repeat_kv", x, n_rep),
                   returns(torch.repeat_interleave(x, n_rep, dim=1), HEADS, exact=True))


# ----------------------------------------------------------------- exercise 5: SwiGLU


def ex5_swiglu(seed: int):
    g = generator(seed, "ex5_swiglu")
    for dtype in [torch.float32, torch.float32, torch.float64]:
        b, t = (int(n) for n in torch.randint(1, 5, (2,), generator=g))
        d, d_ff = int(torch.randint(2, 9, (1,), generator=g)), int(torch.randint(3, 17, (1,), generator=g))
        x = torch.randn(b, t, d, generator=g, dtype=dtype)
        w1, w3 = (torch.randn(d, d_ff, generator=g, dtype=dtype) for _ in range(2))
        w2 = torch.randn(d_ff, d, generator=g, dtype=dtype) / math.sqrt(d_ff)
        ref = (F.silu(x @ w1) * (x @ w3)) @ w2  # (batch, seq, d_model)
        yield Case(f"swiglu with x {tuple(x.shape)}, d_ff = {d_ff}, {str(dtype)[6:]}", calls("swiglu", x, w1, w2, w3),
                   returns(ref, ["batch", "seq", "d_model"], promised="x"))
