"""Checks for the exercises of chapter 13: looking inside.

The references: the chapter's own scores (:func:`transformer.induction.previous_token_scores` and
:func:`~transformer.induction.induction_scores`) for exercises 1 and 2; the chapter's definition of direct logit
attribution, written out below, for exercise 3; the restored fraction, written out, for exercise 4.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from transformer.induction import induction_scores, previous_token_scores

from .answers import check_numbers_by_hand
from .core import Mistake, call, call_keeping, compare, fail, outputs, report
from .mistakes.a13 import DLA_MISTAKES, INDUCTION_MISTAKES, RESTORED_MISTAKES

__all__ = ["check_scores_by_hand", "check_induction_score", "check_direct_logit_attribution",
           "check_restored_fractions", "BY_HAND_PATTERN", "scores_by_hand"]

# exercise 1: one head on <bos> A B C A B C (half = 3); row t holds the weights of query t on keys 0 .. t
BY_HAND_PATTERN = ((1.0,), (0.5, 0.5), (0.2, 0.6, 0.2), (0.1, 0.2, 0.6, 0.1), (0.0, 0.1, 0.7, 0.2, 0.0),
                   (0.0, 0.0, 0.1, 0.8, 0.1, 0.0), (0.1, 0.0, 0.0, 0.1, 0.5, 0.3, 0.0))
BY_HAND_HALF = 3
BY_HAND_TOLERANCE = 1e-3
BY_HAND_KEYS = ("previous", "induction")


def _by_hand_pattern() -> torch.Tensor:
    """``(1, 1, 7, 7)`` float64: :data:`BY_HAND_PATTERN` with zeros above the diagonal."""
    w = torch.zeros(len(BY_HAND_PATTERN), len(BY_HAND_PATTERN), dtype=torch.float64)
    for t, row in enumerate(BY_HAND_PATTERN):
        w[t, : t + 1] = torch.tensor(row, dtype=torch.float64)
    return w[None, None]


def scores_by_hand() -> dict[str, float]:
    """The previous-token and induction scores of :data:`BY_HAND_PATTERN`, by the chapter's functions."""
    w = _by_hand_pattern()
    return {"previous": float(previous_token_scores(w)[0]), "induction": float(induction_scores(w, BY_HAND_HALF)[0])}


# ----------------------------------------------------------------------------- exercise 1


def _scores_by_hand_mistakes() -> list[Mistake]:
    w = _by_hand_pattern()[0, 0]  # (7, 7)
    half, t = BY_HAND_HALF, lambda x: torch.tensor(float(x), dtype=torch.float64)  # noqa: E731
    below, rows = w.diagonal(-1), torch.arange(half + 1, 2 * half + 1)  # (6,): w[t, t - 1]; the repeat's queries
    stripe = w[rows, rows - half + 1]  # (3,): the induction keys
    return [
        Mistake("divided by every row", "the mean went over 7 rows, but query 0 (<bos>) has no previous token: "
                "average w[t, t - 1] over the 6 queries t = 1 .. 6.", t(below.sum() / 7), "previous"),
        Mistake("the main diagonal", "this is the weight of each token on itself (the main diagonal); the previous "
                "token is one column to the left, w[t, t - 1].", t(w.diagonal()[1:].mean()), "previous"),
        Mistake("previous summed", "the weights were summed; the score is their mean.", t(below.sum()), "previous"),
        Mistake("the two swapped", "this is the induction score; the previous-token score averages w[t, t - 1].",
                t(stripe.mean()), "previous"),
        Mistake("the two swapped", "this is the previous-token score; the induction score averages "
                "w[t, t - half + 1] over the repeat's queries.", t(below.mean()), "induction"),
        Mistake("the earlier copy itself", "this is the weight on the earlier copy of the same token; the induction "
                "key is the position just after it, t - half + 1.", t(w[rows, rows - half].mean()), "induction"),
        Mistake("first half included", "queries of the first half have no earlier copy; average only over the "
                "repeat's queries 4, 5, 6.", t(w.diagonal(-(half - 1)).mean()), "induction"),
        Mistake("the previous token in the repeat", "this is the weight on the previous token over the repeat; the "
                "induction key is t - half + 1, the token after the earlier copy.", t(below[half:].mean()),
                "induction"),
        Mistake("induction summed", "the weights were summed; the score is their mean.", t(stripe.sum()), "induction"),
    ]


