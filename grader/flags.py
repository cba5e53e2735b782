"""For the instructor's eye: code that reaches into modules dynamically, read statically, never run.

Scores do not depend on this (the sandbox and the outside verdicts do that). A flag says "read this
submission": calling the package's own function instead of writing it, through ``getattr`` with a
string, ``__import__``, ``importlib`` or ``sys.modules``, is something a human decides about.
"""

from __future__ import annotations

import ast

DYNAMIC_CALLS = {"__import__", "exec", "eval", "compile", "vars", "globals", "setattr", "delattr", "get_ipython",
                 "breakpoint"}
DYNAMIC_MODULES = {"importlib", "ctypes", "gc", "inspect", "builtins", "sys", "IPython", "ipykernel", "subprocess",
                   "socket", "signal", "multiprocessing", "pickle", "marshal"}
DYNAMIC_ATTRS = {"__dict__", "__globals__", "__code__", "__builtins__", "__subclasses__", "modules", "_getframe"}


def flags(source: str, where: str, modules: set[str]) -> list[str]:
    """What in ``source`` reaches into modules dynamically; ``modules`` are the names bound to modules."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [f"{where}: not plain Python (IPython magic or shell line); read it"]
    out = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in DYNAMIC_CALLS:
                out.append(f"{where} line {line}: calls {name}()")
            elif name == "getattr" and node.args and isinstance(node.args[0], (ast.Name, ast.Attribute)):
                root = node.args[0]
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in modules:
                    out.append(f"{where} line {line}: getattr on the module {root.id}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for m in names:
                if m.split(".")[0] in DYNAMIC_MODULES:
                    out.append(f"{where} line {line}: imports {m}")
        elif isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRS:
            out.append(f"{where} line {line}: uses .{node.attr}")
    return list(dict.fromkeys(out))


def module_names(sources: list[str]) -> set[str]:
    """Names bound by ``import`` statements anywhere in ``sources``."""
    names: set[str] = set()
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names |= {a.asname or a.name for a in node.names}
    return names


def submission_flags(nb) -> list[str]:
    """Flags for every code cell the student wrote (answer cells and added cells)."""
    cells = [c for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("locked")]
    modules = module_names([c.source for c in nb.cells if c.cell_type == "code"])
    out = []
    for i, cell in enumerate(cells):
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"added cell {i + 1}"
        out += flags(cell.source, where, modules)
    return out
