"""Which forbidden callables ran while a probe called the student's function (runs in the kernel).

``with recording(names) as ran: fn(*args)`` fills ``ran`` with the forbidden names (as given) whose code ran during
the call, seen two ways at once: Python's profile hook (``c_call`` events: a C function by identity, a tensor method
by name on a tensor, made from Python, inside PyTorch's own Python wrappers too; ``call`` events: a Python function
or class by its code, a module by the module of each frame: ``transformer``, never the frames of the public
checks, ``checks``), and PyTorch's own entry point, a ``TorchFunctionMode`` (every call of PyTorch's API,
however it is made: from ``map``, ``functools.partial`` or other C code, which makes no profile event; an operator
of ``torch.ops`` by its name). The mode costs every call of PyTorch's API a call into Python (the hidden tests of an
exercise that forbids a PyTorch function ran 2.5 times slower in ``make bench``'s ``forbidden-recorder`` row): it is
entered only when it has something to watch. A name is watched under its routes (``routes.py``: the private
operators that do its whole work, such as ``torch._native_multi_head_attention`` for
``F.scaled_dot_product_attention``, included) but the callers (whose code need not reach it):
``torch.ops.aten.layer_norm.default`` or ``torch.native_layer_norm`` reports ``torch.nn.functional.layer_norm``.
Only calls made on the student's behalf count: walking up from the call past library code (the environment, the
package), the student's code comes before the probe's own (this folder), which may build references of its own.
``ran.off`` says what of the recorder was found switched off or replaced after the call (``OFF``). The student's
code runs in the same process and can hide from any recorder inside it, or forge the report: the grader flags what
it reports, for a person, and never raises a score on it. Standard library and torch only.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import sysconfig
import threading
import types
from contextlib import contextmanager

from .routes import resolve, routes, under

EXEMPT = ("checks",)  # the public checks are no shortcut
HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the grader's kernel-side code: the probes' own calls
PASSING = ("__torch_function__",)  # the mode's frames here: calls pass through them
OFF = ("profile", "function mode", "replaced")  # what a reply's "off" may say, and nothing else
_GENUINE: dict = {}  # the hooks' functions as they were before the student's first cell (``prepare``)
_LIBRARY: list = []  # folders of code that is neither the student's nor the probes'


def prepare(library) -> None:
    """Before the student's first cell: keep the folders of library code (``library``: the environment, the package)
    and the genuine functions of the recorder's hooks, which a cell may replace later (PyTorch imported now)."""
    _LIBRARY[:] = [os.path.join(str(p), "") for p in library]
    torch = importlib.import_module("torch")
    _GENUINE.clear()
    _GENUINE.update(_hooks(torch))


def _hooks(torch) -> dict:
    """The functions and classes the recorder relies on, by name (``replaced`` when one is no longer the same)."""
    c = torch._C
    return {"sys.setprofile": sys.setprofile, "sys.getprofile": sys.getprofile,
            "threading.setprofile": threading.setprofile, "function_mode": torch.overrides.TorchFunctionMode,
            **{n: getattr(c, n) for n in ("_push_on_torch_function_stack", "_pop_torch_function_stack",
                                          "_len_torch_function_stack", "_get_function_stack_at")}}


def _library() -> tuple:
    if not _LIBRARY:  # not prepared (outside a graded kernel): the standard library and the environment
        paths = sysconfig.get_paths()
        _LIBRARY.extend({os.path.join(p, "") for k, p in paths.items() if k.endswith(("stdlib", "lib"))})
    return tuple(_LIBRARY)


def _students(frame) -> bool:
    """Whether the call made from ``frame`` was made for the student's code (not for a probe's own work): walking up
    past library code (and the modes' handlers), a frame of the student's (any module name) comes before one of this
    folder; or, in a thread the student's code started (whose frames are all the library's), there is none."""
    library = _library()
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith(HERE):
            if frame.f_code.co_name not in PASSING:
                return False
        elif not file.startswith(library) and not file.startswith("<frozen "):
            return True
        frame = frame.f_back
    return threading.current_thread() is not threading.main_thread()  # a thread started while a probe ran


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


