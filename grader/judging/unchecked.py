"""What the static reading cannot check, flagged by what it is rather than chased (``grader/judging/forbidden.py`` uses
it).

The reading resolves names (``grader/judging/reading.py``); where a name is computed it stops. So whatever reaches an
attribute by a computed name is a finding ("dynamic"): a builtin that takes a name (``getattr`` in any use but a
literal call, ``vars``, ``eval``, ...), an attribute that opens a namespace or a lookup (``__getattribute__``,
``__dict__``, ``get_field``, ...), a module made for it (``importlib``, ``pkgutil``, ``operator.attrgetter``,
``string.Formatter``, PyTorch's tables of its own functions); and so is whatever reaches PyTorch's internals
("internal": its operator registry and C bindings, any private ``torch._`` name, its compilers), and whatever switches
off the kernel's recorder ("recorder": the profile and trace hooks, PyTorch's function and dispatch mode stacks).
"""

from __future__ import annotations

import ast
import re
import sys
from types import ModuleType

from grader.judging.reading import literal_getattr

# What the reader cannot follow: whatever turns a string (or a position) into an attribute, a module or code. Any
# use of these is flagged, called or not (passed to map or functools.reduce, aliased, reached through __call__),
# but ``getattr(obj, "literal")``, which is read as ``obj.literal``.
COMPUTED_MODULES = {"importlib", "pkgutil", "codecs", "runpy", "pydoc", "builtins", "ctypes", "gc", "inspect",
                    "IPython", "ipykernel", "subprocess", "socket", "signal", "multiprocessing", "pickle", "marshal",
                    "_operator", "code", "codeop", "timeit", "doctest", "cProfile", "profile", "pdb", "bdb",
                    "trace", "copyreg", "shelve", "zipimport"}
COMPUTED_NAMES = {"sys.modules", "sys._getframe", "operator.attrgetter", "operator.methodcaller", "string.Formatter",
                  "typing.get_type_hints", "typing.ForwardRef", "unittest.mock", "types.CodeType", "types.FunctionType",
                  "types.LambdaType", "torch.overrides.resolve_name",
                  "torch.overrides.get_overridable_functions", "torch.overrides.get_testing_overrides",
                  "torch.overrides.get_ignored_functions"}  # the last: PyTorch's tables of every function
COMPUTED_BUILTINS = {"getattr", "vars", "globals", "locals", "eval", "exec", "compile", "__import__", "setattr",
                     "delattr", "breakpoint", "get_ipython", "__builtins__"}
COMPUTED_ATTRS = {"__getattribute__", "__getattr__", "__dict__", "__globals__", "__builtins__", "__code__",
                  "__closure__", "cell_contents", "__defaults__", "__kwdefaults__", "__subclasses__", "__import__",
                  "__loader__", "__self__", "f_globals", "f_locals", "f_builtins", "f_back", "gi_frame", "cr_frame",
                  "tb_frame", "f_code", "gi_code", "cr_code", "co_names", "co_consts", "co_code", "__spec__",
                  "get_field", "attrgetter", "methodcaller", "getattr_static", "import_module",
                  "resolve_name", "get_overridable_functions", "get_testing_overrides",
                  "sys"}  # any module's sys is sys: torch.sys.modules, os.sys
# What switches the kernel's recorder off: the profile and trace hooks, and PyTorch's function and dispatch modes.
RECORDER_NAMES = ("sys.setprofile", "sys.settrace", "sys.monitoring", "threading.setprofile", "threading.settrace",
                  "threading.setprofile_all_threads", "threading.settrace_all_threads", "_thread", "torch.overrides",
                  "torch.utils._python_dispatch")
RECORDER_ATTRS = {"setprofile", "settrace", "setprofile_all_threads", "settrace_all_threads", "monitoring"}
RECORDER_TORCH = re.compile(r"torch_?function|torch_?dispatch|dispatch_?mode|python_?dispatch|_push_mode|_pop_mode"
                            r"|dispatch_tls|dispatchkey", re.I)  # torch._C._set_torch_function_mode, TorchDispatchMode
