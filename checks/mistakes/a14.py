"""The known mistakes of the exercises of chapter 14, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function with the exercise's signature, most written as the right answer with one step changed.
:mod:`checks.a14` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch

from ..core import Mistake

# ----------------------------------------------------------------------------- exercise 2: the banded mask


def _band(seq_len, window, low=None, causal=True):
    """``(seq_len, seq_len)`` bool: key ``s`` allowed for query ``t`` when ``s > t - low`` (and ``s <= t`` if
    ``causal``); ``low`` is ``window`` by default, the right band."""
    t = torch.arange(seq_len)[:, None]  # (seq_len, 1): the queries
    s = torch.arange(seq_len)[None, :]  # (1, seq_len): the keys
    band = s > t - (window if low is None else low)
    return band & (s <= t) if causal else band


WINDOW_MASK_MISTAKES = [
    Mistake("one key too many", "each query sees window + 1 keys, t - window .. t; with a window of W the query t "
            "sees W keys, itself included: t - W + 1 .. t (the key s is allowed when s > t - W).",
            lambda n, w: _band(n, w, low=w + 1)),
    Mistake("one key too few", "each query sees window - 1 keys; the window counts the query's own key too: "
            "t - W + 1 .. t, W keys in all.", lambda n, w: _band(n, w, low=w - 1)),
    Mistake("not causal", "the band reaches into the future: keys after the query (s > t) are allowed; keep the "
            "causal half, s <= t.", lambda n, w: _band(n, w) | _band(n, w).T),
    Mistake("the band above the diagonal", "the mask is transposed: row t is the query and column s the key, so the "
            "allowed keys sit on and below the diagonal.", lambda n, w: _band(n, w).T),
    Mistake("True where blocked", "True marks the keys that are hidden; in the book's masks True means 'may "
            "attend'.", lambda n, w: ~_band(n, w)),
    Mistake("causal only", "this is the plain causal mask: the window is missing, so a query sees every earlier key, "
            "not only the last W.", lambda n, w: _band(n, w, low=n + 1)),
]

# ----------------------------------------------------------------------------- exercise 3: the rolling cache's slots


def _held(t, window, shift=0, empty=-1):
    """``(window,)``: the position each slot holds after position ``t`` was written to slot ``(p + shift) % window``;
    ``empty`` where no position went."""
    out = torch.full((window,), empty, dtype=torch.int64)
    for p in range(max(0, t - window + 1), t + 1):
        out[(p + shift) % window] = p
    return out


def _oldest_first(t, window):
    positions = torch.arange(t - window + 1, t + 1)  # (window,): the last window positions, oldest first
    return torch.where(positions < 0, torch.tensor(-1), positions)


SLOT_MISTAKES = [
    Mistake("before writing t", "this is the cache just before position t is written: after writing it, slot "
            "t mod window holds t (and the position it overwrote, t - window, is gone).",
            lambda t, w: _held(t - 1, w) if t > 0 else torch.full((w,), -1, dtype=torch.int64)),
    Mistake("oldest first", "these are the kept positions in order of age; a rolling cache does not move what it "
            "holds: position p stays in slot p mod window until it is overwritten.", _oldest_first),
    Mistake("slots counted from 1", "position p went to slot (p + 1) mod window; positions count from 0, and "
            "position 0 goes to slot 0: slot p mod window.", lambda t, w: _held(t, w, shift=1)),
    Mistake("empty slots as 0", "a slot never written holds position 0 here; the exercise marks it with -1 (0 is a "
            "real position).", lambda t, w: _held(t, w, empty=0)),
    Mistake("window - 1 slots", "this cache has window - 1 slots; a buffer that writes position t before its query "
            "attends needs window slots (t - window + 1 .. t).",
            lambda t, w: _held(t, w - 1) if w > 1 else torch.zeros(0, dtype=torch.int64)),
]

# ----------------------------------------------------------------------------- exercise 4: the router's weights


def _gates(logits, k, renormalize, kept_softmax=False, dim=-1, largest=True, keep_all=False):
    """``(tokens, n_experts)``: the chosen experts' weights, 0 elsewhere, with one step changeable."""
    probs = logits.softmax(dim=dim)  # (tokens, n_experts)
    if keep_all:
        return probs
    chosen = logits.topk(k, dim=-1, largest=largest).indices  # (tokens, k)
    kept = torch.zeros_like(probs).scatter(1, chosen, probs.gather(1, chosen))  # (tokens, n_experts)
    if kept_softmax or renormalize:
        kept = kept / kept.sum(dim=-1, keepdim=True)
    return kept


