"""Exercises that build on earlier ones: a later check that fails points back at a broken earlier answer.

A later exercise may call the student's own answer to an earlier one (``MultiHeadAttention`` calls their
``split_heads``). When its check fails and the earlier answer fails its own check too, the error is most
likely there: :func:`builds_on` adds a line that names the earlier exercise.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
from collections.abc import Callable, Sequence

import torch

from .core import CheckFailed

__all__ = ["builds_on", "broken_earlier"]


def _functions_of(answer) -> list:
    """The Python functions that make up ``answer``: the function itself, or the methods of a class."""
    if isinstance(answer, type):
        return [f for c in answer.__mro__ if c is not object and not c.__module__.startswith("torch.")
                for f in vars(c).values() if inspect.isfunction(f)]
    return [answer] if inspect.isfunction(answer) else []


def _names_used(code) -> set[str]:
    """Every global name that ``code`` or a function or lambda inside it reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names_used(const)
    return names


def broken_earlier(answer, earlier: Sequence[tuple[str, str]]) -> list[str]:
    """For each ``(name, exercise)`` in ``earlier``: when the student's ``answer`` calls their own ``name`` (from the
    same notebook) and that fails its own check, a line that sends the student back to ``exercise``."""
    functions = _functions_of(answer)
    if not functions:
        return []
    notebook = functions[0].__globals__  # the student's namespace
    used = set().union(*(_names_used(f.__code__) for f in functions))
    every_check = importlib.import_module(__package__)  # its checks load when first asked for: getattr, not vars
    lines = []
    for name, exercise in earlier:
        theirs, check = notebook.get(name), getattr(every_check, f"check_{name}", None)
        if name not in used or theirs is None or check is None:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
                check(theirs)
        except CheckFailed:
            lines.append(f"Hint: this builds on your {name} from {exercise}, which fails its own check: "
                         f"fix {exercise} first, then run this cell again.")
        except Exception:  # noqa: BLE001 - only a pointer; the earlier cell reports its own errors
            continue
    return lines


def builds_on(*earlier: tuple[str, str]):
    """Decorate a check whose exercise uses the student's answers to earlier exercises, ``(name, "exercise N")``:
    when it fails and one of those fails its own check, the feedback says so (the error is often there)."""
    def decorate(check: Callable) -> Callable:
        @functools.wraps(check)
        def checked(answer, *args, **kwargs):
            __tracebackhide__ = True
            try:
                return check(answer, *args, **kwargs)
            except CheckFailed as exc:
                extra = broken_earlier(answer, earlier)
                if not extra:
                    raise
                raise CheckFailed("\n".join([str(exc), *("  " + line for line in extra)])) from None
        return checked
    return decorate