# PyTorch's internals (any operator or binding by name, its private names) and what runs code no cell shows.
INTERNAL = ("torch.ops", "torch.library", "torch.utils.cpp_extension", "torch.jit", "torch.compile", "torch.hub",
            "torch.package")
WHY = {"dynamic": "reaches an attribute by a computed name through {}, which the grader cannot check",
       "internal": "reaches PyTorch's internals through {}, which the grader cannot check",
       "recorder": "switches off the grader's recorder through {}"}
_MISSING = object()


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _canonical(dotted: str) -> str:
    """``dotted`` with its longest prefix that names a loaded module written as that module's own name
    (``torch.nn.functional.torch._C.x`` is ``torch._C.x``, ``numpy.sys.modules`` is ``sys.modules``)."""
    parts = dotted.split(".")
    obj, best = sys.modules.get(parts[0], _MISSING), dotted
    for i in range(1, len(parts) + 1):
        if isinstance(obj, ModuleType) and isinstance(getattr(obj, "__name__", None), str):
            best = ".".join([obj.__name__, *parts[i:]])
        try:
            obj = vars(obj).get(parts[i], _MISSING) if i < len(parts) else _MISSING
        except TypeError:
            obj = _MISSING
        if obj is _MISSING:
            return best
    return best


def _kinds(dotted: str):
    """(kind, key) of every reason the dotted name cannot be checked (see ``WHY``); the key tells reaches apart."""
    name = _canonical(dotted)
    parts = name.split(".")
    if parts[0] in COMPUTED_MODULES or _under(name, COMPUTED_NAMES) or "sys" in dotted.split(".")[1:]:
        yield "dynamic", parts[0]
    elif _under(name, RECORDER_NAMES) or parts[0] in ("sys", "threading") and RECORDER_ATTRS & set(parts[1:]) \
            or parts[0] == "torch" and RECORDER_TORCH.search(name):
        yield "recorder", "recorder"
    private = any(p.startswith("_") and not p.endswith("__") for p in parts[1:])
    if parts[0] == "torch" and (private or _under(name, INTERNAL)):
        yield "internal", ".".join(parts[:2])


def _identifier(node: ast.AST, parents: dict) -> tuple[str, str, str] | None:
    """(kind, key, what) when ``node`` names what cannot be checked by its own identifier, whatever it is taken on:
    a builtin of ``COMPUTED_BUILTINS`` used otherwise than as ``getattr(obj, "literal")``, an attribute of
    ``COMPUTED_ATTRS``, ``RECORDER_ATTRS`` or ``RECORDER_TORCH``."""
    word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if word is None:
        return None
    parent = parents.get(node)
    if isinstance(node, ast.Name) and word in COMPUTED_BUILTINS:
        if word == "getattr" and isinstance(parent, ast.Call) and parent.func is node:
            return None if literal_getattr(parent) else ("dynamic", word, "getattr with a computed name")
        return "dynamic", word, f"{word}()" if word != "__builtins__" else word
    if isinstance(node, ast.Attribute) and word in COMPUTED_ATTRS:
        return "dynamic", word, f".{word}"
    if isinstance(node, ast.Attribute) and (word in RECORDER_ATTRS or RECORDER_TORCH.search(word)):
        return "recorder", "recorder", f".{word}"
    return None


def reaches(nodes: list[ast.AST], parents: dict, used: dict[str, int]):
    """(line, kind, what) for everything in the cell the grader cannot check, one per kind and module or builtin
    (the most specific)."""
    hits: dict[tuple, tuple[int, str]] = {}

    def hit(line: int, kind: str, key: str, what: str) -> None:
        if (kind, key) not in hits or len(what) > len(hits[kind, key][1]):
            hits[kind, key] = (line, what)

    for dotted, line in used.items():
        if not dotted.startswith("."):
            for kind, key in _kinds(dotted):
                hit(line, kind, key, dotted)
    named = {(kind, part) for (kind, _), (_, what) in hits.items() for part in what.split(".")}
    for node in nodes:
        found = _identifier(node, parents)
        if found is not None and (found[0], found[2].strip(".()")) not in named:  # not named by a dotted name
            hit(getattr(node, "lineno", 0), *found)
    return sorted((line, kind, what) for (kind, _), (line, what) in hits.items())