SCORES_BY_HAND_MISTAKES = _scores_by_hand_mistakes()


def check_scores_by_hand(answer) -> None:
    """``answer = {"previous": ..., "induction": ...}``: the two scores of the exercise's pattern, each within 1e-3."""
    __tracebackhide__ = True
    right = scores_by_hand()
    check_numbers_by_hand("scores by hand", answer, {k: right[k] for k in BY_HAND_KEYS}, SCORES_BY_HAND_MISTAKES,
                          BY_HAND_TOLERANCE)


# ----------------------------------------------------------------------------- exercise 2


def causal_patterns(g: torch.Generator, batch: int, heads: int, seq: int, dtype=torch.float32) -> torch.Tensor:
    """``(batch, heads, seq, seq)``: softmax of random scores under a causal mask, rows summing to 1."""
    scores = 2 * torch.randn(batch, heads, seq, seq, generator=g, dtype=dtype)
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)  # (seq, seq): True above the diagonal
    return scores.masked_fill(future, float("-inf")).softmax(dim=-1)


def check_induction_score(fn: Callable, seed: int = 0) -> None:
    """``fn(pattern, half)``: ``(batch, heads, 1 + 2 half, 1 + 2 half) -> (heads,)`` in the dtype of ``pattern``, equal
    to the chapter's :func:`~transformer.induction.induction_scores` (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for case, (batch, heads, half), dtype in [("batch 2, 3 heads, half 4", (2, 3, 4), torch.float32),
                                              ("batch 4, 2 heads, half 6", (4, 2, 6), torch.float32),
                                              ("batch 1, 4 heads, half 1", (1, 4, 1), torch.float32),
                                              ("float64, batch 3, 1 head, half 5", (3, 1, 5), torch.float64)]:
        pattern = causal_patterns(g, batch, heads, 1 + 2 * half, dtype)
        got = call(fn, (pattern, half), f"induction_score ({case})")
        problems = compare(got, induction_scores(pattern, half), ("heads",),
                           mistakes=outputs(INDUCTION_MISTAKES, pattern, half), what=f"induction_score ({case})",
                           promised=("pattern", pattern.dtype))
        if problems:
            report(f"induction_score ({case})", problems)
    report("induction_score", [])


# ----------------------------------------------------------------------------- exercise 3


def _dla_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    out = []
    for case, (n, d, vocab), eps, dtype in [("3 parts, d_model 4", (3, 4, 5), 1e-5, torch.float32),
                                            ("10 parts, d_model 16", (10, 16, 20), 1e-5, torch.float32),
                                            ("a large eps, 0.5", (5, 8, 7), 0.5, torch.float32),
                                            ("float64, 6 parts, d_model 8", (6, 8, 10), 1e-5, torch.float64)]:
        r = lambda *shape, dtype=dtype: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
        parts = r(n, d) + 2 * r(n, 1)  # (parts, d_model), each with a mean of its own
        gamma = 1 + 0.3 * r(d)
        answer, other = torch.randperm(vocab, generator=g)[:2].tolist()
        out.append((case, (parts, gamma, r(vocab, d), answer, other, eps)))
    return out


def _contributions(parts, gamma, w_u, answer, other, eps) -> torch.Tensor:
    """The chapter's direct logit attribution: ``gamma * (p - mean(p)) / sigma(x) . (W_U[answer] - W_U[other])``."""
    x = parts.sum(dim=0)  # (d_model,): the final stream, the sum of the parts
    sigma = torch.sqrt(((x - x.mean()) ** 2).mean() + eps)  # the whole stream's scale, frozen
    return (gamma * (parts - parts.mean(dim=-1, keepdim=True)) / sigma) @ (w_u[answer] - w_u[other])  # (parts,)


