"""A Sphinx directive, ``{package-architecture}``, that draws the package's layers from its imports.

The modules of ``transformer`` (without ``viz``) are read with ``ast`` (``tools/imports.py``); each is
placed one row above the highest module it imports (a module that imports none of the others sits in the
bottom row), so every import line goes downwards. ``viz`` and the exercises' checks (``checks``, a
package of its own beside ``transformer``) are drawn as two boxes on top, joined to the modules they
import. ``_validate``, which nearly every module imports for its argument checks, is left out of the
picture and named below it. The same graph is what ``tests/test_wiring.py`` checks for cycles.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from tools.imports import ON_TOP, import_graph, layers

BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 112, 30, 14, 58, 12


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
    label = ("The transformer package in layers, bottom to top, with the exercises' checks on top: "
             + "; ".join(", ".join(r) for r in drawn)
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
        package, checks = Path(self.env.srcdir) / "transformer", Path(self.env.srcdir) / "checks"
        rows, edges = layers(import_graph(package, checks))
        for path in [*package.rglob("*.py"), *checks.rglob("*.py")]:
            self.env.note_dependency(str(path))
        return [nodes.raw("", svg(rows, edges) + table(rows, edges), format="html")]


def setup(app):
    app.add_directive("package-architecture", PackageArchitecture)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
