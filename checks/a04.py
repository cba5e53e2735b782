"""Checks for the exercises of chapter 4: queries, keys and values."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from transformer.attention import attention_with_weights, scaled_dot_product_attention

from .core import Mistake, call, compare, output_problems, outputs, report, values_of
from .earlier import builds_on
from .mistakes.a04 import ATTENTION_MISTAKES, KERNEL_REGRESSION_MISTAKES, SELF_ATTENTION_MISTAKES

__all__ = ["check_flying_arrows", "check_attention", "check_kernel_regression", "check_self_attention",
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
    out, w = attention_with_weights(q, k, v)
    unscaled = (q @ k.transpose(-2, -1)).softmax(dim=-1) @ v
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


KERNEL_REGRESSION_BY_HAND = 1 + 2 / (math.e ** 2 + 1)
"""The estimate at x = 0 from the samples (0, 1) and (2, 3): (1 + 3 e^-2) / (1 + e^-2), worked by hand."""


def _kernel_regression_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    x_train = (10 * torch.rand(7, generator=g)).sort().values
    y_train = torch.randn(7, generator=g)
    return [("the example worked by hand", (torch.tensor([0.0]), torch.tensor([0.0, 2.0]), torch.tensor([1.0, 3.0]))),
            ("random samples", (10 * torch.rand(5, generator=g), x_train, y_train)),
            ("a query far from every sample, x = 100", (torch.tensor([100.0]), x_train, y_train)),
            ("float64 inputs", (torch.rand(3, generator=g, dtype=torch.float64), x_train.double(), y_train.double()))]


def _nadaraya_watson(x, x_train, y_train):
    """The reference: attention with q = (x, 1), k_i = (x_i, -x_i^2 / 2) and no scaling (chapter 4)."""
    q = torch.stack([x, torch.ones_like(x)], dim=-1)                  # (m, 2)
    k = torch.stack([x_train, -x_train ** 2 / 2], dim=-1)             # (n, 2)
    return (q @ k.T).softmax(dim=-1) @ y_train  # (m, n) @ (n,) -> (m,)


def check_kernel_regression(fn: Callable, seed: int = 0) -> None:
    """``fn(x, x_train, y_train)``: the Nadaraya–Watson estimate with the Gaussian kernel, ``(m,)``, in the dtype of
    ``x`` (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    for case, (x, x_train, y_train) in _kernel_regression_cases(seed):
        got = call(fn, (x, x_train, y_train), f"kernel_regression ({case})")
        expected = _nadaraya_watson(x, x_train, y_train)
        if case == "the example worked by hand":
            expected = torch.tensor([KERNEL_REGRESSION_BY_HAND])
        mistakes = outputs(KERNEL_REGRESSION_MISTAKES, x, x_train, y_train)
        problems = compare(got, expected, ("m",), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                           what=f"estimate ({case})", promised=("x", x.dtype))
        if problems and case.startswith("a query far"):
            problems.append("every kernel value exp(-(x - x_i)^2 / 2) underflows to 0 here; a softmax of the scores "
                            "-(x - x_i)^2 / 2 stays finite.")
        if problems:
            report(f"kernel_regression ({case})", problems)
    report("kernel_regression", [])


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
    "check_kernel_regression": KERNEL_REGRESSION_MISTAKES,
    "check_self_attention": SELF_ATTENTION_MISTAKES,
}
