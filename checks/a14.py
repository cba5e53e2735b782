"""Checks for the exercises of chapter 14: today's open models.

The references: the cache sizes of the exercise's models written out for exercise 1; the chapter's
:func:`~transformer.masks.sliding_window_mask` for exercise 2; the ring buffer's slots written out for exercise 3;
the chapter's :class:`~transformer.moe.Router` for exercise 4; its :func:`~transformer.moe.load_balancing_loss` for
exercise 5; its :func:`~transformer.rope_scaling.rope_frequencies` for exercise 6.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from transformer.masks import sliding_window_mask
from transformer.moe import MoEConfig, Router, load_balancing_loss
from transformer.rope_scaling import rope_frequencies

from .answers import check_numbers_by_hand
from .core import Mistake, call, compare, outputs, report
from .mistakes.a14 import BALANCE_MISTAKES, ROUTER_MISTAKES, SLOT_MISTAKES, WINDOW_MASK_MISTAKES, YARN_MISTAKES

__all__ = ["check_cache_by_hand", "check_window_mask", "check_slot_positions", "check_router_weights",
           "check_balancing_loss", "check_yarn_frequencies", "CACHE_MODELS", "cache_by_hand"]

# exercise 1: the shapes of three open models (their configurations and papers) and a context of 32k tokens
CACHE_MODELS = {
    "mha": {"model": "Llama 2 7B", "n_heads": 32, "n_kv_heads": 32, "d_h": 128},
    "gqa": {"model": "Mistral 7B", "n_heads": 32, "n_kv_heads": 8, "d_h": 128, "window": 4096},
    "mla": {"model": "DeepSeek-V2", "n_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
}
CONTEXT = 32768
BY_HAND_TOLERANCE = 0.5  # whole numbers
BY_HAND_KEYS = ("mha", "gqa", "mla", "window")


def cache_by_hand() -> dict[str, int]:
    """Numbers kept per token and layer (``mha``, ``gqa``, ``mla``) and in one layer's rolling cache after
    :data:`CONTEXT` tokens (``window``)."""
    mha, gqa, mla = (CACHE_MODELS[k] for k in ("mha", "gqa", "mla"))
    per_token = 2 * gqa["n_kv_heads"] * gqa["d_h"]  # a key and a value per key/value head
    return {"mha": 2 * mha["n_kv_heads"] * mha["d_h"], "gqa": per_token,
            "mla": mla["kv_lora_rank"] + mla["qk_rope_head_dim"], "window": min(gqa["window"], CONTEXT) * per_token}


# ----------------------------------------------------------------------------- exercise 1


def _cache_mistakes() -> list[Mistake]:
    t = lambda x: torch.tensor(float(x), dtype=torch.float64)  # noqa: E731
    mla, d_h = CACHE_MODELS["mla"], 128
    return [
        Mistake("keys only", "only the keys were counted; each head keeps a key and a value.", t(32 * d_h), "mha"),
        Mistake("one head", "this is one head's key and value; multi-head attention keeps one of each per head.",
                t(2 * d_h), "mha"),
        Mistake("query heads", "this counts a key and a value for each of the 32 query heads; grouped-query "
                "attention keeps them for its 8 key/value heads only.", t(2 * 32 * d_h), "gqa"),
        Mistake("keys only", "only the keys were counted; each key/value head keeps a key and a value.",
                t(8 * d_h), "gqa"),
        Mistake("the latent only", "the latent c was counted, not the rotated key k_rope that is cached beside it "
                "(RoPE cannot act on the latent).", t(mla["kv_lora_rank"]), "mla"),
        Mistake("a rotated key per head", "k_rope was counted once per head; one rotated key is shared by all the "
                "heads.", t(mla["kv_lora_rank"] + mla["n_heads"] * mla["qk_rope_head_dim"]), "mla"),
        Mistake("the whole context", "this is the full cache of 32768 tokens; the rolling cache keeps only the last "
                "window of them.", t(CONTEXT * 2 * 8 * d_h), "window"),
        Mistake("one token", "this is one token's share; the rolling cache holds a key and a value for each of its "
                "window slots.", t(2 * 8 * d_h), "window"),
        Mistake("keys only", "only the keys were counted; every slot holds a key and a value.",
                t(4096 * 8 * d_h), "window"),
    ]


CACHE_MISTAKES = _cache_mistakes()


def check_cache_by_hand(answer) -> None:
    """``answer = {"mha", "gqa", "mla", "window"}``: numbers kept by the caches of the exercise, each exact."""
    __tracebackhide__ = True
    right = cache_by_hand()
    check_numbers_by_hand("cache by hand", answer, {k: right[k] for k in BY_HAND_KEYS}, CACHE_MISTAKES,
                          BY_HAND_TOLERANCE)


# ----------------------------------------------------------------------------- exercise 2


def check_window_mask(fn: Callable) -> None:
    """``fn(seq_len, window)``: the ``(seq_len, seq_len)`` bool banded causal mask, query ``t`` on keys
    ``t - window + 1 .. t``."""
    __tracebackhide__ = True
    for n, w in [(6, 3), (8, 1), (5, 5), (4, 7), (9, 4)]:
        got = call(fn, (n, w), f"sliding_window_mask({n}, {w})")
        problems = compare(got, sliding_window_mask(n, w), ("T_q", "T_k"), dtype=torch.bool,
                           mistakes=outputs(WINDOW_MASK_MISTAKES, n, w), what=f"sliding_window_mask({n}, {w})")
        if problems:
            report(f"sliding_window_mask({n}, {w})", problems)
    report("sliding_window_mask", [])


# ----------------------------------------------------------------------------- exercise 3


def ring_positions(t: int, window: int) -> torch.Tensor:
    """``(window,)`` int64: the position each slot of a ring buffer of ``window`` slots holds after position ``t`` was
    written to slot ``t % window``; -1 for a slot not written yet."""
    slots = torch.arange(window)  # (window,)
    held = t - (t - slots) % window  # the latest position p <= t with p % window == slot
    return torch.where(held >= 0, held, torch.tensor(-1))


def check_slot_positions(fn: Callable) -> None:
    """``fn(t, window)``: ``(window,)`` int64, the position in each slot of the rolling cache after writing ``t``."""
    __tracebackhide__ = True
    for t, w in [(9, 4), (2, 4), (0, 3), (13, 5), (6, 1), (10, 6)]:
        got = call(fn, (t, w), f"slot_positions({t}, {w})")
        problems = compare(got, ring_positions(t, w), ("window",), mistakes=outputs(SLOT_MISTAKES, t, w),
                           what=f"slot_positions({t}, {w})")
        if problems:
            report(f"slot_positions({t}, {w})", problems)
    report("slot_positions", [])


# ----------------------------------------------------------------------------- exercise 4


def router_gates(logits: torch.Tensor, k: int, renormalize: bool) -> torch.Tensor:
    """``(tokens, n_experts)``: the weights of the chapter's :class:`~transformer.moe.Router` (with ``W_r`` the
    identity, so that its scores are ``logits``) in their experts' columns, 0 elsewhere."""
    n = logits.shape[-1]
    router = Router(n, MoEConfig(n_experts=n, top_k=k, renormalize=renormalize)).to(logits.dtype)
    with torch.no_grad():
        router.weight.copy_(torch.eye(n, dtype=logits.dtype))
        weights, experts, _ = router(logits)  # (tokens, k) twice
    return torch.zeros_like(logits).scatter(1, experts, weights)


