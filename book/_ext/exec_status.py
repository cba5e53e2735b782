"""A Sphinx directive, ``{exec-status}``, that tabulates the notebooks the book shows.

For every notebook in ``notebooks/`` and ``exercises/`` it reads the stored
file and reports its code cells, how many carry stored outputs, how many are
exempt from nbval's output comparison, and whether widget state is saved.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _row(cells: list[str]) -> nodes.row:
    row = nodes.row()
    for text in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=text)
        row += entry
    return row


class ExecStatus(SphinxDirective):
    def run(self):
        root = Path(self.env.srcdir)
        header = ["notebook", "code cells", "with stored outputs", "output not compared", "widget state saved",
                  "checked by"]
        table = nodes.table()
        group = nodes.tgroup(cols=len(header))
        table += group
        for _ in header:
            group += nodes.colspec(colwidth=1)
        thead = nodes.thead()
        thead += _row(header)
        group += thead
        body = nodes.tbody()
        for path in sorted(root.glob("notebooks/*.ipynb")) + sorted(root.glob("exercises/*/*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf-8"))
            code = [c for c in nb["cells"] if c["cell_type"] == "code"]
            with_out = sum(bool(c.get("outputs")) for c in code)
            ignored = sum("nbval-ignore-output" in c.get("metadata", {}).get("tags", []) for c in code)
            widgets = "yes" if nb.get("metadata", {}).get("widgets") else "no"
            checker = "strict nbval" if path.parts[-2] == "notebooks" else "strict nbval, on its solutions"
            body += _row([str(path.relative_to(root)), str(len(code)), str(with_out), str(ignored), widgets, checker])
            self.env.note_dependency(str(path))
        group += body
        return [table]


def setup(app):
    app.add_directive("exec-status", ExecStatus)
    return {"version": "1.0", "parallel_read_safe": True}
