"""Step 1: collect the submissions: find them, name them, read them, rebuild them on the release.

:func:`gather` lists the submissions of a folder or a ``.zip`` in the layouts of ``platforms.py`` beside it: a plain
``<student>.ipynb`` or ``<student>_<assignment>.ipynb`` at the top (or in the one folder that holds everything),
nbgrader's ``submitted/<student>/<assignment>/``, Canvas's and Moodle's downloads. Everything below a student's
place (a Moodle submission folder, nbgrader's student folder) is that student's at any depth, whatever its names
say; a file outside every place is read by its own name (Canvas, Moodle, plain), so one folder may mix layouts. A
notebook in another assignment's folder, or outside every place and below the top, is not a submission of this
one; one in a subfolder of nbgrader's assignment folder is its student's "not read" row. One student's files past
``limits.MAX_SUBMISSION_ENTRIES`` are one "not read" row of theirs (``grader/collecting/intake.py``).

One row per file, none dropped. Of one platform identity's notebooks the latest is graded (Canvas: the highest
``-N`` attempt, then file id; Moodle and nbgrader: the notebook named like the release, then the last by name), the
others "superseded"; any other file a student uploaded, what cannot be read safely (a link, a pipe, a device, a
folder named ``*.ipynb``, an unsafe zip member) and a submission without a notebook are "not read" rows saying
what they are. A plain folder's two files of one name are both graded and flagged. Ids:
``grader/collecting/student_ids.py``.

A submission file is hostile input: it is read under caps (file size, cells, characters per cell) without
following a link or waiting on a pipe, a zip member in memory (never extracted), its nbgrader metadata is
type-checked (anything malformed is treated as a cell the student added), and whatever goes wrong with one file
becomes that file's problem ("could not be read: ..."), never the run's. Each submission is rebuilt on the released
notebook: every locked cell comes from the release (an edited, deleted or re-tagged test cell is put back and
reported), every answer cell from the student, matched by its id.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from grader import limits
from grader.collecting import intake, platforms
from grader.collecting.intake import Entry, SourceError, Unreadable
from grader.collecting.platforms import Found
from grader.collecting.student_ids import name_rows, reduce_name
from layout import nbmeta

__all__ = ["SourceError", "Unreadable", "Submission", "gather", "read_and_rebuild", "read_notebook", "rebuild"]

@dataclass
class Submission:
    student: str
    source: str = ""              # the file's path in the folder or zip, "/"-separated, as written there
    problems: list[str] = field(default_factory=list)
    graded: bool = False          # set once the grading run has recorded it
    points: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    platform: str = "folder"      # canvas, moodle, nbgrader or folder
    platform_id: str = ""         # Canvas's user id, Moodle's participant id, nbgrader's student folder
    name: str = ""                # the student's name as the platform wrote it
    late: bool = False            # Canvas's LATE marker
    attempt: int = 0              # Canvas's -1, -2 resubmission suffix
    status: str = "graded"        # graded (to be graded), superseded or not read
    digest: str = ""              # sha256 of the bytes read, once read_notebook has read them
    # how its bytes are read, set by gather; not a field, so that asdict, replace and copies never carry an open zip
    reader = None

    @property
    def file_name(self) -> str:
        return self.source.rsplit("/", 1)[-1]

    def read(self) -> bytes:
        """The file's bytes (at most ``MAX_FILE_BYTES + 1``): a file opened without following a link or waiting on a
        pipe and checked to be regular, a zip member inflated in memory under the caps; Unreadable otherwise."""
        if self.reader is None:
            raise Unreadable("there is no file to read")
        return self.reader()

    def note(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


def gather(source: Path, assignment: str) -> list[Submission]:
    """Every submission in ``source`` (a folder or a ``.zip``), one row per file, sorted by path (see the module's
    text). Raises SourceError when ``source`` is not a readable folder or zip, or is over a cap."""
    rows = _rows(intake.entries(source, assignment), assignment)
    _supersede(rows)
    _flag_shared_names(rows)
    name_rows(rows)
    return sorted((sub for sub, _ in rows), key=lambda s: (s.source, s.student))


# ------------------------------------------------------------------ rows and names


def _rows(entries: list[Entry], assignment: str) -> list[tuple[Submission, Found]]:
    """A row per file of a layout (a notebook to grade; any other file a student uploaded, not read), per thing that
    cannot be read, per nbgrader submission without a notebook: first what lies in the students' places
    (``grader/collecting/platforms.py``), then the files outside them, by name."""
    rows, uploads, present = [], {}, {}
    for e in sorted(entries, key=lambda e: (e.parts, e.source)):
        if e.owner is not None:
            _in_place(e, assignment, rows, uploads, present)
    outside = [e for e in entries if e.owner is None]
    top = os.path.commonprefix([e.parts[:-1] for e in outside if e.kind != "dir"]) if outside else ()
    levels = {e.owner[:-1] for e in entries if e.owner and not platforms.MOODLE_FOLDER.match(e.owner[-1])}
    for e in sorted(outside, key=lambda e: (e.parts, e.source)):
        notebook = e.parts[-1].lower().endswith(".ipynb")
        if e.kind == "dir" and not notebook:
            continue
        found = platforms.identify(e.parts, assignment, top)
        if e.kind == "file":
            if found and notebook:
                rows.append(_row(e, found))
            elif found and not (found.platform == "folder" and (levels or e.parts[-1].startswith("."))):
                # a plain file is a student's upload, but not .DS_Store, nor nbgrader's own gradebook.db
                uploads.setdefault((found.platform, found.platform_id or e.source), []).append((e, found))
            continue
        if found is None and e.parts[:-1] in levels:  # a link, a pipe, ... where nbgrader's student folders are
            found = Found("nbgrader", e.parts[-1], "", e.parts[-1])
        if found or notebook or e.always:
            rows.append(_row(e, found or Found("folder", own=_stem(e.parts[-1])), "not read", _what(e)))
    have = {(f.platform, f.platform_id) for _, f in rows}
    for key, files in uploads.items():
        for i, (e, found) in enumerate(files):
            alone = i == 0 and key not in have and found.platform != "folder"
            rows.append(_row(e, found, "not read", "no notebook in this submission: not read" if alone
                             else "not a notebook: not read"))
    have |= set(uploads)
    for key, (e, found) in present.items():
        if key not in have:
            rows.append(_row(e, found, "not read", "no notebook in this submission: not read"))
    return rows


def _in_place(e: Entry, assignment: str, rows: list, uploads: dict, present: dict) -> None:
    """The row of an entry inside a student's place, if it has one: everything there is that student's. A Moodle
    folder's other files are uploads with rows of their own; nbgrader's assignment folder holds the release's other
    files too, which are not the student's uploads: they only show that the student handed something in."""
    found, what = platforms.identify_in(e.owner, e.parts, assignment)
    notebook = e.parts[-1].lower().endswith(".ipynb")
    if what == "other" and not e.always:
        return  # nbgrader: another assignment's folder
    if e.always or e.kind not in ("file", "dir") or e.kind == "dir" and notebook:
        rows.append(_row(e, found, "not read", _what(e)))
    elif what == "subfolder" and notebook:
        folder = "/".join(e.parts[len(e.owner) + 1:-1])
        rows.append(_row(e, found, "not read", f"not read: a notebook in a subfolder ({folder}/) of the "
                         f"submission; nbgrader grades only the notebooks directly in {assignment}/"))
    elif notebook:
        rows.append(_row(e, found))
    elif e.kind == "file" and found.platform == "moodle":
        uploads.setdefault((found.platform, found.platform_id), []).append((e, found))
    else:
        present.setdefault((found.platform, found.platform_id), (e, found))