def _operator(obj) -> str | None:
    """The registry's name of the ATen operator ``obj`` is (``aten::layer_norm``), if it is one of ``torch.ops``."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch._ops.OpOverload):
        return obj._schema.name
    return obj._qualified_op_name if torch is not None and isinstance(obj, torch._ops.OpOverloadPacket) else None


def targets(names, given: dict | None = None) -> tuple[dict, dict, list, dict, dict]:
    """What to watch for the forbidden ``names``, each under all its routes (:func:`routes`, without the callers,
    whose code may not reach it): (id -> (C function, [names]), code -> [names], [(module name, name)],
    tensor method name -> [names], ATen operator name -> [names]). ``given``: name -> the dotted names of its
    routes, as the grader derived them (the grading's kernels: only resolved here); without it, derived here."""
    c_functions, codes, modules, methods, operators = {}, {}, [], {}, {}
    for name in names:
        obj = resolve(name)
        if inspect.ismodule(obj):
            modules.append((obj.__name__, name))
            continue
        try:
            found = routes(name, callers=False).values() if given is None else map(resolve, given.get(name, ()))
            others = [o for o in found if o is not None] if obj is not None else []
        except Exception:  # noqa: BLE001 - a torch the student's code broke: the name alone is watched
            others = []
        for what in [obj, *others] if obj is not None else []:
            if (op := _operator(what)) is not None:
                operators.setdefault(op, []).append(name)
            if isinstance(what, types.MethodDescriptorType):
                methods.setdefault(what.__name__, []).append(name)
            elif (c := _c_function(what)) is not None:
                c_functions.setdefault(id(c), (c, []))[1].append(name)  # the object is kept: its id stays its own
            else:
                for code in _codes(what):
                    codes.setdefault(code, []).append(name)
    return c_functions, codes, modules, methods, operators


class Record(list):
    """The forbidden names that ran, in order, once each; ``off``: what of the recorder was found off (``OFF``)."""

    def __init__(self):
        super().__init__()
        self.off: list[str] = []

    def hit(self, found) -> None:
        self.extend(n for n in dict.fromkeys(found) if n not in self)


def _in_modules(frame, modules: list) -> list:
    """The watched names of the modules ``frame``'s code belongs to (``transformer``, not ``checks``)."""
    module = frame.f_globals.get("__name__")
    if not isinstance(module, str) or under(module, EXEMPT):
        return []
    return [n for m, n in modules if under(module, (m,))][:1]


def _function_mode(torch, record: Record, c_functions: dict, codes: dict, methods: dict, operators: dict):
    """A function mode that records what it sees on the student's behalf: every call of PyTorch's API, however it is
    made (from Python, ``map``, ``functools.partial`` or other C code), an operator of ``torch.ops`` too."""
    hooks = _GENUINE or _hooks(torch)

    def called(func):
        entry = c_functions.get(id(func))
        found = entry[1] if entry is not None and entry[0] is func else codes.get(getattr(func, "__code__", None))
        if found is None and isinstance(func, types.MethodDescriptorType):
            found = methods.get(func.__name__)
        return found if found is not None else operators.get(_operator(func))

    class Calls(hooks["function_mode"]):
        seen: dict = {}  # what each function is, worked out once: PyTorch's functions live as long as the kernel

        def __torch_function__(self, func, classes, args=(), kwargs=None):
            found = _once(self.seen, func, called)
            if found and _students(sys._getframe(1)):
                record.hit(found)
            return func(*args, **(kwargs or {}))

    return Calls()


def _once(seen: dict, func, what):
    """``what(func)``, remembered in ``seen`` (``func`` kept beside it, so its id stays its own)."""
    entry = seen.get(id(func))
    if entry is None or entry[0] is not func:
        entry = seen[id(func)] = (func, what(func))
    return entry[1]


def _on_top(hooks: dict, mode) -> bool:
    """Whether ``mode`` is the top of PyTorch's function mode stack."""
    size = hooks["_len_torch_function_stack"]()
    return size > 0 and hooks["_get_function_stack_at"](size - 1) is mode


def _leave(hooks: dict, mode) -> None:
    """``mode`` off its stack: by its own ``__exit__`` when it is on top, else with what a cell left above it."""
    if _on_top(hooks, mode):
        mode.__exit__(None, None, None)
        return
    size = hooks["_len_torch_function_stack"]()
    below = [i for i in range(size) if hooks["_get_function_stack_at"](i) is mode]
    for _ in range(size - below[0] if below else 0):
        hooks["_pop_torch_function_stack"]()


@contextmanager
def recording(names, given: dict | None = None):
    """Record (into the :class:`Record` it yields) which of ``names`` ran inside the ``with`` block (``given``: their
    routes' dotted names, as :func:`targets` takes them)."""
    c_functions, codes, modules, methods, operators = targets(names, given)
    torch = sys.modules["torch"]
    record = Record()
    hooks = _GENUINE or _hooks(torch)
    if any(v is not hooks[k] for k, v in _hooks(torch).items()):
        record.off.append("replaced")

    watched: dict = {}  # code -> what its frames are (a code's module does not change): one look-up per frame

    def profile(frame, event, arg):  # Python's profile hook: new Python frames, and C calls made from Python
        if event == "call":
            found = watched.get(frame.f_code, watched)
            if found is watched:
                found = watched[frame.f_code] = codes.get(frame.f_code) or _in_modules(frame, modules)
            if found and _students(frame.f_back):
                record.hit(found)
        elif event == "c_call":
            entry = c_functions.get(id(arg))
            found = entry[1] if entry is not None and entry[0] is arg else None
            if found is None and methods and isinstance(getattr(arg, "__self__", None), torch._C.TensorBase):
                found = methods.get(getattr(arg, "__name__", None))  # a tensor's method, bound for the call
            if found and _students(frame):
                record.hit(found)

    # PyTorch's function mode sees every call of its API however it is made (from ``map`` or ``functools.partial``
    # too), but costs every call a call into Python: it is entered only when it has something to watch. Its stack
    # is a thread's own: a thread the answer starts has the profile hook alone.
    watching = c_functions or codes or methods or operators
    mode = _function_mode(torch, record, c_functions, codes, methods, operators) if watching else None
    before, before_threads = hooks["sys.getprofile"](), threading.getprofile()
    hooks["threading.setprofile"](profile)
    hooks["sys.setprofile"](profile)
    if mode is not None:
        mode.__enter__()
    try:
        yield record
    finally:
        record.off += [] if mode is None or _on_top(hooks, mode) else ["function mode"]
        record.off += [] if hooks["sys.getprofile"]() is profile else ["profile"]
        if mode is not None:
            _leave(hooks, mode)
        hooks["sys.setprofile"](before)
        hooks["threading.setprofile"](before_threads)
        record.off[:] = [w for w in OFF if w in record.off]
