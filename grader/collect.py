"""Step 1: collect the submissions: find them, name them, read them, rebuild them on the release.

A submission is a folder's ``<student>.ipynb`` or ``<student>_<assignment>.ipynb``, or nbgrader's
course layout ``submitted/<student>/<assignment>/*.ipynb``. Each is read (an empty file, a file that
is not JSON or not a notebook is reported and scored 0; an old nbformat is converted) and rebuilt on
the released notebook: every locked cell comes from the release (an edited, deleted or re-tagged test
cell is put back and reported), every answer cell from the student, matched by its id.

A submission file is hostile input: it is read under caps (file size, cells, characters per cell),
its nbgrader metadata is type-checked (anything malformed is treated as a cell the student added),
and whatever goes wrong with one file becomes that file's problem ("could not be read: ..."), never
the run's.
"""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from tools import nbmeta

MAX_FILE_BYTES = 16 * 2**20   # a submission file
MAX_CELLS = 500               # cells in one notebook
MAX_CELL_CHARS = 200_000      # characters in one cell's source


def find(folder: Path, assignment: str) -> list[tuple[str | None, Path]]:
    """(student from the layout or None, path) for every submission in ``folder``, sorted."""
    nested = sorted(folder.glob(f"*/{assignment}/*.ipynb"))
    if nested:  # nbgrader's layout: the student is the folder's name
        return [(p.parent.parent.name, p) for p in nested if ".ipynb_checkpoints" not in p.parts]
    return [(None, p) for p in sorted(folder.glob("*.ipynb"))]


@dataclass
class Submission:
    student: str
    source: Path
    problems: list[str] = field(default_factory=list)
    graded: bool = False
    points: dict[str, float] = field(default_factory=dict)
    score: float = 0.0

    def note(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


# ------------------------------------------------------------------ names


def student_id(path: Path, assignment: str) -> str:
    """``José Ñ_04_x.ipynb`` -> ``Jose_N``: ASCII letters, digits, ``-`` and ``_`` only."""
    stem = path.stem
    if stem.endswith("_" + assignment):
        stem = stem[: -len(assignment) - 1]
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_stem).strip("_-") or "student"


def assign_ids(found: list[tuple[str | None, Path]], assignment: str) -> list[Submission]:
    """One submission per file; two files of the same student are both kept and both flagged."""
    subs, by_id = [], {}
    for named, path in found:
        base = student_id(Path(named + ".ipynb") if named else path, assignment)
        sid, n = base, 2
        while sid in {s.student for s in subs}:
            sid, n = f"{base}_{n}", n + 1
        sub = Submission(sid, path)
        subs.append(sub)
        by_id.setdefault(base, []).append(sub)
    for base, group in by_id.items():
        if len(group) > 1:
            files = ", ".join(s.source.name for s in group)
            for s in group:
                s.note(f"{len(group)} files for {base} ({files}); each graded separately, decide which counts")
    return subs


# ------------------------------------------------------------ preparation


def prepare(sub: Submission, release):
    """The submission read and rebuilt on the release, or None with the reason noted; never raises."""
    try:
        nb = read_notebook(sub)
        return None if nb is None else rebuild(sub, nb, release)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - MemoryError too: one file never stops the run
        sub.note(f"could not be read: {type(exc).__name__}")
        return None


def read_notebook(sub: Submission):
    """The submission as an nbformat-4 notebook, or None with the reason noted."""
    import nbformat

    size = sub.source.stat().st_size
    if size > MAX_FILE_BYTES:
        sub.note(f"not graded: the file is larger than {MAX_FILE_BYTES // 2**20} MiB")
        return None
    with open(sub.source, "rb") as f:
        raw = f.read(MAX_FILE_BYTES + 1)
    if not raw.strip():
        sub.note("empty file")
        return None
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        sub.note(f"not a notebook: the file is not valid JSON ({exc.msg} at line {exc.lineno})")
        return None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        sub.note("not a notebook: JSON without cells")
        return None
    version = data.get("nbformat")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
        sub.note(f"not a valid notebook ({type(exc).__name__})")  # the error's text may quote the file
        return None
    if version != 4:
        sub.note(f"old notebook format (nbformat {version}); converted to nbformat 4")
    if len(nb.cells) > MAX_CELLS:
        sub.note(f"not graded: the notebook has more than {MAX_CELLS} cells")
        return None
    if any(len(c.source) > MAX_CELL_CHARS for c in nb.cells):
        sub.note(f"not graded: a cell holds more than {MAX_CELL_CHARS} characters")
        return None
    for cell in nb.cells:
        if nbmeta.drop_malformed(cell):
            sub.note("a cell's nbgrader metadata was malformed; the cell was treated as one the student added")
    return nb


def rebuild(sub: Submission, nb, release):
    """The release notebook with the student's answers in it: locked cells always from the release."""
    import nbformat

    student_cells = {}
    for cell in nb.cells:
        gid = nbmeta.grade_id(cell)
        if gid and gid not in student_cells:
            student_cells[gid] = cell
    release_ids = [nbmeta.grade_id(c) for c in release.cells]
    for cell in release.cells:
        gid, graded = nbmeta.grade_id(cell), nbmeta.is_graded(cell)
        theirs = student_cells.get(gid)
        if graded or nbmeta.is_locked(cell):
            if theirs is None:
                if graded:
                    sub.note(f"test cell {gid} was deleted; the original was put back")
            elif nbmeta.nbgrader(theirs) != nbmeta.nbgrader(cell):
                sub.note(f"test cell {gid} was re-tagged; the original was put back")
            elif theirs.source != cell.source and graded:
                sub.note(f"test cell {gid} was edited; the original was put back")
    # Cells the student added (helpers, scratch work) keep their place after the cell they followed.
    extras: dict[str | None, list] = {}
    anchor = None
    for cell in nb.cells:
        gid = nbmeta.grade_id(cell)
        if gid in release_ids:
            anchor = gid
        elif cell.cell_type == "code" and cell.source.strip():
            extras.setdefault(anchor, []).append(cell)
    out = copy.deepcopy(release)
    for cell in out.cells:
        if nbmeta.is_solution(cell) and not nbmeta.is_graded(cell) and nbmeta.grade_id(cell) in student_cells:
            cell.source = str(student_cells[nbmeta.grade_id(cell)].source)
    for anchor_id, cells in extras.items():
        new_cells = [nbformat.v4.new_code_cell(str(cell.source)) for cell in cells]
        ids = [nbmeta.grade_id(c) for c in out.cells]
        setup_at = next(i for i, c in enumerate(out.cells) if c.cell_type == "code")
        at = ids.index(anchor_id) + 1 if anchor_id in ids else setup_at + 1  # unanchored: after the setup cell
        out.cells[at:at] = new_cells
    return out
