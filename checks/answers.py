"""Helpers that several checks share to read a student's answer: the keys of a dict, dicts of counts, lists of ids,
shapes, and a next-token function that counts how often the student's decoding loop calls it."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .core import as_int, compare, fail, hide_positions, report, values_of

__all__ = ["show", "require_keys", "counts_form", "count_differences", "plain_counts", "dict_problems", "as_ids",
           "as_ints", "CountedCalls", "check_numbers_by_hand"]


def show(value, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_numbers_by_hand(name: str, answer, right: dict[str, float], mistakes, tolerance: float) -> None:
    """An answer worked by hand, ``answer = {key: number}`` with the keys of ``right``: each number within
    ``tolerance`` of ``right[key]``, and the known mistakes (``Mistake`` s whose ``part`` is a key) named."""
    __tracebackhide__ = True
    keys = list(right)
    if not isinstance(answer, dict) or not set(keys) <= set(answer):
        fail(f"✗ {name}", [f"expected a dict with the keys {', '.join(map(repr, keys))}, got {type(answer).__name__}; "
                           "keep the last line of the answer cell"])
    problems = []
    for key in keys:
        found = compare(answer[key], torch.tensor(right[key], dtype=torch.float64), (), atol=tolerance, rtol=0.0,
                        mistakes=values_of(mistakes, key), what=key)
        problems += hide_positions(found)
    report(name, problems)


def require_keys(name: str, answer, keys: Sequence[str]) -> None:
    """Fail unless ``answer`` is a dict with every one of ``keys`` (for answers made of several parts)."""
    __tracebackhide__ = True
    if not isinstance(answer, dict):
        fail(f"✗ {name}", [f"answer: expected a dict with the keys {', '.join(keys)}, got {type(answer).__name__}"])
    missing = [k for k in keys if k not in answer]
    if missing:
        fail(f"✗ {name}", [f"answer: missing the key(s) {', '.join(missing)}"])


# The one reading of a dict of counts (assignment 01: pairs -> counts, words -> frequencies), for the visible checks
# and the hidden tests alike: each words what it finds in its own way.

def counts_form(got, size: int | None = None) -> tuple[str, object] | None:
    """What is wrong with the form of ``got``, a dict from tuples of symbols (str; of ``size`` symbols if given) to
    counts (whole numbers of any kind, see :func:`~checks.core.as_int`), or None: ``("dict", got)``,
    ``("key", key)`` (not a tuple of str), ``("size", key)`` (another number of symbols) or ``("count", key)``."""
    if not isinstance(got, dict):
        return "dict", got
    for key in got:
        if not (isinstance(key, tuple) and all(isinstance(s, str) for s in key)):
            return "key", key
        if size is not None and len(key) != size:
            return "size", key
    for key, value in got.items():
        if as_int(value) is None:
            return "count", key
    return None


def count_differences(got: dict, expected: dict) -> tuple[list, list, list]:
    """How the counts ``got`` (of a well-formed dict, see :func:`counts_form`) differ from ``expected``: the keys of
    ``got`` with a wrong count, the keys of ``got`` that should not be there, the keys of ``expected`` missing from
    ``got``. A zero count is no entry, as in a ``Counter``."""
    counts = {k: as_int(v) for k, v in got.items() if as_int(v)}
    wrong = [k for k in counts if k in expected and counts[k] != expected[k]]
    extra = [k for k in counts if k not in expected]
    missing = [k for k in expected if k not in counts]
    return wrong, extra, missing


def plain_counts(name: str, got) -> tuple[dict | None, list[str]]:
    """``got`` as a dict of pair -> count without zero counts, or the problems with it (:func:`counts_form`)."""
    found = counts_form(got, 2)
    if found is None:
        return {k: as_int(v) for k, v in got.items() if as_int(v)}, []
    kind, key = found
    if kind == "dict":
        return None, [f"{name}: expected a dict (or Counter) from pairs (a, b) to counts, got {type(got).__name__}"]
    if kind == "count":
        return None, [f"{name}: every count must be a whole number, got {show(got[key])} for {key}"]
    lines = [f"{name}: every key must be a pair of symbols (a, b), a tuple of two str; got the key {show(key)}"]
    if isinstance(key, str):
        lines.append("Hint: keep the pair as a tuple (a, b); do not join it into one string.")
    return None, lines


def dict_problems(got: dict, expected: dict, what: str) -> list[str]:
    """How ``got`` differs from ``expected`` (:func:`count_differences`), naming only keys of ``got`` (never an
    expected value)."""
    problems = []
    wrong, extra, missing = count_differences(got, expected)
    if wrong:
        problems.append(f"{len(wrong)} {what}(s) with a wrong count, e.g. {', '.join(map(str, wrong[:3]))}")
    if extra:
        problems.append(f"{len(extra)} {what}(s) that should not be there, e.g. {', '.join(map(str, extra[:3]))}")
    if missing:
        problems.append(f"{len(missing)} {what}(s) missing")
    return problems


class CountedCalls:
    """Wrap a next-token function: count the calls, pass plain ints, stop a runaway loop."""

    def __init__(self, fn, limit: int = 200):
        self.fn, self.calls, self.limit = fn, 0, limit

    def __call__(self, ids):
        self.calls += 1
        if self.calls > self.limit:
            fail("✗ greedy_decode", [f"called next_logits more than {self.limit} times: does your loop stop "
                                      "at eos_id and after max_new_tokens new tokens?"])
        try:
            items = ids if isinstance(ids, (list, tuple)) else torch.as_tensor(ids).flatten().tolist()
            seq = [int(i) for i in items]
        except (TypeError, ValueError, RuntimeError):
            fail("✗ greedy_decode", [f"next_logits expects the list of ids so far, got {type(ids).__name__}"])
        if not seq:
            fail("✗ greedy_decode", ["next_logits was called with an empty sequence; pass the prefix and the "
                                     "tokens generated so far"])
        return self.fn(seq)


def as_ids(got):
    if isinstance(got, torch.Tensor):
        return got.detach().flatten()
    if isinstance(got, (list, tuple)):
        ids = [as_int(i) for i in got]
        return got if None in ids else torch.tensor(ids, dtype=torch.float64)
    return got


def as_ints(value) -> tuple[int, ...] | None:
    """A tuple of ints from a tuple, list or ``torch.Size`` of whole numbers of any kind (see :func:`as_int`),
    such as a shape written by hand; None for anything else."""
    if not isinstance(value, (tuple, list)):  # a torch.Size is a tuple
        return None
    out = tuple(as_int(v) for v in value)
    return None if None in out else out
