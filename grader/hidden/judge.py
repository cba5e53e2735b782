"""Judges: compare a probe's reply with the grader's reference and say, in words, what is wrong.

A message names the kind of problem in fixed words, in the visible checks' order: the wrong type, the
wrong shape (the expected one, with its named dimensions), the dtype, "values are NaN or infinite",
"values are wrong" (with the tolerance), a changed input. What the exercise's text promises (the inputs are not
changed, the result has the dtype of an input) is said in the visible checks' own words
(:func:`~checks.rule.kept_words`, :func:`~checks.rule.dtype_words`) and costs the points.
A value is compared by the visible checks' own rule, :func:`checks.rule.judge_values`, so that an
answer the public checks pass is never refused here for something that is not an error.

The words never show the expected values, and never carry anything a reply can choose beyond which
kind of problem it has: no class name, no shape or number of dimensions it returned, no dtype it
returned, no string, and no count of wrong or NaN values, no index, no size of an error. The hidden
inputs come from a secret seed, fixed for a run: a number the reply chose could carry them out, a
few bits per case, onto the feedback page. The only numbers are the grader's own (an expected shape,
a tolerance, how many values or calls the grader asked for).

A reply is hostile data: judges read it through :func:`fields` and :func:`items`, which demand the
exact form (keys, lengths) and raise :class:`Malformed` otherwise, so a forged or truncated reply
fails its case instead of skipping a check.
"""

from __future__ import annotations

import math

import numpy as np
import torch

# the visible checks' reading of a number (as_int is for the hidden tests) and of a shape written by hand, their way
# of writing a shape, (batch=2, seq=3), and their rule for comparing values
from checks.answers import as_ints
from checks.core import as_int, as_number, named_shape  # noqa: F401
from checks.rule import ATOL, RTOL, changed, dtype_words, judge_values, kept_words, number_kind


class Malformed(ValueError):
    """A reply that is not of the form its probe writes (a missing or extra key, a wrong length)."""


def fields(reply, *names: str) -> tuple:
    """The values of ``names`` in ``reply``, which must be a dict with exactly these keys."""
    if not isinstance(reply, dict) or set(reply) != set(names):
        raise Malformed(f"expected a reply with the fields {', '.join(names)}")
    return tuple(reply[n] for n in names)


def items(value, n: int, what: str = "the reply") -> list:
    """``value`` as a list, which must hold exactly ``n`` items (a list or tuple)."""
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise Malformed(f"{what}: expected {n} items")
    return list(value)


PLAIN = {bool: "a bool", int: "an int", float: "a float", str: "a str", list: "a list", tuple: "a tuple",
         dict: "a dict", type(None): "None"}


def describe(x) -> str:
    """What a reply is, in fixed words (its kind), never anything the student chose (not even a rank)."""
    if isinstance(x, torch.Tensor):
        return "a tensor"
    if isinstance(x, np.ndarray):
        return "an array"
    return PLAIN.get(type(x), "an object that is not plain data (not a tensor, number, str, list or dict)")


