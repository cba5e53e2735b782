"""The package's import graph, read with ``ast``, and its layers: one module for the architecture page
(``book/_ext/architecture.py``) and the cycle test (``tests/test_wiring.py``).

Each module of ``transformer`` (without ``viz``) sits one layer above the highest module it imports, so
every import goes downwards; ``viz`` and the exercises' checks (the package ``checks`` beside it, which
imports it and which it never imports) sit on top. ``_validate``, which nearly every module imports for
its argument checks, is left out of the layers.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ON_TOP = ("viz", "checks")
LEFT_OUT = ("_validate",)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The modules in ``modules`` that ``path`` imports, anywhere in it (inside functions too)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # `from . import viz` imports the module transformer.viz
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
    return {m for m in found if m in modules and m != name}


def import_graph(*packages: Path) -> dict[str, set[str]]:
    """``{module: the modules of ``packages`` it imports}`` for every module of the packages in the folders
    ``packages`` (side by side in one folder: ``transformer`` and ``checks``)."""
    root = packages[0].parent
    paths = {module_name(p, root): p for package in packages for p in package.rglob("*.py")}
    return {name: imports_of(path, root, set(paths)) for name, path in paths.items()}


def layers(graph: dict[str, set[str]], package: str = "transformer") -> tuple[list[list[str]], dict[str, set[str]]]:
    """The core modules in rows, bottom first, each one row above the highest module it imports;
    and what ``viz`` and ``checks`` import from the core, by the short names of both (``checks``, a package of
    its own, is in ``graph`` when it was read with the package: ``import_graph(package, checks)``)."""
    short = {m: m.removeprefix(package + ".") for m in graph}

    def group(m: str) -> str | None:
        return next((g for g in ON_TOP if short[m] == g or short[m].startswith(g + ".")), None)

    core = {short[m]: {short[d] for d in deps if group(d) is None and short[d] not in LEFT_OUT}
            for m, deps in graph.items() if m != package and group(m) is None and short[m] not in LEFT_OUT}
    top: dict[str, set[str]] = {g: set() for g in ON_TOP}
    for m, deps in graph.items():
        if (g := group(m)) is not None:
            top[g] |= {short[d] for d in deps if short[d] in core}

    @cache
    def row(m: str) -> int:
        return 1 + max((row(d) for d in core[m]), default=-1)

    rows: list[list[str]] = [[] for _ in range(1 + max(map(row, core)))]
    for m in sorted(core):
        rows[row(m)].append(m)
    return rows, {**core, **top}
