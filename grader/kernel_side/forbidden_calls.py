"""Which forbidden callables ran while a probe called the student's function (runs in the kernel).

``with recording(names) as ran: fn(*args)`` fills ``ran`` with the forbidden names (as given) whose code
ran during the call: C functions by identity (``sys.setprofile``'s ``c_call`` events: what
``F.scaled_dot_product_attention`` is), Python functions and classes by their code, modules by the
module of each Python frame (``transformer``, but not the frames of ``transformer.checks``).
Only calls made on the student's behalf count: walking up from the call, a frame of the student's
notebook (``__main__``) comes before any frame of the probe's own code (this folder), which may build
references of its own. The student's code runs in the same process and can switch the profiler off
or forge the list: the report informs, never decides. Standard library only.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import threading
from contextlib import contextmanager

EXEMPT = ("transformer.checks",)  # the public checks are no shortcut
HERE = os.path.dirname(os.path.abspath(__file__))  # the grader's kernel-side code: the probes' own calls


def _students(frame) -> bool:
    """Whether the call made from ``frame`` was made for the student's code (not for a probe's own work)."""
    while frame is not None:
        if frame.f_globals.get("__name__") == "__main__":
            return True
        if frame.f_code.co_filename.startswith(HERE):
            return False
        frame = frame.f_back
    return False


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def resolve(name: str):
    """The object a dotted name stands for (the longest importable module, then attributes), or None."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - a missing or broken module: try a shorter prefix
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _codes(obj) -> list:
    """The code objects that run when ``obj`` (a Python function, or a class's methods) is called."""
    if inspect.isclass(obj):
        found = []
        for member in vars(obj).values():
            found += _codes(getattr(member, "__func__", member))
        return found
    obj = inspect.unwrap(obj) if callable(obj) else obj
    code = getattr(obj, "__code__", None)
    return [code] if code is not None else []


def targets(names) -> tuple[dict, dict, list]:
    """(id -> (name, C function), code -> name, [(module name, name)]) for the forbidden ``names``."""
    c_functions, codes, modules = {}, {}, []
    for name in names:
        obj = resolve(name)
        if inspect.ismodule(obj):
            modules.append((obj.__name__, name))
        elif obj is not None and not inspect.isclass(obj) and not _codes(obj) and callable(obj):
            c_functions[id(obj)] = (name, obj)  # the object is kept, so its id stays its own
        elif obj is not None:
            codes.update(dict.fromkeys(_codes(obj), name))
    return c_functions, codes, modules


@contextmanager
def recording(names):
    """Record (into the list it yields) which of ``names`` ran inside the ``with`` block, in order, once each."""
    c_functions, codes, modules = targets(names)
    ran: list[str] = []

    def hit(name: str) -> None:
        if name not in ran:
            ran.append(name)

    def profile(frame, event, arg):
        if event == "c_call":
            entry = c_functions.get(id(arg))
            if entry is not None and entry[1] is arg and _students(frame):
                hit(entry[0])
        elif event == "call":
            name = codes.get(frame.f_code)
            if name is None and modules:
                module = frame.f_globals.get("__name__")
                if isinstance(module, str) and not _under(module, EXEMPT):
                    name = next((n for m, n in modules if _under(module, (m,))), None)
            if name is not None and _students(frame.f_back):
                hit(name)

    before, before_threads = sys.getprofile(), threading.getprofile()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield ran
    finally:
        sys.setprofile(before)
        threading.setprofile(before_threads)
