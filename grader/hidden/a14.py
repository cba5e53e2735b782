"""Hidden tests of assignment 14, today's open models (references written out here, over Python loops in float64:
the cache sizes from the models' shapes; the banded causal mask, key ``s`` allowed for query ``t`` when
``t - window < s <= t``; the ring buffer's slots, each position ``p`` written to slot ``p % window`` in turn; the
router's weights, a softmax over every expert, the ``k`` largest kept and renormalised if asked; Switch's loss
``n_experts * sum_i f_i P_i``; YaRN's frequencies pair by pair).

Exercise 1 is the exercise's own models: its answer is fixed by the exercise's text, not drawn from the seed
(``FIXED``). Every other input comes from the run's seed. The dtype the texts of exercises 4 and 5 promise is scored
(float64 cases among them).
"""

from __future__ import annotations

import math

import torch

from grader.hidden import Case, Forbid, calls, generator, reads
from grader.hidden.judge import describe, first, number, returns

ASSIGNMENT = "14_open_models"
FIXED = {"ex1_cache_by_hand"}  # the exercise's own models: the same question in every run
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_cache_by_hand": Forbid("cache", ("transformer",)),
    "ex2_window_mask": Forbid("sliding_window_mask", ("transformer",)),
    "ex3_slot_positions": Forbid("slot_positions", ("transformer",)),
    "ex4_router_weights": Forbid("router_weights", ("transformer",)),
    "ex5_balancing_loss": Forbid("load_balancing_loss", ("transformer",)),
    "ex6_yarn_frequencies": Forbid("yarn_frequencies", ("transformer",)),
}


# ----------------------------------------------------------------- exercise 1: by hand


def _cache_judge(got):
    if not isinstance(got, dict):
        return f"cache: expected a dict, got {describe(got)}"
    for key in ("mha", "gqa", "mla", "window"):
        if key not in got:
            return f"cache is missing the key {key!r}"
    d_h = 128
    llama, mistral = 2 * 32 * d_h, 2 * 8 * d_h  # a key and a value per key/value head: 32 (Llama 2 7B), 8 (Mistral)
    latent = 512 + 64  # DeepSeek-V2: the latent and the one rotated key all heads share
    ring = 4096 * mistral  # Mistral's window of 4096 slots, full after 32768 tokens
    return first(*(number(got[key], want, 0.5, f"cache[{key!r}]")
                   for key, want in (("mha", llama), ("gqa", mistral), ("mla", latent), ("window", ring))))


def ex1_cache_by_hand(seed: int):
    yield Case("cache = {'mha', 'gqa', 'mla', 'window'}: the numbers the exercise's caches keep (each exact)",
               reads("cache"), _cache_judge)


# ----------------------------------------------------------------- exercise 2: the banded mask


def _band(seq_len: int, window: int) -> torch.Tensor:
    return torch.tensor([[t - window < s <= t for s in range(seq_len)] for t in range(seq_len)], dtype=torch.bool)


def ex2_window_mask(seed: int):
    g = generator(seed, "ex2_window_mask")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    n1, n2, n3 = draw(6, 13), draw(3, 9), draw(4, 10)
    for n, w, what in [(n1, draw(2, n1 - 1), "a window shorter than the sequence"), (n2, 1, "a window of 1"),
                       (n3, n3 + draw(0, 4), "a window as long as the sequence or longer"),
                       (draw(10, 17), draw(3, 6), "a longer sequence")]:
        yield Case(f"sliding_window_mask({n}, {w}), {what}: a ({n}, {n}) bool tensor, query t on keys t - {w} + 1 .. t",
                   calls("sliding_window_mask", n, w), returns(_band(n, w), ["T_q", "T_k"]))


# ----------------------------------------------------------------- exercise 3: the rolling cache's slots


def _ring(t: int, window: int) -> torch.Tensor:
    """Writes positions 0 .. t one after another into slot ``p % window``."""
    slots = [-1] * window
    for p in range(t + 1):
        slots[p % window] = p
    return torch.tensor(slots, dtype=torch.int64)


def ex3_slot_positions(seed: int):
    g = generator(seed, "ex3_slot_positions")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    w1, w2, w3 = draw(3, 8), draw(4, 9), draw(2, 7)
    for t, w, what in [(draw(0, w1 - 1), w1, "before the buffer is full"),
                       (draw(3, 6) * w2 + draw(0, w2 - 1), w2, "after it went round several times"),
                       (draw(2, 5) * w3 - 1, w3, "on the last slot of a round"), (draw(0, 20), 1, "a window of 1"),
                       (draw(40, 200), draw(5, 12), "far past the window")]:
        yield Case(f"slot_positions({t}, {w}), {what}: a ({w},) tensor of positions, -1 for an empty slot",
                   calls("slot_positions", t, w), returns(_ring(t, w), ["window"]))


# ----------------------------------------------------------------- exercise 4: the router's weights