def _what(e: Entry) -> str:
    """A "not read" row's reason: what the entry is (a link, a pipe, an unsafe zip member, a student past the cap)."""
    return f"{'a folder named *.ipynb' if e.kind == 'dir' else e.kind}: not read"


def _row(e: Entry, found: Found, status: str = "graded", problem: str | None = None) -> tuple[Submission, Found]:
    sub = Submission("", e.source, platform=found.platform, platform_id=found.platform_id, name=found.name,
                     late=found.late, attempt=found.attempt, status=status)
    sub.reader = None if problem else e.reader
    if problem:
        sub.note(problem)
    return sub, found


def _stem(name: str) -> str:
    return name[: -len(".ipynb")] if name.lower().endswith(".ipynb") else name


def _supersede(rows: list[tuple[Submission, Found]]) -> None:
    """Of one platform identity's notebooks the latest is graded; the others stay listed as superseded."""
    groups: dict[tuple, list] = {}
    for sub, found in rows:
        if sub.status == "graded" and found.platform != "folder":
            groups.setdefault((found.platform, found.platform_id), []).append((sub, found))
    for group in groups.values():
        latest = max(group, key=lambda pair: pair[1].order)[0]
        for sub, _ in group:
            if sub is not latest:
                sub.status, sub.reader = "superseded", None
                sub.note(f"not graded: superseded by {latest.file_name}, a later file of the same student")


def _flag_shared_names(rows: list[tuple[Submission, Found]]) -> None:
    """A plain folder's files that reduce to one name: both graded (nothing says they are one person), both flagged."""
    groups: dict[str, list[Submission]] = {}
    for sub, found in rows:
        if found.platform == "folder" and sub.status == "graded":
            groups.setdefault(reduce_name(found.own), []).append(sub)
    for base, group in groups.items():
        if len(group) > 1:
            files = ", ".join(s.file_name for s in group)
            for s in group:
                s.note(f"{len(group)} files for {base} ({files}); each graded separately, decide which counts")


# ------------------------------------------------------------ read and rebuilt


def read_and_rebuild(sub: Submission, release):
    """The submission read and rebuilt on the release, or None with the reason noted (a superseded or unreadable
    row: None at once); never raises."""
    if sub.status != "graded":
        return None
    try:
        nb = read_notebook(sub)
        return None if nb is None else rebuild(sub, nb, release)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - MemoryError too: one file never stops the run
        sub.note(f"could not be read: {type(exc).__name__}")
        return None


def read_notebook(sub: Submission):
    """The submission as an nbformat-4 notebook, or None with the reason noted."""
    import nbformat

    try:
        raw = sub.read()
    except Unreadable as exc:
        sub.note(f"not read: {exc}")
        return None
    sub.digest = hashlib.sha256(raw).hexdigest()  # what was graded: a saved result is reused for these bytes only
    if len(raw) > limits.MAX_FILE_BYTES:
        sub.note(f"not graded: the file is larger than {limits.MAX_FILE_BYTES // 2**20} MiB")
        return None
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
    if len(nb.cells) > limits.MAX_CELLS:
        sub.note(f"not graded: the notebook has more than {limits.MAX_CELLS} cells")
        return None
    if any(len(c.source) > limits.MAX_CELL_CHARS for c in nb.cells):
        sub.note(f"not graded: a cell holds more than {limits.MAX_CELL_CHARS} characters")
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