def whole_numbers(value) -> list[int] | None:
    """A list of ints from a list or tuple of whole numbers of any kind (the visible checks' reading,
    :func:`~checks.answers.as_ints`), or from a 1-D tensor or array of them (an array comes back
    from the kernel as one); None for anything else."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 1:
        value = value.tolist()  # Python numbers: a 0-d tensor per item would cost hundreds of bytes each
    out = as_ints(value)
    return None if out is None else list(out)


def shape(got, want: tuple[int, ...]) -> str | None:
    """``got`` must be the shape ``want``, written by hand (see :func:`whole_numbers`): says that it is wrong, and how
    many dimensions it should have (the grader's number), never which of the student's sizes differ."""
    found = whole_numbers(got)
    if found is None:
        return f"expected a shape as a tuple of ints, e.g. (2, 3), got {describe(got)}"
    if tuple(found) != tuple(want):
        return f"the shape is wrong (it has {len(want)} dimensions)"
    return None


def tensor(got, want: torch.Tensor, atol: float = ATOL, rtol: float = RTOL, dims=None, dtype: str = "kind",
           exact: bool = False, promised: str | None = None) -> str | None:
    """``got`` must be a tensor (or an array or list of numbers, as for the visible checks) of ``want``'s shape,
    close to it (or equal if ``exact``), by :func:`~checks.rule.judge_values`.

    ``dtype="kind"`` (the default) asks for a kind of number the visible checks accept (see
    :data:`~checks.rule.ACCEPTED_KINDS`, any precision); ``"exact"`` for a tensor of the very dtype
    (float64 in, float64 out). ``promised``: the input whose dtype the text says the result has, here ``want``'s (a
    tensor or an array must have it; a list carries no dtype).
    """
    if exact:
        atol = rtol = 0.0
    judged = judge_values(got, want, atol, rtol, want.dtype if dtype == "exact" else None,
                          want.dtype if promised else None)
    if judged.problem == "type":
        return f"expected a tensor, got {describe(got)}"
    if promised and judged.problem in ("dtype", "kind", "promised dtype"):
        return f"the result is not {str(want.dtype).removeprefix('torch.')}; {dtype_words(promised)}"
    if judged.problem == "dtype":
        return f"expected dtype {want.dtype}, got another dtype"
    if judged.problem == "kind":
        return f"expected {number_kind(want.dtype)} values ({want.dtype}), got another kind of number"
    if judged.problem == "shape":
        return f"expected shape {named_shape(want.shape, dims or ())}, got another shape"
    if judged.problem == "nonfinite":
        return "values are NaN or infinite"
    if judged.problem == "values":
        if exact or number_kind(want.dtype) in ("boolean", "integer"):
            return "values are wrong (exact)"
        return f"values are wrong (tolerance atol={atol:g}, rtol={rtol:g})"
    return None


def number(got, want: float, tol: float = 1e-3, name: str = "the value") -> str | None:
    """``got`` must be a real number (of any kind, see :func:`as_number`) within ``tol`` of ``want``."""
    if as_number(got) is None:
        return f"{name}: expected a number, got {describe(got)}"
    got = as_number(got)
    if not math.isfinite(got) or abs(got - want) > tol:
        return f"{name} is wrong (more than {tol:g} off)"
    return None


def numbers(got, want: list[float], tol: float = 1e-3, name: str = "the values") -> str | None:
    """``got`` must be a list, tuple or 1-D tensor of ``len(want)`` numbers, each within ``tol``."""
    if isinstance(got, (torch.Tensor, np.ndarray)) and got.ndim == 1:
        got = got.tolist()  # Python numbers: a 0-d tensor per item would cost hundreds of bytes each
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"{name}: expected a list of {len(want)} numbers, got {describe(got)}"
    if len(got) != len(want):
        return f"{name}: expected {len(want)} numbers, got another number of them"
    if any(number(g, w, tol) is not None for g, w in zip(got, want, strict=True)):
        return f"{name}: values are wrong (each within {tol:g})"
    return None


def unchanged(before: list, after: list, names: list[str]) -> str | None:
    """The inputs a function got must be as they were, where the exercise's text says so.

    ``after`` comes from the kernel: a forged reply could hide a change, as it could any fault whose right answer it
    computes, and an honest one that shows a change fails the case (scored)."""
    after = items(after, len(before), "the arguments after the call")
    for name, a, b in zip(names, before, after, strict=True):
        if changed(a, b):
            return kept_words(name)
    return None


def kept(before: list, names: list[str], keys: tuple[str, ...]):
    """A judge of ``reply["args"]`` of a reply with the fields ``keys`` (the inputs after the call, which only the
    kernel sees): they must be ``before`` (see :func:`unchanged`)."""
    def judge(reply):
        return unchanged(before, fields(reply, *keys)[keys.index("args")], names)
    return judge


def token_ids(got, expected: list[int]) -> str | None:
    """``got`` must be the token ids ``expected``, exactly."""
    found = whole_numbers(got)
    if found is None:
        return f"expected a list of token ids (ints), got {describe(got)}"
    if len(found) != len(expected):
        return "the wrong number of ids"
    return None if found == list(expected) else "ids are wrong (exact)"


def returns(ref: torch.Tensor, dims=None, **kw):
    """A judge for :func:`grader.hidden.calls`: the result ``reply["out"]`` must match ``ref`` (see :func:`tensor`).

    The arguments may have been changed in place: every case sends its own copy. Where the text says they are not
    changed, a case judged by :func:`kept` holds it.
    """
    def judge(reply):
        out, _args = fields(reply, "out", "args")
        return tensor(out, ref, dims=dims, **kw)
    return judge


def entry(key: str, check, name: str = "answers"):
    """A judge of ``name[key]``: the reply must be a dict holding ``key``; then ``check(value)``."""
    def judge(got):
        if not isinstance(got, dict):
            return f"{name}: expected a dict, got {describe(got)}"
        if key not in got:
            return f"{name} is missing the key {key!r}"
        value = got[key]
        return check(value.tolist() if isinstance(value, np.ndarray) else value)  # numpy: as Python numbers
    return judge


def first(*messages: str | None) -> str | None:
    """The first problem of several, or None."""
    return next((m for m in messages if m), None)


# ------------------------------------------------ judges of a function called more than once


def each_call(arglists, problem_of, after: bool = False, what: str = "calls"):
    """A judge of :func:`call_each`'s replies: ``problem_of(out, *args)`` for every call (with ``after``,
    ``problem_of(args after the call, *args)``), the first problem, said of "one of the n ``what``"."""
    def judge(replies):
        replies = items(replies, len(arglists), "the replies, one per call")
        for reply, args in zip(replies, arglists, strict=True):
            out, args_after = fields(reply, "out", "args")
            problem = problem_of(args_after if after else out, *args)
            if problem:
                return f"one of the {len(arglists)} {what}: {problem}"  # not which: the reply could choose it
        return None
    return judge


def kept_inputs(arglists, names, what: str = "calls"):
    """A judge of :func:`call_each`'s replies: every call left its arguments as they were (see :func:`unchanged`)."""
    return each_call(arglists, lambda args_after, *args: unchanged(list(args), args_after, names), True, what)


def called_again(n, problem_of):
    """A judge of :func:`call_again`'s replies: ``n`` results of calls on the same input, each checked by
    ``problem_of``; the first problem."""
    def judge(replies):
        replies = items(replies, n, "the results, one per call")
        for i, got in enumerate(replies):
            problem = problem_of(got, i)
            if problem:
                return problem if i == 0 else (f"a later call on the same input: {problem} (does the function change "
                                               "the dict it was given? work on a new one)")
        return None
    return judge
