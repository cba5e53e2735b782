"""Judges: compare a probe's reply with the grader's reference and say, in words, what is wrong.

The messages follow the visible checks: the wrong type, the shape by named dimension, the dtype,
NaN or infinity, how many values are wrong and where the first one is, a changed input. They never
show the expected values.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from grader.plain import Unplain
from transformer.checks.core import as_int, as_number  # noqa: F401 - the visible checks' reading of a number, for every hidden test


def describe(x) -> str:
    """What a reply is, in words (its type, or its shape), never its values."""
    if isinstance(x, Unplain):
        return f"an object of type {x.kind}"
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)}"
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    return f"a {type(x).__name__}"


def _shape(shape, dims) -> str:
    if dims and len(dims) == len(shape):
        return "(" + ", ".join(f"{d}={n}" for d, n in zip(dims, shape)) + ")"
    return str(tuple(shape))


def tensor(got, want: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4, dims=None, dtype: str = "kind",
           exact: bool = False) -> str | None:
    """``got`` must be a tensor of ``want``'s shape, close to it (or equal if ``exact``).

    ``dtype="kind"`` (the default) asks for the same kind of number as the visible checks do (bool,
    integer or floating point, any precision); ``"exact"`` for the very dtype (float64 in, float64 out).
    """
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {describe(got)}"
    if tuple(got.shape) != tuple(want.shape):
        same_rank = len(got.shape) == len(want.shape)
        wrong = [d for d, a, b in zip(dims or [], got.shape, want.shape) if a != b] if same_rank else []
        which = f" ({', '.join(wrong)} wrong)" if wrong else ""
        return f"expected shape {_shape(want.shape, dims)}, got {tuple(got.shape)}{which}"
    if dtype == "exact" and got.dtype != want.dtype:
        return f"expected dtype {want.dtype}, got {got.dtype}"
    if dtype == "kind" and _kind(got.dtype) != _kind(want.dtype):
        return f"expected {_kind(want.dtype)} values ({want.dtype}), got {got.dtype}"
    if want.dtype == torch.bool or exact:
        bad = got != want
    else:
        g, w = got.double(), want.double()
        if not torch.isfinite(g).all():
            return f"{int((~torch.isfinite(g)).sum())} value(s) are NaN or infinite"
        bad = (g - w).abs() > atol + rtol * w.abs()
    if not bool(bad.any()):
        return None
    first = tuple(int(i) for i in bad.nonzero()[0])
    msg = f"{int(bad.sum())} of {bad.numel()} values are wrong (the first at index {first}"
    if want.dtype != torch.bool and not exact and want.numel() > 1:  # one value's error would give it away
        msg += f", largest error {float((got.double() - want.double()).abs().max()):.3g}"
    return msg + ")"


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "boolean"
    return "floating-point" if dtype.is_floating_point else "complex" if dtype.is_complex else "integer"


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
        got = list(got)
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"{name}: expected a list of {len(want)} numbers, got {describe(got)}"
    if len(got) != len(want):
        return f"{name}: expected {len(want)} numbers, got {len(got)}"
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if number(g, w, tol) is not None]
    if wrong:
        return f"{name}: {len(wrong)} of {len(want)} are wrong (the first at position {wrong[0]})"
    return None


def unchanged(before: list, after: list, names: list[str]) -> str | None:
    """The inputs a function got must be as they were: it may not change its arguments in place."""
    for name, a, b in zip(names, before, after):
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor) or b.shape != a.shape or not torch.equal(a, b):
                return f"the input {name} was changed in place; return a new value instead"
        elif a != b:
            return f"the input {name} was changed in place; return a new value instead"
    return None


def returns(ref: torch.Tensor, dims=None, **kw):
    """A judge for :func:`grader.hidden.calls`: the result ``reply["out"]`` must match ``ref`` (see :func:`tensor`).

    The arguments may have been changed in place: every case sends its own copy, and the visible checks
    allow it too.
    """
    return lambda reply: tensor(reply["out"], ref, dims=dims, **kw)


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
