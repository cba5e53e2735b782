"""Edits of the notebooks that name an exercise, for ``tools/new_exercise.py``: the solution notebook's four cells,
its setup's import and its intro's table; the chapter's list of exercises."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat

from layout.nbmeta import grade_id
from tools import exercise_stubs as stubs
from tools.exercise_stubs import Plan
from tools.exercise_text import EXERCISES_SECTION, LIST_ITEM, TABLE_ROW, cell
from tools.source_edit import WIDTH

IMPORT = re.compile(r"(?m)^from checks import (\([^)]*\)|[^\n]*)")
HEAD = "from checks import "


def _meta(gid: str, solution: bool = False, points: int | None = None) -> dict:
    """nbgrader's metadata (schema 3) of a locked text cell, an answer cell or a grade cell."""
    meta = {"grade": points is not None, "grade_id": gid, "locked": not solution, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": dict(sorted(meta.items()))}


def _id(p: Plan, gid: str) -> str:
    """A cell id of eight hex digits, the same for the same exercise (nbformat's random ones would differ)."""
    return hashlib.sha256(f"{p.assignment}/{gid}".encode()).hexdigest()[:8]


def new_cells(p: Plan) -> list:
    """The exercise's four cells: text, answer, hints, grade."""
    v4 = nbformat.v4
    made = [v4.new_markdown_cell(stubs.text(p), metadata=_meta(f"ex{p.n}_text")),
            v4.new_code_cell(stubs.answer(p), metadata=_meta(p.answer, solution=True)),
            v4.new_markdown_cell(stubs.hints(p), metadata=_meta(f"ex{p.n}_hints")),
            v4.new_code_cell(stubs.grade(p), metadata=_meta(p.graded, points=p.points))]
    for c in made:
        c.id = _id(p, grade_id(c))
    return made


def checks_import(names: list[str]) -> str:
    """The setup's import of the checks, one line when it fits, else wrapped under its parenthesis."""
    line = HEAD + ", ".join(names)
    if len(line) <= WIDTH:
        return line
    indent = " " * len(HEAD + "(")
    rows, current = [], HEAD + "(" + names[0]
    for name in names[1:]:
        if len(current) + len(name) + 3 > WIDTH:  # ", " before the name, "," or ")" after it
            rows.append(current + ",\n")
            current = indent + name
        else:
            current += ", " + name
    return "".join(rows) + current + ")"


def add_to_solution(path: Path, p: Plan) -> Path:
    """The four cells before ``outro``, the check in the setup's import, the row at the end of the intro's table."""
    nb = nbformat.read(path, as_version=4)
    outro = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "outro")
    nb.cells[outro:outro] = new_cells(p)
    setup = cell(nb, "setup")
    found = IMPORT.search(setup.source)
    names = sorted({*re.findall(r"\w+", found[1]), p.check})
    setup.source = setup.source[:found.start()] + checks_import(names) + setup.source[found.end():]
    intro = cell(nb, "intro")
    last = list(TABLE_ROW.finditer(intro.source))[-1]
    intro.source = intro.source[:last.end()] + "\n" + stubs.table_row(p) + intro.source[last.end():]
    nbformat.write(nb, path)
    return path


def add_to_chapter(path: Path, p: Plan) -> Path:
    """The exercise's line after the last item of the chapter's ``## Exercises`` list."""
    nb = nbformat.read(path, as_version=4)
    c = next(c for c in reversed(nb.cells) if c.cell_type == "markdown" and EXERCISES_SECTION in c.source)
    start = c.source.rindex(EXERCISES_SECTION)
    items = list(LIST_ITEM.finditer(c.source, start))
    end = c.source.find("\n\n", items[-1].start()) if items else -1
    end = len(c.source) if end < 0 else end
    c.source = c.source[:end] + "\n" + stubs.list_item(p) + c.source[end:]
    nbformat.write(nb, path)
    return path
