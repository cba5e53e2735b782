"""Checks for the exercises of chapter 4: queries, keys and values."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..attention import scaled_dot_product_attention
from ..masks import causal_mask
from .core import Mistake, call, compare, output_problems, outputs, report, values_of
from .earlier import builds_on
from .mistakes.a04 import ATTENTION_MISTAKES, CAUSAL_MASK_MISTAKES, SELF_ATTENTION_MISTAKES

__all__ = ["check_flying_arrows", "check_attention", "check_causal_mask", "check_self_attention",
           "flying_arrows_inputs"]

FLYING_ARROWS_TOLERANCE = 1e-3


def flying_arrows_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The classic exercise: embeddings of "flying" and "arrows"; q, k, v are dims 0-1, 2-3, 4-5.

    Returns ``q, k, v`` of shape ``(batch=1, seq=2, d=2)``.
    """
    x = torch.tensor([[0.0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]])[None]  # (1, 2, 6)
    return x[..., 0:2], x[..., 2:4], x[..., 4:6]


def _flying_arrows_mistakes() -> list[Mistake]:
    q, k, v = flying_arrows_inputs()
    out, w = scaled_dot_product_attention(q, k, v, return_weights=True)
    unscaled = scaled_dot_product_attention(q, k, v, scale=1.0)
    wrong_axis = (q @ k.transpose(-2, -1) / math.sqrt(2)).softmax(dim=-2) @ v
    return [
        Mistake("unscaled", "this is the output without dividing the scores by sqrt(d_k) = sqrt(2).", unscaled[0, 0]),
        Mistake("weights", "these are the attention weights of 'flying'; the output is their weighted sum of the "
                "values.", w[0, 0]),
        Mistake("softmax over the queries", "the softmax must run over the keys (each query's row), not over the "
                "queries.", wrong_axis[0, 0]),
        Mistake("the other word", "this is the output for 'arrows'; the question asks for 'flying' (the first word).",
                out[0, 1]),
    ]


FLYING_ARROWS_MISTAKES = _flying_arrows_mistakes()


def check_flying_arrows(answer) -> None:
    """The self-attention output for "flying" (2 numbers), within 1e-3."""
    __tracebackhide__ = True
    q, k, v = flying_arrows_inputs()
    out = scaled_dot_product_attention(q, k, v)
    mistakes = values_of(FLYING_ARROWS_MISTAKES)
    problems = compare(answer, out[0, 0], ("d_v",), atol=FLYING_ARROWS_TOLERANCE, rtol=0.0,
                       mistakes=mistakes, what="output for 'flying'")
    report("flying arrows", problems)


def _attention_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 6, generator=g)
    mask = torch.rand(2, 3, 5, generator=g) > 0.4
    mask[..., 0] = True  # every query may see at least one key
    return [("no mask", (q, k, v, None)), ("with a mask", (q, k, v, mask))]


def check_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(q, k, v, mask=None)`` must equal scaled dot-product attention (atol 1e-5)."""
    __tracebackhide__ = True
    for case, (q, k, v, mask) in _attention_cases(seed):
        _, problems = output_problems(fn, (q, k, v, mask), f"attention ({case})",
                                      scaled_dot_product_attention(q, k, v, mask), ("batch", "T_q", "d_v"),
                                      outputs(ATTENTION_MISTAKES, q, k, v, mask), f"output ({case})")
        if problems:
            report(f"attention ({case})", problems)
    report("attention", [])


def check_causal_mask(fn: Callable) -> None:
    """``fn(seq_len)`` must return the ``(seq_len, seq_len)`` bool mask, True = may attend."""
    __tracebackhide__ = True
    for n in (4, 7, 1):
        got = call(fn, (n,), f"causal_mask({n})")
        mistakes = outputs(CAUSAL_MASK_MISTAKES, n)
        problems = compare(got, causal_mask(n), ("T_q", "T_k"), dtype=torch.bool, mistakes=mistakes,
                           what=f"causal_mask({n})")
        if problems:
            report(f"causal_mask({n})", problems)
    report("causal_mask", [])


@builds_on(("attention", "exercise 2"))
def check_self_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(x, W_q, W_k, W_v)``: project ``x (batch, seq, d_model)`` with ``X W`` and attend (atol 1e-5)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 4, 6, generator=g)
    w_q, w_k, w_v = (torch.randn(6, 6, generator=g) / 6 ** 0.5 for _ in range(3))
    got = call(fn, (x, w_q, w_k, w_v), "self_attention")
    expected = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    mistakes = outputs(SELF_ATTENTION_MISTAKES, x, w_q, w_k, w_v)
    report("self_attention", compare(got, expected, ("batch", "seq", "d_model"),
                                      mistakes=mistakes, what="self_attention output"))


MISTAKES = {
    "check_flying_arrows": FLYING_ARROWS_MISTAKES,
    "check_attention": ATTENTION_MISTAKES,
    "check_causal_mask": CAUSAL_MASK_MISTAKES,
    "check_self_attention": SELF_ATTENTION_MISTAKES,
}