def check_router_weights(fn: Callable, seed: int = 0) -> None:
    """``fn(logits, k, renormalize)``: ``(tokens, n_experts)`` in the dtype of ``logits`` (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for (tokens, n, k), renormalize, dtype in [((5, 4, 2), True, torch.float32), ((6, 8, 2), False, torch.float32),
                                               ((4, 6, 1), True, torch.float32), ((3, 5, 3), False, torch.float64),
                                               ((4, 3, 3), False, torch.float32)]:
        logits = 2 * torch.randn(tokens, n, generator=g, dtype=dtype)
        case = f"{tokens} tokens, {n} experts, k={k}, renormalize={renormalize}, {str(dtype)[6:]}"
        got = call(fn, (logits, k, renormalize), f"router_weights ({case})")
        problems = compare(got, router_gates(logits, k, renormalize), ("tokens", "n_experts"),
                           mistakes=outputs(ROUTER_MISTAKES, logits, k, renormalize),
                           what=f"router_weights ({case})", promised=("logits", dtype))
        if problems:
            report(f"router_weights ({case})", problems)
    report("router_weights", [])


# ----------------------------------------------------------------------------- exercise 5


def routing_inputs(g: torch.Generator, tokens: int, n: int, k: int, dtype=torch.float32):
    """``probs (tokens, n)``, a softmax of random scores, and ``experts (tokens, k)``, each token's top k."""
    probs = (1.5 * torch.randn(tokens, n, generator=g, dtype=dtype)).softmax(dim=-1)
    return probs, probs.topk(k, dim=-1).indices


