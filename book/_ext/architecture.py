"""A Sphinx directive, ``{package-architecture}``, that draws the package's layers from its imports.

The modules of ``transformer`` (without ``viz`` and ``checks``) are read with
``ast``; each is placed one row above the highest module it imports (a module
that imports none of the others sits in the bottom row), so every import line
goes downwards. ``viz`` and ``checks`` are drawn as two boxes on top, joined to
the modules they import. ``_validate``, which nearly every module imports for
its argument checks, is left out of the picture and named below it. The same
graph is what ``tests/test_wiring.py`` checks for cycles.
"""

from __future__ import annotations

import ast
import html
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

ON_TOP = ("viz", "checks")
LEFT_OUT = ("_validate",)
BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 112, 30, 14, 58, 12


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


def import_graph(package: Path) -> dict[str, set[str]]:
    """``{module: the package's modules it imports}`` for every module of the package in folder ``package``."""
    root = package.parent
    paths = {module_name(p, root): p for p in package.rglob("*.py")}
    return {name: imports_of(path, root, set(paths)) for name, path in paths.items()}


def layers(graph: dict[str, set[str]], package: str = "transformer") -> tuple[list[list[str]], dict[str, set[str]]]:
    """The core modules in rows, bottom first, each one row above the highest module it imports;
    and what ``viz`` and ``checks`` import from the core, by the short names of both."""
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


def direct(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports that no longer path implies: ``a -> c`` goes when ``a -> b -> ... -> c`` is there too."""
    @cache
    def below(m: str) -> frozenset[str]:
        return frozenset(d for e in edges[m] for d in {e, *below(e)})

    return {m: {d for d in deps if not any(d in below(e) for e in deps - {d})} for m, deps in edges.items()}


def svg(rows: list[list[str]], edges: dict[str, set[str]]) -> str:
    """The layers as an SVG: a box per module, a line from each module down to each module it imports
    that no longer path of imports reaches."""
    edges = direct(edges)
    drawn = [*rows, list(ON_TOP)]
    width = 2 * MARGIN + max(len(r) for r in drawn) * (BOX_W + GAP_X) - GAP_X
    height = 2 * MARGIN + len(drawn) * (BOX_H + GAP_Y) - GAP_Y
    at = {}
    for level, row in enumerate(drawn):
        y = height - MARGIN - BOX_H - level * (BOX_H + GAP_Y)
        x0 = (width - (len(row) * (BOX_W + GAP_X) - GAP_X)) / 2
        for i, m in enumerate(row):
            at[m] = (x0 + i * (BOX_W + GAP_X), y)
    lines = [f"<line x1='{at[m][0] + BOX_W / 2:.0f}' y1='{at[m][1] + BOX_H}' x2='{at[d][0] + BOX_W / 2:.0f}' "
             f"y2='{at[d][1]}' stroke='#9aa5b1' stroke-width='1'/>" for m in at for d in sorted(edges[m])]
    boxes = [f"<rect x='{x:.0f}' y='{y}' width='{BOX_W}' height='{BOX_H}' rx='4' fill='"
             f"{'#fbe3c8' if m in ON_TOP else '#dbe8f6'}' stroke='#41556b'/>"
             f"<text x='{x + BOX_W / 2:.0f}' y='{y + BOX_H / 2 + 4}' text-anchor='middle' font-size='12' "
             f"font-family='sans-serif' fill='#1b2733'>{html.escape(m)}</text>" for m, (x, y) in at.items()]
    label = ("The transformer package in layers, bottom to top: " + "; ".join(", ".join(r) for r in drawn)
             + ". Lines join each module to the modules it imports directly; the table below lists every import.")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width:.0f} {height}' width='{width:.0f}' "
            f"style='max-width:100%;height:auto' role='img' aria-label='{html.escape(label, quote=True)}'>"
            + "".join(lines) + "".join(boxes) + "</svg>")


def table(rows: list[list[str]], edges: dict[str, set[str]]) -> str:
    """The same graph in words: one line per module, top row first, with what it imports."""
    items = [f"<tr><td>{html.escape(m)}</td><td>{html.escape(', '.join(sorted(edges[m])) or '-')}</td></tr>"
             for m in [*ON_TOP, *(m for row in reversed(rows) for m in row)]]
    return ("<table class='architecture-table'><thead><tr><th>module</th><th>imports (of the modules above)</th>"
            "</tr></thead><tbody>" + "".join(items) + "</tbody></table>")


class PackageArchitecture(SphinxDirective):
    def run(self):
        package = Path(self.env.srcdir) / "transformer"
        rows, edges = layers(import_graph(package))
        for path in package.rglob("*.py"):
            self.env.note_dependency(str(path))
        return [nodes.raw("", svg(rows, edges) + table(rows, edges), format="html")]


def setup(app):
    app.add_directive("package-architecture", PackageArchitecture)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
