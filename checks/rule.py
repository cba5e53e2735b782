"""The one rule by which an answer's values are judged: the visible checks (:func:`.core.compare`) and the hidden
tests (``grader.hidden.judge.tensor``) both decide with :func:`judge_values`, so that an answer the public checks
pass is never failed by the hidden tests for its form, and each words the problem in its own way.

An answer is accepted as a tensor, an array, a list or a number, of an accepted kind of number
(:data:`ACCEPTED_KINDS`, any precision), of the expected shape, and within ``atol + rtol*|expected|`` of the
expected values (``ATOL``, ``RTOL`` by default; booleans and integers exactly).

What an exercise's text promises beyond the values is held here too, in the words both sides show: the result has
the dtype of an input (:func:`judge_values`' ``keeps_dtype``, :func:`dtype_words`), the inputs are not changed
(:func:`changed`, :func:`kept_words`). The map of exercises (``layout/exercises.py``) lists each exercise's promises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

ATOL, RTOL = 1e-5, 1e-4  # the default tolerance of every comparison of values, visible checks' and hidden tests'

# What kind of number may stand where another is expected: a count or a whole number is a value like any other where
# floating point is expected; ids (integers) and masks (booleans) must be of their own kind, since they index and mask.
ACCEPTED_KINDS = {"floating-point": {"floating-point", "integer"}, "integer": {"integer"}, "boolean": {"boolean"},
                  "complex": {"complex"}}


def dtype_words(name: str) -> str:
    """What the text promised, when the result has another dtype than the input ``name``."""
    return f"the exercise says the result has the dtype of `{name}`"


def returns_words(got: torch.dtype, want: torch.dtype, name: str) -> str:
    """The visible checks' words for a result of dtype ``got`` where the text promised ``want``, that of ``name``."""
    got, want = (str(dtype).removeprefix("torch.") for dtype in (got, want))
    return f"returns {got} for {want} inputs; {dtype_words(name)}"


def kept_words(name: str) -> str:
    """What the answer did, and what the text promised, when it changed the input ``name``."""
    return f"changes its input `{name}` in place; the exercise says the inputs are not changed"


def dtype_name(value) -> str | None:
    """The dtype of a tensor or an array as both libraries write it (``"float64"``, ``"int64"``, ``"bool"``); None
    for a list or a number, which has none."""
    if isinstance(value, torch.Tensor):
        return str(value.dtype).removeprefix("torch.")
    return str(value.dtype) if isinstance(value, np.ndarray) else None


def changed(before, after) -> bool:
    """Whether an input is no longer what it was: a tensor in shape, dtype or values (NaN equal to NaN), anything
    else by ``==``."""
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return True
        return not bool(((after == before) | (after.isnan() & before.isnan())).all())
    return bool(after != before)


def number_kind(dtype: torch.dtype) -> str:
    """The kind of number of a dtype: boolean, integer, floating-point or complex (any precision)."""
    if dtype == torch.bool:
        return "boolean"
    return "floating-point" if dtype.is_floating_point else "complex" if dtype.is_complex else "integer"


def _values(value) -> torch.Tensor | None:
    """An answer as a tensor of its own kind of number (a tensor, an array, a list or a number), or None."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (np.ndarray, list, tuple, float, int, np.number, np.bool_)) and not isinstance(value, bool):
        try:
            array = np.asarray(value)
            if array.dtype.kind not in "biuf":  # strings, objects, ragged lists
                return None
            return torch.as_tensor(array)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            return None
    return None


@dataclass(frozen=True)
class Judged:
    """What :func:`judge_values` found. ``problem`` is None (accepted) or the first of, in order: ``"type"`` (not a
    tensor, array, list or number; not a torch.Tensor where a dtype is required), ``"dtype"`` (not the required
    dtype), ``"kind"`` (another kind of number, see :data:`ACCEPTED_KINDS`), ``"shape"``, ``"nonfinite"`` (NaN or
    infinity where floating point is expected), ``"values"``, and last ``"promised dtype"`` (right values in a tensor
    or an array not of ``keeps_dtype``, the dtype the text promised). ``tensor`` is the answer as a tensor (from
    ``"kind"`` on), ``wrong`` the values outside the tolerance and ``error`` their distance."""

    problem: str | None
    tensor: torch.Tensor | None = None
    wrong: torch.Tensor | None = None
    error: torch.Tensor | None = None


def judge_values(got, expected: torch.Tensor, atol: float = ATOL, rtol: float = RTOL,
                 dtype: torch.dtype | None = None, keeps_dtype: torch.dtype | None = None) -> Judged:
    """The one rule of the visible checks (:func:`compare`) and the hidden tests (``grader.hidden.judge.tensor``):
    whether ``got`` equals ``expected`` within ``atol + rtol*|expected|`` (booleans and integers exactly), and if not,
    the first kind of problem. A pure function: the two sides word the problem each in their own way."""
    if dtype is not None and not isinstance(got, torch.Tensor):
        return Judged("type")
    t = _values(got)
    if t is None:
        return Judged("type")
    if dtype is not None and t.dtype != dtype:
        return Judged("dtype", t)
    want = number_kind(expected.dtype)
    if number_kind(t.dtype) not in ACCEPTED_KINDS[want]:
        return Judged("kind", t)
    if tuple(t.shape) != tuple(expected.shape):
        return Judged("shape", t)
    promise = keeps_dtype is not None and dtype_name(got) not in (None, str(keeps_dtype).removeprefix("torch."))
    if want in ("boolean", "integer"):
        wrong = t != expected
        return Judged("values" if bool(wrong.any()) else "promised dtype" if promise else None, t, wrong,
                      wrong.double())
    if want == "complex":
        g, e = t.to(torch.complex128), expected.to(torch.complex128)
    else:
        g, e = t.double(), expected.double()
    if not bool(torch.isfinite(g).all()):
        return Judged("nonfinite", t)
    error = (g - e).abs()
    wrong = error > atol + rtol * e.abs()
    return Judged("values" if bool(wrong.any()) else "promised dtype" if promise else None, t, wrong, error)
