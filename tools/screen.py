"""Static screen of a submission's code cells, run by the grader before any code executes.

It looks for the ways a submission could change what the tests rely on instead
of solving the exercise: rebinding an attribute of an imported module
(``torch.allclose = ...``), rebinding a name the locked setup cell imports
(``check_attention = ...``), and reaching into the interpreter (``setattr``,
``exec``, ``get_ipython``, ``sys.modules``, ``__dict__``, ``gc``, ...).

Each offending statement is replaced by ``pass`` and reported. The runtime
guard (``transformer/_grading_guard.py``) is the second layer, for what a
static look cannot see.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FORBIDDEN_CALLS = {"setattr", "delattr", "vars", "globals", "exec", "eval", "compile", "__import__",
                   "get_ipython", "breakpoint"}
FORBIDDEN_MODULES = {"builtins", "gc", "ctypes", "inspect", "importlib", "sys", "IPython", "ipykernel",
                     "nbgrader", "transformer._grading_guard", "transformer.checks"}
FORBIDDEN_ATTRS = {"__dict__", "__class__", "__setattr__", "__delattr__", "__code__", "__globals__",
                   "__builtins__", "__closure__", "__subclasses__", "__mro__", "__bases__", "__getattribute__"}


@dataclass
class Finding:
    cell: str
    line: int
    reason: str


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def module_aliases(sources: list[str]) -> set[str]:
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


BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _own_nodes(stmt: ast.stmt):
    """The nodes of ``stmt`` itself, not of the statements nested in its bodies."""
    yield stmt
    for field, value in ast.iter_fields(stmt):
        if field in BODIES:
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from ast.walk(child)


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, (ast.Assign, ast.Delete)):
        raw = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        raw = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        raw = [item.optional_vars for item in node.items if item.optional_vars is not None]
    else:
        return []
    out = []
    for t in raw:
        out.extend(t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
    return out


def _reasons(stmt: ast.stmt, aliases: set[str], protected: set[str]) -> list[str]:
    out = []
    for node in _own_nodes(stmt):
        for t in _targets(node):
            if isinstance(t, (ast.Attribute, ast.Subscript)) and _root_name(t) in aliases:
                out.append(f"assigns {ast.unparse(t)}")
            elif isinstance(t, ast.Name) and t.id in protected:
                out.append(f"rebinds {t.id}, which the setup cell provides")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in protected:
            out.append(f"redefines {node.name}, which the setup cell provides")
        if isinstance(node, (ast.Global, ast.Nonlocal)) and set(node.names) & protected:
            out.append(f"declares {', '.join(sorted(set(node.names) & protected))} global")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for m in mods:
                if m in FORBIDDEN_MODULES or m.split(".")[0] in FORBIDDEN_MODULES:
                    out.append(f"imports {m}")
            for a in node.names:
                bound = (a.asname or a.name).split(".")[0]
                if bound in protected and not (isinstance(node, ast.Import) and a.asname is None
                                               and a.name.split(".")[0] == bound):
                    out.append(f"rebinds {bound}, which the setup cell provides")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            out.append(f"calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            out.append(f"uses {node.attr}")
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "_guard"):
            out.append(f"uses {node.id}")
    return sorted(set(out))


def _statements(body: list[ast.stmt]):
    """Every statement, nested ones included, innermost last."""
    for stmt in body:
        yield stmt
        for field in BODIES:
            for child in getattr(stmt, field, []) or []:
                if isinstance(child, ast.ExceptHandler) or hasattr(child, "body") and not isinstance(child, ast.stmt):
                    yield from _statements(child.body)
                elif isinstance(child, ast.stmt):
                    yield from _statements([child])


def screen_cell(source: str, cell: str, aliases: set[str], protected: set[str]) -> tuple[str, list[Finding]]:
    """Return the cell with every offending top-level statement replaced by ``pass``, and the findings."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []  # it will fail when it runs, honestly
    lines = source.splitlines()
    findings: list[Finding] = []
    flagged = [(stmt, r) for stmt in _statements(tree.body) if (r := _reasons(stmt, aliases, protected))]
    for stmt, reasons in sorted(flagged, key=lambda sr: sr[0].lineno, reverse=True):
        findings.extend(Finding(cell, stmt.lineno, r) for r in reasons)
        first = lines[stmt.lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        lines[stmt.lineno - 1: stmt.end_lineno] = [f"{indent}pass  # removed by the grader: {reasons[0]}"]
    return "\n".join(lines), sorted(findings, key=lambda f: f.line)