def check_direct_logit_attribution(fn: Callable, seed: int = 0) -> None:
    """``fn(parts, gamma, W_U, answer, other, eps)``: ``(parts,)`` contributions to ``logit[answer] - logit[other]``
    (atol 1e-5, rtol 1e-4), ``parts``, ``gamma`` and ``W_U`` left as they were."""
    __tracebackhide__ = True
    for case, args in _dla_cases(seed):
        got = call_keeping(fn, args, f"direct_logit_attribution ({case})", ("parts", "gamma", "W_U"),
                        ["the caller uses {what} again; compute new tensors (parts - ..., not parts -= ...)"])
        problems = compare(got, _contributions(*args), ("parts",), mistakes=outputs(DLA_MISTAKES, *args),
                           what=f"direct_logit_attribution ({case})")
        if problems:
            report(f"direct_logit_attribution ({case})", problems)
    report("direct_logit_attribution", [])


# ----------------------------------------------------------------------------- exercise 4


def _table_metric(table: torch.Tensor, counts: dict | None = None):
    """``patched_metric(layer, head)``: ``table[layer, head]`` (batch,), a copy; counts the calls in ``counts``."""
    n_layers, n_heads = table.shape[:2]

    def patched_metric(layer, head):
        if not (0 <= int(layer) < n_layers and 0 <= int(head) < n_heads):
            raise ValueError(f"patched_metric: expected a layer in 0 .. {n_layers - 1} and a head in "
                             f"0 .. {n_heads - 1}, got ({layer}, {head})")
        if counts is not None:
            counts[(int(layer), int(head))] = counts.get((int(layer), int(head)), 0) + 1
        return table[int(layer), int(head)].clone()
    return patched_metric


def check_restored_fractions(fn: Callable, seed: int = 0) -> None:
    """``fn(patched_metric, clean, corrupted, n_layers, n_heads)``: ``(n_layers, n_heads)`` restored fractions of the
    batch means in the dtype of ``clean``, ``patched_metric`` called once per head (atol 1e-5, rtol 1e-4)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for case, (n_layers, n_heads, batch), dtype in [("2 layers, 3 heads, 4 prompts", (2, 3, 4), torch.float32),
                                                    ("3 layers, 2 heads, 1 prompt", (3, 2, 1), torch.float32),
                                                    ("1 layer, 4 heads, 5 prompts", (1, 4, 5), torch.float32),
                                                    ("float64, 2 layers, 2 heads", (2, 2, 3), torch.float64)]:
        clean = 3 + torch.randn(batch, generator=g, dtype=dtype)  # (batch,)
        corrupted = -2 + torch.randn(batch, generator=g, dtype=dtype)  # (batch,)
        share = torch.rand(n_layers, n_heads, batch, generator=g, dtype=dtype)  # (n_layers, n_heads, batch)
        table = corrupted + share * (clean - corrupted) + 0.3 * torch.randn(share.shape, generator=g, dtype=dtype)
        counts: dict = {}
        got = call(fn, (_table_metric(table, counts), clean, corrupted, n_layers, n_heads),
                   f"restored_fractions ({case})")
        wrong = {head: n for head, n in sorted(counts.items()) if n != 1}
        missing = n_layers * n_heads - len(counts)
        if wrong or missing:
            fail(f"✗ restored_fractions ({case})", [
                f"patched_metric was called {n} times for (layer, head) = {head}" for head, n in wrong.items()][:3]
                + ([f"{missing} head(s) were never asked"] if missing else [])
                + ["call patched_metric exactly once per head (each call is a forward pass of the model)"])
        expected = (table.mean(dim=-1) - corrupted.mean()) / (clean.mean() - corrupted.mean())
        args = (_table_metric(table), clean, corrupted, n_layers, n_heads)
        problems = compare(got, expected, ("n_layers", "n_heads"), mistakes=outputs(RESTORED_MISTAKES, *args),
                           what=f"restored_fractions ({case})", promised=("clean", clean.dtype))
        if problems:
            report(f"restored_fractions ({case})", problems)
    report("restored_fractions", [])


MISTAKES = {
    "check_scores_by_hand": SCORES_BY_HAND_MISTAKES,
    "check_induction_score": INDUCTION_MISTAKES,
    "check_direct_logit_attribution": DLA_MISTAKES,
    "check_restored_fractions": RESTORED_MISTAKES,
}
