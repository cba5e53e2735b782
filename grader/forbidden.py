"""Forbidden shortcuts and dynamic reaches, read statically from the cells a student wrote (never run).

Each hidden-test module declares ``FORBIDS = {grade_id: Forbid(function, names)}``, what its exercise's
text forbids (``**Do not use:**``): dotted names of modules (``transformer``: the whole package) or callables.
:func:`findings` resolves imports (``as`` too), aliases, attribute chains and ``getattr`` with a literal;
a use in an answer cell counts against its exercise, one in an added cell against every exercise that
forbids it. Names built at run time cannot be read: they are reported as dynamic reaches, for a person.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from dataclasses import dataclass
from types import ModuleType

MAX_CHARS = 200_000
EXEMPT = ("transformer.checks",)  # the public checks: calling them is no shortcut
DYNAMIC_MODULES = {"importlib", "pkgutil", "codecs", "runpy", "pydoc", "builtins", "ctypes", "gc", "inspect",
                   "IPython", "ipykernel", "subprocess", "socket", "signal", "multiprocessing", "pickle", "marshal"}
DYNAMIC_NAMES = {"sys.modules", "sys._getframe", "operator.attrgetter", "operator.methodcaller"}
DYNAMIC_CALLS = {"__import__", "exec", "eval", "compile", "globals", "vars", "setattr", "delattr", "get_ipython",
                 "breakpoint", "__builtins__"}
DYNAMIC_ATTRS = {"__dict__", "__globals__", "__code__", "__builtins__", "__subclasses__", "__import__", "__loader__"}
MAGIC = re.compile(r"^(\s*)(?:[%!]|[\w.,\s\[\]]+=\s*[%!])")
_MISSING = object()


@dataclass(frozen=True)
class Forbid:
    """What one exercise forbids: ``function`` is the name its hidden tests call or read, ``names`` are
    dotted names of modules (everything in them) or callables."""

    function: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    """One thing to read: ``grade_id`` is the exercise it counts against (None: it is only flagged)."""

    grade_id: str | None
    function: str | None
    name: str   # the forbidden name used, what reaches dynamically, or why the cell was not read
    where: str  # "ex2_answer line 3"
    kind: str = "uses"  # "uses", "dynamic" or "unread"
    used: str = ""      # the name as the cell resolves it, when it differs from ``name``

    @property
    def text(self) -> str:
        head = f"{self.grade_id} ({self.function}): " if self.grade_id else ""
        if self.kind == "uses":
            used = f"{self.used} ({self.name})" if self.used and self.used != self.name else self.name
            return f"{head}uses {used}, which this exercise forbids ({self.where})"
        if self.kind == "dynamic":
            return f"{head}{self.where}: reaches modules dynamically through {self.name}; read it"
        return f"{head}{self.where}: {self.name}; read it"


def forbids(assignment: str) -> dict[str, Forbid]:
    """grade_id -> what that exercise forbids (``FORBIDS`` beside the assignment's hidden tests)."""
    from grader.hidden import module_for

    return dict(getattr(module_for(assignment), "FORBIDS", {}))


# ------------------------------------------------------------------ names and objects


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _object(dotted: str):
    """The object ``dotted`` names among the modules already loaded here (nothing is imported), or _MISSING."""
    parts = dotted.split(".")
    obj = sys.modules.get(parts[0], _MISSING)
    for part in parts[1:]:
        try:
            obj = vars(obj).get(part, _MISSING)
        except TypeError:
            return _MISSING
        if obj is _MISSING:
            return _MISSING
    return obj


def matches(used: str, name: str) -> bool:
    """Whether the dotted name ``used`` is the forbidden ``name``, something inside it, or the same object
    (``torch._C._nn.scaled_dot_product_attention`` is ``F.scaled_dot_product_attention``); what lives in
    the public checks is never forbidden, what they merely import is."""
    want, got = _object(name), _object(used)
    if got is not _MISSING:
        home = got.__name__ if isinstance(got, ModuleType) else getattr(got, "__module__", None)
        if got is want:
            return True
        if isinstance(home, str) and _under(home, EXEMPT):
            return False
        if isinstance(want, ModuleType) and isinstance(home, str) and _under(home, (want.__name__,)):
            return True
    return not _under(used, EXEMPT) and _under(used, (name,))


def _dynamic(dotted: str) -> bool:
    return dotted.split(".")[0] in DYNAMIC_MODULES or _under(dotted, DYNAMIC_NAMES)


# ------------------------------------------------------------------ reading cells


def parse(source: str) -> tuple[ast.AST | None, list[tuple[int, str]]]:
    """The cell's syntax tree (IPython magic and shell lines read as ``pass``) and what could not be read."""
    if len(source) > MAX_CHARS:
        return None, [(0, f"too long to read ({len(source)} characters)")]
    lines, magics = [], []
    for i, line in enumerate(source.split("\n"), 1):
        magic = MAGIC.match(line)
        lines.append(magic.group(1) + "pass" if magic else line)
        magics += [i] if magic else []
    many = f"{len(magics)} IPython magic or shell lines" if len(magics) > 1 else "an IPython magic or shell line"
    notes = [(magics[0], many)] if magics else []
    try:
        return ast.parse("\n".join(lines)), notes
    except Exception as exc:  # noqa: BLE001 - SyntaxError, MemoryError, RecursionError, ValueError: never fatal
        return None, [*notes, (getattr(exc, "lineno", None) or 0, f"not plain Python ({type(exc).__name__})")]


def _chain(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """The root of an attribute chain (``getattr(x, "literal")`` counts as ``x.literal``) and its names."""
    attrs = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif _literal_getattr(node):
            attrs.append(node.args[1].value)
            node = node.args[0]
        else:
            return node, attrs[::-1]


def _literal_getattr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))