def check_balancing_loss(fn: Callable, seed: int = 0) -> None:
    """``fn(probs, experts, n_experts)``: Switch's loss, a 0-dimensional tensor in the dtype of ``probs`` (atol 1e-5,
    rtol 1e-4)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for tokens, n, k, dtype in [(8, 4, 2, torch.float32), (10, 6, 1, torch.float32), (7, 5, 3, torch.float64)]:
        probs, experts = routing_inputs(g, tokens, n, k, dtype)
        case = f"{tokens} tokens, {n} experts, k={k}, {str(dtype)[6:]}"
        got = call(fn, (probs, experts, n), f"load_balancing_loss ({case})")
        problems = compare(got, load_balancing_loss(probs, experts, n), (),
                           mistakes=outputs(BALANCE_MISTAKES, probs, experts, n),
                           what=f"load_balancing_loss ({case})", promised=("probs", dtype))
        if problems:
            report(f"load_balancing_loss ({case})", problems)
    report("load_balancing_loss", [])


# ----------------------------------------------------------------------------- exercise 6

YARN_TOLERANCE = {"atol": 0.0, "rtol": 1e-4}  # relative: the slow pairs' frequencies are far below any atol


def check_yarn_frequencies(fn: Callable) -> None:
    """``fn(d, base, factor, original, beta_fast=32, beta_slow=1)``: YaRN's ``(d // 2,)`` frequencies, as Hugging
    Face computes them (rtol 1e-4)."""
    __tracebackhide__ = True
    for args in [(16, 10000.0, 4.0, 64), (64, 10000.0, 8.0, 2048), (32, 500000.0, 16.0, 8192), (8, 100.0, 2.0, 16),
                 (128, 10000.0, 4.0, 4096, 16, 2)]:
        d, base, factor, original, *betas = args
        settings = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original,
                    **dict(zip(("beta_fast", "beta_slow"), betas))}
        case = f"yarn_frequencies{args}"
        got = call(fn, args, case)
        problems = compare(got, rope_frequencies(d, base, settings)[0], ("d // 2",),
                           mistakes=outputs(YARN_MISTAKES, *args), what=case, **YARN_TOLERANCE)
        if problems:
            report(case, problems)
    report("yarn_frequencies", [])


MISTAKES = {
    "check_cache_by_hand": CACHE_MISTAKES,
    "check_window_mask": WINDOW_MASK_MISTAKES,
    "check_slot_positions": SLOT_MISTAKES,
    "check_router_weights": ROUTER_MISTAKES,
    "check_balancing_loss": BALANCE_MISTAKES,
    "check_yarn_frequencies": YARN_MISTAKES,
}
