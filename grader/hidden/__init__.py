"""Hidden tests, decided by the grader: one module per assignment (``a04.py`` for assignment 04).

A hidden test never runs its verdict inside the student's kernel. Each grade cell of an assignment
has a function in its module, named after the cell's ``grade_id``, that yields :class:`Case` s:

- ``what``: what is tested, in words (the feedback page shows it when the case fails);
- ``request``: which probe the kernel runs, on which inputs (plain data chosen here, seeded);
- ``judge``: a function of the probe's reply that returns what is wrong, in words, or ``None``.

Probes are the only code of this package that runs in the kernel. :func:`call` and :func:`value`
cover most exercises; an assignment defines its own with :func:`probe` (self-contained functions:
their source is sent to the kernel). A probe returns plain data (see ``grader/plain.py``), and the
judge compares it with a reference computed here, outside the student's process.
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Iterator

PROBES: dict[str, Callable] = {}


def probe(fn: Callable) -> Callable:
    """Mark ``fn(user, **inputs)`` as a probe: it runs in the kernel, ``user`` is the student's namespace."""
    PROBES[fn.__name__] = fn
    return fn


@dataclass
class Request:
    probe: str
    inputs: dict = field(default_factory=dict)


@dataclass
class Case:
    what: str
    request: Request
    judge: Callable[[object], str | None]


@probe
def call(user, name, args=(), kwargs=None):
    """``name(*args, **kwargs)`` in the student's namespace; the result and the arguments after the call."""
    fn = user[name]
    args = list(args)
    out = fn(*args, **(kwargs or {}))
    return {"out": out, "args": args}


@probe
def value(user, name):
    """The value the student bound to ``name``."""
    return user[name]


def calls(name: str, *args, **kwargs) -> Request:
    """Ask the kernel for ``name(*args, **kwargs)``; the reply is ``{"out": result, "args": [...]}``."""
    return Request("call", {"name": name, "args": list(args), "kwargs": kwargs})


def reads(name: str) -> Request:
    """Ask the kernel for the value of ``name``."""
    return Request("value", {"name": name})


def probe_source() -> str:
    """The source of every probe, for the kernel (decorators dropped)."""
    parts = []
    for fn in PROBES.values():
        src = textwrap.dedent(inspect.getsource(fn))
        parts.append("\n".join(ln for ln in src.splitlines() if not ln.startswith("@")))
    return "\n\n".join(parts)


def module_for(assignment: str):
    """The hidden-test module of ``assignment`` (``04_queries_keys_values`` -> ``grader.hidden.a04``)."""
    return importlib.import_module(f"{__name__}.a{assignment[:2]}")


def cases(assignment: str) -> dict[str, list[Case]]:
    """grade_id -> the cases of that grade cell, in order."""
    mod = module_for(assignment)
    return {gid: list(getattr(mod, gid)()) for gid in mod.GRADED}


def all_cases(assignment: str) -> Iterator[tuple[str, Case]]:
    for gid, group in cases(assignment).items():
        for case in group:
            yield gid, case
