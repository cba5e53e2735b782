"""Judges: compare a probe's reply with the grader's reference and say, in words, what is wrong.

The messages follow the visible checks: the wrong type, the shape by named dimension, the dtype,
NaN or infinity, how many values are wrong and where the first one is, a changed input. They never
show the expected values, and never echo what the student's code chose (a class name, a shape, a
string): only fixed words and numbers the grader computed.

A reply is hostile data: judges read it through :func:`fields` and :func:`items`, which demand the
exact form (keys, lengths) and raise :class:`Malformed` otherwise, so a forged or truncated reply
fails its case instead of skipping a check.
"""

from __future__ import annotations

import math

import numpy as np
import torch

# the visible checks' reading of a number (for every hidden test) and of a shape written by hand, and their way
# of writing a shape, (batch=2, seq=3)
from transformer.checks.answers import as_ints
from transformer.checks.core import as_int, as_number, named_shape  # noqa: F401 - as_int is for the hidden tests


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
    """What a reply is, in fixed words (its kind, a tensor's rank), never anything the student chose."""
    if isinstance(x, torch.Tensor):
        return f"a tensor with {x.dim()} dimension(s)"
    if isinstance(x, np.ndarray):
        return f"an array with {x.ndim} dimension(s)"
    return PLAIN.get(type(x), "an object that is not plain data (not a tensor, number, str, list or dict)")


def whole_numbers(value) -> list[int] | None:
    """A list of ints from a list or tuple of whole numbers of any kind (the visible checks' reading,
    :func:`~transformer.checks.answers.as_ints`), or from a 1-D tensor or array of them (an array comes back
    from the kernel as one); None for anything else."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 1:
        value = value.tolist()  # Python numbers: a 0-d tensor per item would cost hundreds of bytes each
    out = as_ints(value)
    return None if out is None else list(out)


def shape(got, want: tuple[int, ...]) -> str | None:
    """``got`` must be the shape ``want``, written by hand (see :func:`whole_numbers`): says how many dimensions
    it should have and which have the wrong size, never a size that was given."""
    found = whole_numbers(got)
    if found is None:
        return f"expected a shape as a tuple of ints, e.g. (2, 3), got {describe(got)}"
    if len(found) != len(want):
        return f"expected {len(want)} dimensions, got {'more' if len(found) > len(want) else 'fewer'}"
    wrong = [str(i) for i, (a, b) in enumerate(zip(found, want, strict=True)) if a != b]
    return f"the size of dimension {', '.join(wrong)} is wrong" if wrong else None


def tensor(got, want: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4, dims=None, dtype: str = "kind",
           exact: bool = False) -> str | None:
    """``got`` must be a tensor of ``want``'s shape, close to it (or equal if ``exact``).

    ``dtype="kind"`` (the default) asks for the same kind of number as the visible checks do (bool,
    integer or floating point, any precision); ``"exact"`` for the very dtype (float64 in, float64 out).
    """
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {describe(got)}"
    if tuple(got.shape) != tuple(want.shape):
        expected = named_shape(want.shape, dims or ())
        if got.dim() != want.dim():
            return f"expected shape {expected}, got a tensor with {min(got.dim(), 99)} dimension(s)"
        names = dims if dims and len(dims) == want.dim() else [f"dimension {i}" for i in range(want.dim())]
        wrong = [d for d, a, b in zip(names, got.shape, want.shape, strict=True) if a != b]
        return f"expected shape {expected}; the size of {', '.join(wrong)} is wrong"
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
        got = got.tolist()  # Python numbers: a 0-d tensor per item would cost hundreds of bytes each
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"{name}: expected a list of {len(want)} numbers, got {describe(got)}"
    if len(got) != len(want):
        return f"{name}: expected {len(want)} numbers, got {'more' if len(got) > len(want) else 'fewer'}"
    wrong = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if number(g, w, tol) is not None]
    if wrong:
        return f"{name}: {len(wrong)} of {len(want)} are wrong (the first at position {wrong[0]})"
    return None


def unchanged(before: list, after: list, names: list[str]) -> str | None:
    """The inputs a function got must be as they were: it may not change its arguments in place.

    ``after`` comes from the kernel, so this is a property the kernel reports: use it in a case with
    ``scored=False``."""
    after = items(after, len(before), "the arguments after the call")
    for name, a, b in zip(names, before, after, strict=True):
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
