"""Probes: functions the grader asks the kernel to run on the hidden inputs (kernel side).

A probe is ``fn(user, **inputs)``: ``user`` is the student's namespace, ``inputs`` plain data the
grader wrote. It returns plain data (``grader.kernel_side.plain``). :func:`call` and :func:`value`
serve most exercises; an assignment's own probes live in ``probes/aNN.py`` and are named
``"aNN.name"`` in a request.
"""

from __future__ import annotations

import importlib
import re


def call(user, name, args=(), kwargs=None):
    """``name(*args, **kwargs)`` in the student's namespace; the result and the arguments after the call."""
    fn = user[name]
    args = list(args)
    out = fn(*args, **(kwargs or {}))
    return {"out": out, "args": args}


def value(user, name):
    """The value the student bound to ``name``."""
    return user[name]


def resolve(name: str):
    """The probe called ``name``: ``"call"``, ``"value"`` or ``"aNN.function"``."""
    if name in ("call", "value"):
        return globals()[name]
    match = re.fullmatch(r"(a[0-9]{2})\.([a-z][a-z0-9_]*)", str(name))
    if not match:
        raise ValueError(f"probe: expected 'call', 'value' or 'aNN.function', got {str(name)[:40]!r}")
    module = importlib.import_module(f"{__name__}.{match.group(1)}")
    return getattr(module, match.group(2))
