"""Which forbidden callables ran while a probe called the student's function (runs in the kernel).

``with recording(names) as ran: fn(*args)`` fills ``ran`` with the forbidden names (as given) whose code
ran during the call: C functions by identity (``sys.setprofile``'s ``c_call`` events: what
``F.scaled_dot_product_attention`` is), tensor methods by name on a tensor, operators of ``torch.ops`` by
their C function, Python functions and classes by their code, modules by the module of each Python frame
(``transformer``, but not the frames of ``transformer.checks``). A name is watched under its routes
(``routes.py``) but the callers (whose code need not reach it): ``torch.ops.aten.layer_norm.default`` or
``torch.native_layer_norm`` reports ``torch.nn.functional.layer_norm``.
Only calls made on the student's behalf count: walking up from the call, a frame of the student's
notebook (``__main__``) comes before any frame of the probe's own code (this folder), which may build
references of its own. The student's code runs in the same process and can switch the profiler off
or forge the list: the report informs, never decides. Standard library and torch only.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import types
from contextlib import contextmanager

from .routes import resolve, routes, under

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


def _c_function(obj):
    """The C function that runs when ``obj`` is called, if it is one (an operator of ``torch.ops``: its ``_op``)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return obj._op
    return obj if obj is not None and not inspect.isclass(obj) and not _codes(obj) and callable(obj) else None


def targets(names) -> tuple[dict, dict, list, dict]:
    """What to watch for the forbidden ``names``, each under all its routes (:func:`routes`, without the callers,
    whose code may not reach it): (id -> (C function, [names]), code -> [names], [(module name, name)],
    tensor method name -> [names])."""
    c_functions, codes, modules, methods = {}, {}, [], {}
    for name in names:
        obj = resolve(name)
        if inspect.ismodule(obj):
            modules.append((obj.__name__, name))
            continue
        try:
            others = list(routes(name, callers=False).values()) if obj is not None else []
        except Exception:  # noqa: BLE001 - a torch the student's code broke: the name alone is watched
            others = []
        for what in [obj, *others] if obj is not None else []:
            if isinstance(what, types.MethodDescriptorType):
                methods.setdefault(what.__name__, []).append(name)
            elif (c := _c_function(what)) is not None:
                c_functions.setdefault(id(c), (c, []))[1].append(name)  # the object is kept: its id stays its own
            else:
                for code in _codes(what):
                    codes.setdefault(code, []).append(name)
    return c_functions, codes, modules, methods


@contextmanager
def recording(names):
    """Record (into the list it yields) which of ``names`` ran inside the ``with`` block, in order, once each."""
    c_functions, codes, modules, methods = targets(names)
    tensor = sys.modules["torch"]._C.TensorBase if methods else None
    ran: list[str] = []

    def hit(found) -> None:
        for name in found:
            if name not in ran:
                ran.append(name)

    def profile(frame, event, arg):
        if event == "c_call":
            entry = c_functions.get(id(arg))
            found = entry[1] if entry is not None and entry[0] is arg else None
            if found is None and tensor is not None and isinstance(getattr(arg, "__self__", None), tensor):
                found = methods.get(getattr(arg, "__name__", None))  # a tensor's method, bound for the call
            if found and _students(frame):
                hit(found)
        elif event == "call":
            found = codes.get(frame.f_code)
            if found is None and modules:
                module = frame.f_globals.get("__name__")
                if isinstance(module, str) and not under(module, EXEMPT):
                    found = [n for m, n in modules if under(module, (m,))][:1]
            if found and _students(frame.f_back):
                hit(found)

    before, before_threads = sys.getprofile(), threading.getprofile()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield ran
    finally:
        sys.setprofile(before)
        threading.setprofile(before_threads)