ROUTER_MISTAKES = [
    Mistake("softmax after the top-k", "this is a softmax after the top-k (over the k kept scores), whose weights "
            "always sum to 1; with renormalize=False the softmax goes over every expert before the top-k and the kept "
            "weights stay as they are (as Hugging Face's Qwen3-MoE with norm_topk_prob=False).",
            lambda x, k, r: _gates(x, k, r, kept_softmax=True)),
    Mistake("not renormalised", "with renormalize=True the k kept weights are divided by their sum, so that they add "
            "up to 1 (Mixtral; Hugging Face's norm_topk_prob).", lambda x, k, r: _gates(x, k, False)),
    Mistake("softmax over the tokens", "the softmax went over the tokens (dim 0); each token's probabilities are a "
            "softmax over the experts, the last axis.", lambda x, k, r: _gates(x, k, r, dim=0)),
    Mistake("the k smallest", "these are the k experts with the lowest scores; the router keeps the k highest "
            "(topk's default, largest=True).", lambda x, k, r: _gates(x, k, r, largest=False)),
    Mistake("every expert kept", "every expert has a weight here; only the k chosen experts of a token get one, the "
            "others 0.", lambda x, k, r: _gates(x, k, r, keep_all=True)),
    Mistake("the k weights alone", "this is (tokens, k), the kept weights without their experts; return the full "
            "(tokens, n_experts) table, each weight in its expert's column and 0 elsewhere.",
            lambda x, k, r: _gates(x, k, r).topk(k, dim=-1).values),
]

# ----------------------------------------------------------------------------- exercise 5: the balancing loss


def _loss(probs, experts, n_experts, factor=None, per_choice=False, counts_only=False, f_from_probs=False):
    """``n_experts * sum_i f_i P_i`` with one step changeable."""
    counts = torch.bincount(experts.reshape(-1), minlength=n_experts).to(probs.dtype)  # (n_experts,)
    f = counts if counts_only else counts / (experts.numel() if per_choice else experts.shape[0])
    p = probs.mean(dim=0)  # (n_experts,)
    if f_from_probs:
        f = p
    return (n_experts if factor is None else factor) * (f * p).sum()


BALANCE_MISTAKES = [
    Mistake("no factor n_experts", "the sum is not multiplied by the number of experts; with it the loss is k when "
            "the load is even, whatever the number of experts.", lambda p, e, n: _loss(p, e, n, factor=1)),
    Mistake("f as a share of all choices", "f_i was divided by tokens * k, so the f_i sum to 1; the exercise counts "
            "expert i's choices per token (as Hugging Face's Mixtral), so the f_i sum to k.",
            lambda p, e, n: _loss(p, e, n, per_choice=True)),
    Mistake("counts not divided", "f_i is expert i's number of choices per token: divide its count by the number "
            "of tokens.", lambda p, e, n: _loss(p, e, n, counts_only=True)),
    Mistake("f from the probabilities", "f_i was taken from the router's probabilities, so P_i counts twice; f_i "
            "counts the experts actually chosen, from experts (the counts carry no gradient, P_i carries it).",
            lambda p, e, n: _loss(p, e, n, f_from_probs=True)),
    Mistake("n_experts squared", "the sum was multiplied by n_experts twice; once is the Switch loss's scale.",
            lambda p, e, n: _loss(p, e, n, factor=n * n)),
]

# ----------------------------------------------------------------------------- exercise 6: YaRN's ramp


def _yarn(d, base, factor, original, beta_fast=32, beta_slow=1, reverse=False, rounded=True, times=False,
          turn=2 * math.pi, swap=False, ramp_on=True):
    """``(d // 2,)`` float64: YaRN's frequencies with one step changeable."""
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d / 2,)

    def index(turns):  # the pair that turns `turns` times in `original` positions
        return d * math.log(original / (turns * turn)) / (2 * math.log(base))

    low, high = (index(beta_slow), index(beta_fast)) if swap else (index(beta_fast), index(beta_slow))
    if rounded:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    high = high + 0.001 if low == high else high
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)  # (d / 2,)
    ramp = 1 - ramp if reverse else ramp if ramp_on else torch.ones_like(ramp)
    return (omega * factor if times else omega / factor) * ramp + omega * (1 - ramp)


YARN_MISTAKES = [
    Mistake("the ramp reversed", "the fast pairs were divided by factor and the slow ones kept; YaRN keeps the pairs "
            "that turn many times in the training length (small i, ramp 0) and divides the slow ones (ramp 1).",
            lambda *a: _yarn(*a, reverse=True)),
    Mistake("every pair divided", "every frequency was divided by factor: that is position interpolation; YaRN keeps "
            "the fast pairs as they are and ramps between.", lambda *a: _yarn(*a, ramp_on=False)),
    Mistake("multiplied by factor", "the slow pairs' frequencies were multiplied by factor; to stretch the context "
            "they turn more slowly: omega_i / factor.", lambda *a: _yarn(*a, times=True)),
    Mistake("not rounded", "low and high were left as they are; they are rounded outward first, low down (floor) "
            "and high up (ceil), as Hugging Face does by default.", lambda *a: _yarn(*a, rounded=False)),
    Mistake("turns without 2 pi", "a pair turns omega_i * original / (2 pi) times in the training length: the 2 pi "
            "is missing from i(r).", lambda *a: _yarn(*a, turn=1.0)),
    Mistake("beta_fast and beta_slow swapped", "low comes from beta_fast (the pairs that turn 32 times, small i) and "
            "high from beta_slow (once, larger i); here they are swapped.", lambda *a: _yarn(*a, swap=True)),
]
