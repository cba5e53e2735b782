"""Forbidden shortcuts, and what the grader cannot check, read statically from the cells a student wrote (never run).

Each hidden-test module declares ``FORBIDS = {grade_id: Forbid(function, names)}``, what its exercise's
text forbids (``**Do not use:**``): dotted names of modules (``transformer``: the whole package) or callables.
A callable stands for the same code by every name PyTorch gives it (``kernel_side.routes``: its ATen
operators and overloads, the private operators that do its whole work, its other bindings, its tensor method, the
``torch.nn`` classes and functions that call it). :func:`findings` resolves imports (``as`` too), aliases, attribute
chains and ``getattr`` with a literal, each name in its scope, and reads a method taken on anything else by its name
(``x.repeat_interleave``); a use in an answer cell counts against its exercise, one in an added cell against every
exercise that forbids it (``grader/judging/reading.py`` reads the names). The reading stops where a name is computed, so
it does not chase the ways to compute one: whatever reaches an attribute by a computed name (``getattr`` in any use
but a literal call, ``vars``, ``__dict__``, ``__getattribute__``, ``importlib``, ``eval``, PyTorch's tables of its
functions, ...), whatever reaches PyTorch's internals (``torch.ops``, ``torch._C``, any private ``torch._`` name)
and whatever switches off the kernel's recorder (``sys.setprofile``, PyTorch's mode stacks) is flagged by what it
is, for a person (``grader/judging/unchecked.py``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from types import ModuleType

from grader import limits
from grader.hidden import Forbid, module_for
from grader.judging.reading import bindings, index, names_used, parse
from grader.judging.unchecked import WHY, reaches
from grader.kernel_side.routes import routes
from layout import nbmeta

EXEMPT = ("checks",)  # the public checks: calling them is no shortcut
_MISSING = object()


@dataclass(frozen=True)
class Finding:
    """One thing to read: ``grade_id`` is the exercise it counts against (None: it is only flagged)."""

    grade_id: str | None
    function: str | None
    name: str   # the forbidden name used, what the grader cannot check, or why the cell was not read
    where: str  # "ex2_answer line 3"
    kind: str = "uses"  # "uses", "unread", or one of WHY: "dynamic", "internal", "recorder"
    used: str = ""      # the name as the cell resolves it, when it differs from ``name``

    @property
    def text(self) -> str:
        head = f"{self.grade_id} ({self.function}): " if self.grade_id else ""
        if self.kind == "uses":
            used = f"{self.used} ({self.name})" if self.used and self.used != self.name else self.name
            used = f"the method {used}" if used.startswith(".") else used
            return f"{head}uses {used}, which this exercise forbids ({self.where})"
        if self.kind in WHY:
            return f"{head}{self.where}: {WHY[self.kind].format(self.name)}; read it"
        return f"{head}{self.where}: {self.name}; read it"


def forbids(assignment: str) -> dict[str, Forbid]:
    """grade_id -> what that exercise forbids (``FORBIDS`` beside the assignment's hidden tests)."""
    return dict(getattr(module_for(assignment), "FORBIDS", {}))


def watched(rules: dict[str, Forbid]) -> dict[str, dict[str, tuple[str, ...]]]:
    """grade_id -> {forbidden name: the dotted names of its routes without the callers}: what the kernel's recorder
    watches while that exercise is probed. Derived here, once for a run: in each kernel it took half a second of CPU
    (reading the code of ``torch.nn``); the kernel resolves the names (``kernel_side/forbidden_calls.targets``)."""
    return {gid: {name: tuple(routes(name, callers=False)) for name in rule.names} for gid, rule in rules.items()}


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


@functools.lru_cache(maxsize=None)
def _routes(name: str) -> tuple[tuple[str, ...], frozenset, frozenset, tuple]:
    """The routes of the forbidden ``name``: (dotted names, ids of their objects, tensor methods, the objects)."""
    found = routes(name)
    methods = {r.rsplit(".", 1)[1] for r in [name, *found] if r.startswith("torch.Tensor.") and r.count(".") == 2}
    return tuple(found), frozenset(map(id, found.values())), frozenset(methods), tuple(found.values())


def matches(used: str, name: str) -> bool:
    """Whether the dotted name ``used`` is the forbidden ``name``, something inside it, or the same object
    (``torch._C._nn.scaled_dot_product_attention`` is ``F.scaled_dot_product_attention``), or one of its routes
    (``torch.ops.aten.layer_norm.default``, ``torch.nn.LayerNorm``, by any name); ``.method`` (a method taken on
    something no name stands for) when it is the forbidden callable's tensor method. What lives in the public
    checks is never forbidden, what they merely import is."""
    names, ids, methods, _ = _routes(name)
    if used.startswith("."):
        return used[1:] in methods
    want, got = _object(name), _object(used)
    if got is not _MISSING:
        home = got.__name__ if isinstance(got, ModuleType) else getattr(got, "__module__", None)
        if got is want or id(got) in ids:
            return True
        if isinstance(home, str) and _under(home, EXEMPT):
            return False
        if isinstance(want, ModuleType) and isinstance(home, str) and _under(home, (want.__name__,)):
            return True
    return not _under(used, EXEMPT) and _under(used, (name, *names))


def _student_cells(nb) -> list[tuple[str, str | None, str]]:
    """(where, grade_id, source) of every code cell the student wrote: an answer cell counts against the
    grade cell that follows it, an added cell (grade_id ``"*"``) against every exercise."""
    out, waiting, added = [], [], 0
    for cell in nb.cells:
        gid, graded, answer = nbmeta.grade_id(cell), nbmeta.is_graded(cell), nbmeta.is_solution(cell)
        if graded:
            out += [(where, gid, src) for where, src in waiting]
            waiting = []
        if cell.cell_type != "code" or (nbmeta.is_locked(cell) and not answer):
            continue
        if answer and graded:
            out.append((str(gid), gid, cell.source))
        elif answer:
            waiting.append((str(gid or "answer cell"), cell.source))
        else:
            added += 1
            out.append((f"added cell {added}", "*", cell.source))
    return out + [(where, None, src) for where, src in waiting]


@functools.lru_cache(maxsize=1)
def _exempt_loaded() -> None:
    """The public checks' modules imported (trusted code), so that what they import is known as what it is."""
    for name in EXEMPT:
        try:
            package = importlib.import_module(name)
            for info in pkgutil.iter_modules(package.__path__):
                importlib.import_module(f"{name}.{info.name}")
        except Exception:  # noqa: BLE001, S112 - what cannot be imported stays unknown, as before
            continue


def findings(nb, assignment: str | None = None, rules: dict[str, Forbid] | None = None) -> list[Finding]:
    """What to read in the student's cells of ``nb`` (the rebuilt notebook): forbidden uses first. ``rules``: the
    assignment's :func:`forbids`, when the caller has it already."""
    rules = forbids(assignment) if rules is None else rules
    for root in {n.split(".")[0] for f in rules.values() for n in f.names}:  # trusted packages: names -> objects
        importlib.import_module(root)
    _exempt_loaded()
    try:
        return _findings(nb, rules)
    except Exception as exc:  # noqa: BLE001 - reading never stops a grading run
        return [Finding(None, None, f"its code could not be read ({type(exc).__name__})", "the notebook", "unread")]


def _findings(nb, rules: dict[str, Forbid]) -> list[Finding]:
    cells = _student_cells(nb)
    parsed, left = [], limits.MAX_READ_TOTAL
    for _, _, src in cells:
        over = (None, [(0, f"not read: over {limits.MAX_READ_TOTAL} characters of code before it")])
        parsed.append(parse(src) if len(src) <= left else over)
        left -= len(src) if len(src) <= min(left, limits.MAX_READ_CHARS) else 0
    locked = [c.source for c in nb.cells if c.cell_type == "code" and nbmeta.is_locked(c)]
    indexed = [index(t) if t else ([], {}) for t, _ in parsed]
    names = bindings([index(t) for t in (parse(src)[0] for src in locked) if t] + [i for i in indexed if i[0]])
    uses, other, known = {}, [], {}
    for (where, gid, _), (tree, notes), (nodes, parents) in zip(cells, parsed, indexed, strict=True):
        counts = [g for g in rules if gid in ("*", g)]
        owner = gid if gid in rules else None
        fn = rules[owner].function if owner else None
        for line, why in notes:
            other.append(Finding(owner, fn, why, f"{where} line {line}" if line else where, "unread"))
        if tree is None:
            continue
        used: dict[str, int] = {}
        for line, dotted in names_used(nodes, parents, names):
            used[dotted] = min(line, used.get(dotted, line))
        for dotted, line in used.items():
            for g in counts:
                for name in rules[g].names:
                    if known.setdefault((dotted, name), None) is None:
                        known[dotted, name] = matches(dotted, name)
                    if known[dotted, name]:
                        key = (g, name, where)
                        if key not in uses or (line, -len(dotted)) < uses[key][0]:  # first line, longest name
                            uses[key] = ((line, -len(dotted)), Finding(g, rules[g].function, name,
                                                                       f"{where} line {line}", used=dotted))
        other += [Finding(owner, fn, what, f"{where} line {line}", kind)
                  for line, kind, what in reaches(nodes, parents, used)]
    return [f for _, f in uses.values()] + other

