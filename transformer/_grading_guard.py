"""Grading guard: keeps a submission from replacing what the hidden tests rely on.

``make grade`` puts one cell before a submission's first cell:

    import transformer._grading_guard as _guard; _guard.install()

``install`` runs before any student code. It

- makes the modules the tests use (``torch``, ``torch.nn.functional``,
  ``torch.testing``, ``numpy``, ``numpy.testing``, ``math``, ``builtins``,
  ``transformer`` and its submodules, the checks) refuse to have an existing
  attribute rebound or deleted: ``torch.allclose = lambda *a: True`` is ignored
  and reported;
- snapshots the comparison methods of ``torch.Tensor`` and ``numpy.ndarray``
  and IPython's error reporting (``set_custom_exc``, ``showtraceback``), and
  restores them before and after every cell, reporting any change;
- puts back the names the setup cell binds (``torch``, ``check_attention``)
  and removes names that shadow a builtin.

Every refusal or restoration prints one line that starts with ``GUARD_MARK``
(so it also appears in the student's feedback), which the grader collects into
the gradebook's ``problems`` column. Students never see this module: it is not
part of the exercises. It is one layer of two; the other is a static screen of
the answer cells in ``tools/grade.py``.
"""

from __future__ import annotations

import builtins
import math
import sys
import sysconfig
import types

GUARD_MARK = "grading guard:"
_installed = False
_print = builtins.print
_stdout = sys.stdout


def _say(message: str) -> None:
    _print(f"{GUARD_MARK} {message}", file=_stdout, flush=True)


# The kernel itself rebinds these on every request (to route stdin); they are not the tests' business.
_KERNEL_OWNED = {"input", "raw_input", "getpass"}


# Libraries rebind their own attributes now and then (torch._dynamo wraps torch.manual_seed when it is
# first imported); a rebinding made by code installed in the environment is theirs, not the submission's.
_TRUSTED = tuple(sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")}))


def _from_library() -> bool:
    caller = sys._getframe(2).f_code.co_filename
    return caller.startswith(_TRUSTED)


class _GuardedModule(types.ModuleType):
    """A module whose existing attributes cannot be rebound or deleted."""

    def __setattr__(self, name, value):
        if (name in self.__dict__ and not name.startswith("__") and name not in _KERNEL_OWNED
                and self.__dict__[name] is not value and not _from_library()):
            _say(f"the submission tried to replace {self.__name__}.{name}; the change was ignored")
            return
        super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self.__dict__ and not _from_library():
            _say(f"the submission tried to delete {self.__name__}.{name}; the change was ignored")
            return
        super().__delattr__(name)


def _guard_module(module: types.ModuleType) -> None:
    if type(module) is types.ModuleType:
        module.__class__ = _GuardedModule


def _protected_modules() -> list[types.ModuleType]:
    import numpy
    import numpy.testing
    import torch
    import torch.nn.functional
    import torch.testing

    import transformer
    import transformer.checks

    mods = [torch, torch.nn.functional, torch.testing, numpy, numpy.testing, math, builtins]
    mods += [m for name, m in sorted(sys.modules.items())
             if m is not None and (name == "transformer" or name.startswith("transformer."))]
    return mods


def _class_snapshot() -> dict[tuple[type, str], object]:
    import numpy
    import torch

    names = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__", "__abs__",
             "__sub__", "__array__", "tolist", "item", "all", "any", "allclose", "isclose", "equal", "abs", "max",
             "float", "double", "detach", "numpy", "shape", "dtype"]
    snap = {}
    for cls in (torch.Tensor, numpy.ndarray, float, int, bool):
        for name in names:
            if name in vars(cls):
                snap[(cls, name)] = vars(cls)[name]
    return snap


def _ipython_snapshot():
    try:
        ip = get_ipython()  # noqa: F821 - defined inside IPython
    except NameError:
        return None, {}
    keys = ("custom_exceptions", "CustomTB", "showtraceback", "showsyntaxerror", "run_cell", "run_cell_async")
    return ip, {k: ip.__dict__.get(k, getattr(type(ip), k, None)) for k in keys if hasattr(ip, k)}


def install(setup_source: str = "") -> None:
    """Protect the modules, then check and restore the rest before every cell.

    ``setup_source`` is the assignment's locked setup cell: the names it binds
    (``torch``, ``math``, ``check_attention``, ...) are put back before every
    cell if a submission rebinds them, and names that shadow a builtin
    (``abs = ...``) are removed.
    """
    global _installed, _stdout
    if _installed:
        return
    _installed = True
    _stdout = sys.stdout
    expected: dict[str, object] = {}
    exec(compile(setup_source, "<setup>", "exec"), expected)  # the same imports give the same objects
    expected = {k: v for k, v in expected.items() if not k.startswith("_")}
    for module in _protected_modules():
        _guard_module(module)
    classes = _class_snapshot()
    ip, ip_state = _ipython_snapshot()
    builtin_names = set(vars(builtins)) - (set(ip.user_ns) if ip is not None else set())

    def restore_names(ns: dict) -> None:
        for name, obj in expected.items():
            if name in ns and ns[name] is not obj:
                ns[name] = obj
                _say(f"the submission rebound {name}; it was put back")
        for name in builtin_names & set(ns):
            if not name.startswith("_"):
                del ns[name]
                _say(f"the submission shadowed the builtin {name}; the shadow was removed")

    def restore(*_args) -> None:
        if ip is not None:
            restore_names(ip.user_ns)
        for (cls, name), value in classes.items():
            if vars(cls).get(name) is not value:
                try:
                    setattr(cls, name, value)
                    _say(f"the submission replaced {cls.__name__}.{name}; it was restored")
                except (TypeError, AttributeError):
                    _say(f"the submission replaced {cls.__name__}.{name}; it could not be restored")
        if ip is not None:
            for key, value in ip_state.items():
                current = ip.__dict__.get(key, getattr(type(ip), key, None))
                if current is not value and current != value:
                    if key in type(ip).__dict__ and key not in ("custom_exceptions", "CustomTB"):
                        ip.__dict__.pop(key, None)
                    else:
                        setattr(ip, key, value)
                    _say(f"the submission changed IPython's {key}; it was restored")

    if ip is not None:
        ip.events.register("pre_run_cell", restore)
        ip.events.register("post_run_cell", restore)
