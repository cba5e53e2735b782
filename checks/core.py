"""Immediate, layered feedback for the exercise notebooks.

A check looks at a student's answer in a fixed order and stops at the first problem it finds:

1. the code raised an exception, or changed an input the exercise's text says it does not change;
2. the answer has the wrong type or shape (named dimension by dimension);
3. the answer contains NaN or Inf;
4. some values are wrong (how many, the first wrong index, the largest error);
5. and if the wrong answer equals a known mistake, a hint that names it;
6. the values are right, in another dtype than the text promises.

The known mistakes are data: each exercise has a list of :class:`Mistake`, each a named wrong answer (a wrong function
or class with the student's signature, or a wrong value worked by hand) and its hint. A check runs every wrong answer
on its own inputs, exactly as it runs the student's, and names the first one the student's answer equals.

A check never prints the expected answer. When everything passes it says so, and reminds the student that hidden
checks run at grading time.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import transformer

from .rule import ATOL, RTOL, changed, judge_values, kept_words, number_kind, returns_words

PASSED = "public checks passed; hidden checks run at grading"
SMALL = 16  # answers with fewer values than this never show the size of an error
NONFINITE_GUESS = " (a softmax over a row of -inf? a division by zero?)"  # when no known mistake names the cause
_OURS = tuple(os.path.dirname(os.path.abspath(f)) + os.sep for f in (__file__, transformer.__file__))  # not theirs


def _theirs(filename: str) -> bool:
    """Whether a frame's file is the student's code: not the checks' or the package's, Python's or a library's."""
    path = os.path.abspath(filename)
    return not (filename.startswith("<frozen") or path.startswith(_OURS)
                or path.startswith(sys.prefix + os.sep) or path.startswith(sys.base_prefix + os.sep))


class CheckFailed(AssertionError):
    """Raised by a check; its message is the feedback.

    In IPython (JupyterLab, and the kernel whose outputs the grader's feedback page shows) a failed check
    shows its message alone, not a traceback through the checker (:meth:`_render_traceback_`). When it
    failed because the student's code raised (a check calls their function), the traceback of that
    error, from the first frame in their code on, comes above the message.
    """

    def _student_error(self):
        """The error raised in the student's code that this failure reports, and its traceback from their first
        frame; ``(None, None)`` when there is none."""
        err = self.__context__
        if isinstance(err, CheckFailed):  # a check that adds lines to another's failure (earlier.builds_on)
            err = err.__context__
        tb = getattr(err, "__traceback__", None)
        while tb is not None and not _theirs(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        return (err, tb) if tb is not None else (None, None)

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for a failed check: the message, below the student's own error if there is one."""
        err, tb = self._student_error()
        lines = []
        if err is not None:
            try:
                from IPython import get_ipython

                shell = get_ipython()
            except ImportError:  # pragma: no cover - IPython calls this method, so it is there
                shell = None
            if shell is not None:
                lines = [*shell.InteractiveTB.structured_traceback(type(err), err, tb), ""]
            else:
                import traceback

                lines = [*"".join(traceback.format_exception(type(err), err, tb)).splitlines(), ""]
        return [*lines, str(self)]


@dataclass(frozen=True)
class Mistake:
    """A common wrong answer to an exercise, and the hint that names it.

    ``wrong`` has the form of the student's answer: a function or a class with
    the exercise's signature, or, for an answer worked by hand, the wrong value
    (of the entry ``part`` of the answer, a key of a dict or an index of a list,
    when ``part`` is given).
    """

    name: str
    hint: str
    wrong: Any
    part: str | int | None = None


def outputs(mistakes: Iterable[Mistake], *args, run: Callable[..., Any] | None = None) -> dict[str, Any]:
    """``{hint: what the wrong answer gives}``, in the list's order: ``wrong(*args)``, or ``run(wrong, *args)``
    when the answer is a class that the check must first build and load (as it does the student's).

    A wrong answer that cannot even run on these inputs needs no hint here, and is left out. Wrong answers
    run with the caller's random state saved and restored, so a notebook draws the same numbers after a check.
    """
    out = {}
    for mistake in mistakes:
        try:
            with torch.random.fork_rng(devices=[]):
                copies = own_copies(args)  # a wrong answer may change its inputs: the next one gets them intact
                out[mistake.hint] = mistake.wrong(*copies) if run is None else run(mistake.wrong, *copies)
        except Exception:  # noqa: BLE001 - e.g. a shape that only fits other inputs
            continue
    return out


def values_of(mistakes: Iterable[Mistake], part: str | int | None = None) -> dict[str, Any]:
    """``{hint: wrong value}`` of the by-hand mistakes about ``part`` of the answer (None: the whole answer)."""
    return {m.hint: m.wrong for m in mistakes if m.part == part}


def fail(title: str, lines: Sequence[str]) -> None:
    """Raise :class:`CheckFailed` with a title line and indented detail lines."""
    __tracebackhide__ = True
    raise CheckFailed("\n".join([title, *("  " + line for line in lines)]))


def as_number(value) -> int | float | None:
    """A plain Python number from any kind of integer or float: ``int``, ``float``, a numpy scalar, or a
    one-element array or tensor; None for anything else (bools, strings, complex numbers, longer arrays)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.size == 1 if isinstance(value, np.ndarray) else value.numel() == 1:
            value = value.item()
        else:
            return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def as_int(value) -> int | None:
    """``value`` as an ``int`` when it is a whole number of any kind (see :func:`as_number`), else None."""
    n = as_number(value)
    if n is None or not math.isfinite(n) or n != int(n):
        return None
    return int(n)


def as_tensor(value) -> torch.Tensor | None:
    """A student's answer as a tensor (from a tensor, an array, a list or a number of any kind), or None."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (np.ndarray, list, tuple, float, int, np.number)) and not isinstance(value, bool):
        try:
            return torch.as_tensor(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            return None
    return None


def named_shape(shape, dims: Sequence[str]) -> str:
    """``(batch=2, seq=3)`` when every dimension has a name, else ``(2, 3)``."""
    if len(dims) == len(shape):
        return "(" + ", ".join(f"{d}={s}" for d, s in zip(dims, shape)) + ")"
    return "(" + ", ".join(str(s) for s in shape) + ")"


def compare(got, expected: torch.Tensor, dims: Sequence[str], atol: float = ATOL, rtol: float = RTOL,
            mistakes: dict[str, torch.Tensor] | None = None, what: str = "your answer",
            dtype: torch.dtype | None = None, promised: tuple[str, torch.dtype] | None = None) -> list[str]:
    """The problems with ``got`` (none when it equals ``expected`` within ``atol + rtol*|expected|``, in the dtype
    ``promised = (input, its dtype)`` if the text promises one) by :func:`judge_values`, in the student's words."""
    judged = judge_values(got, expected, atol, rtol, dtype, promised[1] if promised else None)
    t = judged.tensor
    if judged.problem == "type":
        if dtype is not None:
            return [f"{what}: expected a torch.Tensor of dtype {dtype}, got {type(got).__name__}"]
        return [f"{what}: expected a tensor (or array) of shape {named_shape(expected.shape, dims)}, "
                f"got {type(got).__name__}"]
    if promised and judged.problem in ("dtype", "kind", "promised dtype"):
        return [f"{what}: {returns_words(t.dtype, promised[1], promised[0])}"]
    if judged.problem == "dtype":
        return [f"{what}: expected dtype {dtype}, got {t.dtype}"]
    if judged.problem == "kind":
        return [f"{what}: expected {number_kind(expected.dtype)} values ({expected.dtype}), got {t.dtype}"]
    named = known_mistake(t, mistakes, atol, rtol) if judged.problem in ("shape", "nonfinite") else []
    if judged.problem == "shape":  # a named mistake says which axis is what: the expected names would mislabel them
        lines = [f"{what}: expected shape {named_shape(expected.shape, dims)}, got "
                 f"{tuple(t.shape) if named else named_shape(t.shape, dims)}"]
        sizes = zip(dims, expected.shape, t.shape) if t.dim() == expected.dim() and not named else []
        return lines + [f"dimension '{d}' should have size {a}, got {b}" for d, a, b in sizes if a != b] + named
    if judged.problem == "nonfinite":
        return [f"{what}: {int((~torch.isfinite(t)).sum())} of {t.numel()} values are NaN or Inf"
                + ("" if named else NONFINITE_GUESS)] + named
    if judged.problem is None:
        return []
    wrong, err = judged.wrong, judged.error
    first = tuple(int(i) for i in wrong.nonzero()[0])
    exact = number_kind(expected.dtype) in ("boolean", "integer")
    tolerance = "" if t.dtype == torch.bool else " (exact)" if exact else f" (tolerance atol={atol:g}, rtol={rtol:g})"
    lines = [f"{what}: {int(wrong.sum())} of {wrong.numel()} values are wrong{tolerance}"]
    if t.dtype == torch.bool or wrong.numel() < SMALL:
        # With a handful of values the size of the error would give the answer away.
        where = [str(tuple(int(i) for i in ix)) for ix in wrong.nonzero()[:5]]
        lines.append("wrong at index " + ", ".join(where) + (", ..." if int(wrong.sum()) > 5 else ""))
    else:
        lines.append(f"first wrong value at index {first}; largest error {float(err.max()):.3g}")
    return lines + known_mistake(t, mistakes, atol, rtol)


def hide_positions(problems: list[str]) -> list[str]:
    """``problems`` without the "wrong at index" line: for a by-hand answer of a few values it gives it away."""
    return [p for p in problems if not p.startswith("wrong at index")]


def known_mistake(t: torch.Tensor, mistakes: dict[str, torch.Tensor] | None, atol: float, rtol: float) -> list[str]:
    """The hint of the first known mistake that ``t`` reproduces, if any."""
    for text, value in (mistakes or {}).items():
        if value.shape == t.shape and torch.allclose(t.double(), value.double(), atol=atol, rtol=rtol, equal_nan=True):
            return [f"Hint: {text}"]
    return []


def own_copies(args: tuple) -> tuple:
    """``args`` with every tensor that does not require grad copied: the student's code may change its
    inputs in place, and the check still has the originals to compute its reference from."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) and not a.requires_grad else a for a in args)


def call(fn: Callable, args: tuple, name: str, copies: bool = True):
    """Call the student's function on copies of the tensor arguments (see :func:`own_copies`; on the
    arguments themselves when ``copies`` is False); turn an exception into feedback."""
    __tracebackhide__ = True
    try:
        return fn(*(own_copies(args) if copies else args))
    except CheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - any error in student code is feedback
        fail(f"✗ {name} raised {type(exc).__name__}: {exc}", ["fix the error above, then run this cell again"])


def output_problems(fn: Callable, args: tuple, name: str, expected: torch.Tensor, dims: Sequence[str],
                    mistakes: dict[str, Any], what: str) -> tuple[Any, list[str]]:
    """:func:`call` for an answer that returns one tensor (a tuple fails): it, and its problems against ``expected``
    (:func:`compare`, the default tolerance)."""
    __tracebackhide__ = True
    got = call(fn, args, name)
    if isinstance(got, tuple):
        fail(f"✗ {name}", ["returned a tuple; return only the output tensor"])
    return got, compare(got, expected, dims, mistakes=mistakes, what=what)


def require_unchanged(name: str, given: dict[str, tuple[Any, Any]], lines: Sequence[str]) -> None:
    """Fail, with ``lines``, when the student's code changed an input the text says it does not change:
    ``given[what] = (the input it was given, a copy kept by the check)``."""
    __tracebackhide__ = True
    for what, (seen, original) in given.items():
        if changed(original, seen):
            fail(f"✗ {name} {kept_words(what)}", [line.format(what=what) for line in lines])


def call_keeping(fn: Callable, args: tuple, name: str, names: Sequence[str | None], lines: Sequence[str]):
    """:func:`call` on :func:`own_copies` of ``args``, whose ``names`` (None: not named) the text says are not changed:
    a change is reported first, even when the code also raised (the change is often why)."""
    __tracebackhide__ = True
    given = own_copies(args)
    kept = {what: (given[i], args[i]) for i, what in enumerate(names) if what}
    try:
        out = call(fn, given, name, copies=False)
    except CheckFailed:
        require_unchanged(name, kept, lines)
        raise
    require_unchanged(name, kept, lines)
    return out


def backward(value: torch.Tensor, name: str) -> None:
    """``value.backward()``; turn an exception into feedback."""
    __tracebackhide__ = True
    try:
        value.backward()
    except Exception as exc:  # noqa: BLE001 - any error in student code is feedback
        fail(f"✗ {name}: the backward pass raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
             ["an in-place change (+=, masked_fill_, x[...] = ...) of a tensor that autograd still needs breaks "
              "the backward pass; write it out of place (x = x + ..., x.masked_fill(...))"])


def report(name: str, problems: list[str]) -> None:
    """Fail with ``problems``, or print that the public checks of ``name`` passed."""
    __tracebackhide__ = True
    if problems:
        fail(f"✗ {name}", problems)
    print(f"✓ {name}: {PASSED}")