def resolve(node: ast.AST, env: dict[str, set[str]], stars: list[str]) -> set[str]:
    """The dotted names an expression may stand for, from the bindings ``env`` (name -> dotted names)."""
    root, attrs = _chain(node)
    if not isinstance(root, ast.Name):
        return set()
    bases = env.get(root.id) or {f"{s}.{root.id}" for s in stars}
    return {".".join([b, *attrs]) for b in bases}


def _binds(node: ast.AST, env: dict, stars: list[str]):
    """(name, dotted name) pairs that ``node`` binds."""
    if isinstance(node, ast.Import):
        for a in node.names:
            yield (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for a in node.names:
            if a.name == "*":
                stars.append(node.module)
            else:
                yield a.asname or a.name, f"{node.module}.{a.name}"
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            pairs = [(target, node.value)]
            while pairs:
                t, v = pairs.pop()
                if isinstance(t, ast.Name):
                    yield from ((t.id, d) for d in resolve(v, env, stars))
                elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)):
                    pairs += list(zip(t.elts, v.elts))


def bindings(trees: list[ast.AST]) -> tuple[dict[str, set[str]], list[str]]:
    """What every name may stand for, over every cell (aliases of aliases too), and the ``import *`` modules."""
    env: dict[str, set[str]] = {}
    stars: list[str] = []
    for _ in range(4):
        before = sum(map(len, env.values()))
        for tree in trees:
            for node in ast.walk(tree):
                for name, dotted in _binds(node, env, stars):
                    if len(env.setdefault(name, set())) < 20:
                        env[name].add(dotted)
        if sum(map(len, env.values())) == before:
            break
    return env, list(dict.fromkeys(stars))


# ------------------------------------------------------------------ one cell


def _maximal(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether ``node`` is a whole name or attribute chain (not the inside of a longer one)."""
    if not isinstance(node, (ast.Name, ast.Attribute)) and not _literal_getattr(node):
        return False
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return False
    return not (_literal_getattr(parent) and parent.args[0] is node)


def _names_used(tree: ast.AST, env: dict, stars: list[str]):
    """(line, dotted name) for every import and every whole name or attribute chain of the cell."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            yield from ((line, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield line, node.module
            yield from ((line, f"{node.module}.{a.name}") for a in node.names if a.name != "*")
        elif _maximal(node, parents.get(node)):
            yield from ((line, d) for d in sorted(resolve(node, env, stars)))


def _reaches(tree: ast.AST, env: dict, stars: list[str]):
    """(line, what) for every dynamic reach of the cell, one per module or builtin (the most specific)."""
    hits: dict[str, tuple[int, str]] = {}

    def hit(line: int, what: str) -> None:
        key = what.split(".")[0]
        if key not in hits or len(what) > len(hits[key][1]):
            hits[key] = (line, what)

    for line, dotted in _names_used(tree, env, stars):
        if _dynamic(dotted):
            hit(line, dotted)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id in DYNAMIC_CALLS and node.id not in env:
            hit(line, f"{node.id}()" if node.id != "__builtins__" else node.id)
        elif isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRS:
            hit(line, f".{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and "getattr" not in env and not _literal_getattr(node)):
            hit(line, "getattr with a computed name")
    return sorted(hits.values())


def _student_cells(nb) -> list[tuple[str, str | None, str]]:
    """(where, grade_id, source) of every code cell the student wrote: an answer cell counts against the
    grade cell that follows it, an added cell (grade_id ``"*"``) against every exercise."""
    out, waiting, added = [], [], 0
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            out += [(where, meta.get("grade_id"), src) for where, src in waiting]
            waiting = []
        if cell.cell_type != "code" or (meta.get("locked") and not meta.get("solution")):
            continue
        if meta.get("solution") and meta.get("grade"):
            out.append((str(meta.get("grade_id")), meta.get("grade_id"), cell.source))
        elif meta.get("solution"):
            waiting.append((str(meta.get("grade_id") or "answer cell"), cell.source))
        else:
            added += 1
            out.append((f"added cell {added}", "*", cell.source))
    return out + [(where, None, src) for where, src in waiting]


def findings(nb, assignment: str, rules: dict[str, Forbid] | None = None) -> list[Finding]:
    """What to read in the student's cells of ``nb`` (the rebuilt notebook): forbidden uses first."""
    rules = forbids(assignment) if rules is None else rules
    for root in {n.split(".")[0] for f in rules.values() for n in f.names}:  # trusted packages: names -> objects
        importlib.import_module(root)
    cells = _student_cells(nb)
    parsed = [parse(src) for _, _, src in cells]
    locked = [c.source for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("locked")]
    trees = [t for t in (parse(src)[0] for src in locked) if t is not None] + [t for t, _ in parsed if t]
    env, stars = bindings(trees)
    uses, other = {}, []
    for (where, gid, _), (tree, notes) in zip(cells, parsed):
        counts = [g for g in rules if gid in ("*", g)]
        owner = gid if gid in rules else None
        fn = rules[owner].function if owner else None
        for line, why in notes:
            other.append(Finding(owner, fn, why, f"{where} line {line}" if line else where, "unread"))
        if tree is None:
            continue
        for line, dotted in _names_used(tree, env, stars):
            for g in counts:
                for name in rules[g].names:
                    if matches(dotted, name):
                        key = (g, name, where)
                        if key not in uses or (line, -len(dotted)) < uses[key][0]:  # first line, longest name
                            uses[key] = ((line, -len(dotted)), Finding(g, rules[g].function, name,
                                                                       f"{where} line {line}", used=dotted))
        other += [Finding(owner, fn, what, f"{where} line {line}", "dynamic")
                  for line, what in _reaches(tree, env, stars)]
    return [f for _, f in uses.values()] + other