def _gates(logits: torch.Tensor, k: int, renormalize: bool) -> torch.Tensor:
    """Token by token: softmax over every expert, the ``k`` largest kept (0 elsewhere), divided by their sum if
    ``renormalize``."""
    out = []
    for row in logits.double().tolist():
        top = max(row)
        e = [math.exp(x - top) for x in row]
        probs = [x / sum(e) for x in e]
        chosen = sorted(range(len(row)), key=lambda i: row[i], reverse=True)[:k]
        kept = sum(probs[i] for i in chosen) if renormalize else 1.0
        out.append([probs[i] / kept if i in chosen else 0.0 for i in range(len(row))])
    return torch.tensor(out, dtype=torch.float64)


def ex4_router_weights(seed: int):
    g = generator(seed, "ex4_router_weights")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    n1, n2, n3, n4 = draw(4, 9), draw(4, 9), draw(3, 7), draw(5, 9)
    for (tokens, n, k), renormalize, dtype in [((draw(3, 9), n1, 2), True, torch.float32),
                                               ((draw(3, 9), n2, draw(2, n2)), False, torch.float32),
                                               ((draw(2, 6), n3, 1), True, torch.float32),
                                               ((draw(2, 6), n3, 1), False, torch.float32),
                                               ((draw(3, 7), n4, draw(2, 4)), True, torch.float64),
                                               ((draw(3, 7), n4, draw(2, 4)), False, torch.float64)]:
        logits = (1 + torch.rand((), generator=g).item()) * torch.randn(tokens, n, generator=g, dtype=dtype)
        yield Case(f"router_weights on ({tokens}, {n}) scores, k={k}, renormalize={renormalize}, {str(dtype)[6:]}",
                   calls("router_weights", logits, k, renormalize),
                   returns(_gates(logits, k, renormalize).to(dtype), ["tokens", "n_experts"], promised="logits"))


# ----------------------------------------------------------------- exercise 5: the balancing loss


def _switch_loss(probs: torch.Tensor, experts: torch.Tensor, n_experts: int) -> torch.Tensor:
    """``n_experts * sum_i f_i P_i``: ``f_i`` the choices of expert ``i`` per token, ``P_i`` its mean probability."""
    rows, chosen = probs.double().tolist(), experts.tolist()
    f = [sum(row.count(i) for row in chosen) / len(rows) for i in range(n_experts)]
    p = [sum(row[i] for row in rows) / len(rows) for i in range(n_experts)]
    return torch.tensor(n_experts * sum(a * b for a, b in zip(f, p, strict=True)), dtype=torch.float64)


def _routing(g, tokens: int, n: int, k: int, dtype, skew: float):
    """Softmax probabilities with a bias ``skew`` towards expert 0 (an uneven load), and each token's top k."""
    logits = 1.5 * torch.randn(tokens, n, generator=g, dtype=dtype)
    logits[:, 0] += skew
    probs = logits.softmax(dim=-1)
    return probs, probs.topk(k, dim=-1).indices


def ex5_balancing_loss(seed: int):
    g = generator(seed, "ex5_balancing_loss")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    for tokens, n, k, dtype, skew in [(draw(8, 30), draw(4, 9), 2, torch.float32, 0.0),
                                      (draw(8, 30), draw(3, 7), 1, torch.float32, 0.0),
                                      (draw(8, 30), draw(4, 9), 2, torch.float32, 3.0),
                                      (draw(8, 30), draw(5, 9), 3, torch.float64, 1.0)]:
        probs, experts = _routing(g, tokens, n, k, dtype, skew)
        load = "an uneven load" if skew else "random scores"
        yield Case(f"load_balancing_loss of {tokens} tokens, {n} experts, k={k}, {load}, {str(dtype)[6:]}",
                   calls("load_balancing_loss", probs, experts, n),
                   returns(_switch_loss(probs, experts, n).to(dtype), [], promised="probs"))


# ----------------------------------------------------------------- exercise 6: YaRN's ramp


def _yarn(d: int, base: float, factor: float, original: int, beta_fast: float = 32, beta_slow: float = 1):
    """Pair by pair, as Hugging Face's ``_compute_yarn_parameters``: the ramp from the pair that turns ``beta_fast``
    times in ``original`` positions (rounded down) to the one that turns ``beta_slow`` times (rounded up)."""
    def pair(turns):
        return d * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(pair(beta_fast)), 0), min(math.ceil(pair(beta_slow)), d - 1)
    high = high + 0.001 if low == high else high
    out = []
    for i in range(d // 2):
        omega = base ** (-2 * i / d)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        out.append((1 - ramp) * omega + ramp * omega / factor)
    return torch.tensor(out, dtype=torch.float64)


def ex6_yarn_frequencies(seed: int):
    g = generator(seed, "ex6_yarn_frequencies")
    pick = lambda options: options[int(torch.randint(len(options), (), generator=g))]  # noqa: E731
    for betas in [(), (), (), (pick([8, 16, 24]), pick([2, 3]))]:
        d, base = pick([32, 64, 128]), pick([10000.0, 500000.0, 1000000.0])
        factor, original = pick([2.0, 4.0, 8.0, 16.0, 40.0]), pick([64, 256, 2048, 4096, 8192])
        args = (d, base, factor, original, *betas)
        what = "other betas" if betas else "the default betas"
        yield Case(f"yarn_frequencies{args}, {what}: a ({d // 2},) tensor of frequencies",
                   calls("yarn_frequencies", *args), returns(_yarn(*args), ["d // 2"], atol=0.0, rtol=1e-4))
