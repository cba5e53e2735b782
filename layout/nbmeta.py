"""What nbgrader's metadata says about a notebook cell, read in one place.

An exercise notebook's cells carry ``metadata["nbgrader"]``: ``grade_id`` names the cell,
``solution`` marks an answer cell, ``grade`` a graded test cell, ``locked`` a cell the student
may not change. The functions here read it from ``nbformat`` cells (or plain dicts of the same shape).

A submitted notebook is hostile input: its cells, their ``metadata`` and ``metadata["nbgrader"]`` may
hold any JSON value. Every reader here is safe on all of them: what is not a dict reads as no
metadata, a ``grade_id`` that is not a string as no grade id. ``well_formed`` says whether an entry
has nbgrader's types, ``drop_malformed`` removes one that has not. ``submission`` builds a student's
notebook of an exercise set from the repository's notebooks.
"""

from __future__ import annotations

from layout.paths import notebook_path

KEY = "nbgrader"
TYPES = {"grade_id": str, "solution": bool, "grade": bool, "locked": bool, "task": bool, "schema_version": int,
         "points": (int, float), "checksum": str, "cell_type": str}  # the keys nbgrader writes, and their types
MAX_GRADE_ID = 100  # characters


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}  # nbformat's NotebookNode is a dict


def nbgrader(cell) -> dict:
    """The cell's nbgrader metadata: ``{}`` for a cell without any, or when the cell, its metadata
    or its nbgrader entry is not a dict."""
    return _dict(_dict(_dict(cell).get("metadata")).get(KEY))


def grade_id(cell) -> str | None:
    """The cell's grade id, or None (also when it is not a string)."""
    gid = nbgrader(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def is_solution(cell) -> bool:
    """An answer cell: the student writes here."""
    return bool(nbgrader(cell).get("solution"))


def is_graded(cell) -> bool:
    """A cell that gives points (the tests of an answer, or a manually graded answer)."""
    return bool(nbgrader(cell).get("grade"))


def is_locked(cell) -> bool:
    return bool(nbgrader(cell).get("locked"))


def well_formed(meta) -> bool:
    """``meta`` is nbgrader cell metadata: a dict whose known keys have their types (``True`` is not an
    int here) and whose grade_id, if any, is 1 to 100 characters long."""
    if not isinstance(meta, dict):
        return False
    for key, kind in TYPES.items():
        if key in meta and (not isinstance(meta[key], kind) or isinstance(meta[key], bool) and kind is int):
            return False
    return not isinstance(meta.get("grade_id"), str) or 0 < len(meta["grade_id"]) <= MAX_GRADE_ID


def drop_malformed(cell) -> bool:
    """Remove the cell's nbgrader entry if it is not ``well_formed``; whether it did."""
    metadata = _dict(_dict(cell).get("metadata"))
    if KEY in metadata and not well_formed(metadata[KEY]):
        del metadata[KEY]
        return True
    return False


def solution_sources(nb) -> dict[str, str]:
    """``{grade_id: source}`` of every answer cell of ``nb``."""
    return {grade_id(c): c["source"] for c in nb["cells"] if is_solution(c)}


def with_answers(nb, answers: dict[str, str]):
    """``nb`` with the source of every cell whose grade_id is in ``answers`` replaced by it (in place)."""
    for cell in nb["cells"]:
        gid = grade_id(cell)
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def solutions(assignment: str) -> dict[str, str]:
    """``{grade_id: source}`` of every answer cell of the instructor's notebook of ``assignment``."""
    import nbformat

    return solution_sources(nbformat.read(notebook_path("solutions", assignment), as_version=4))


def submission(assignment: str, answers: dict[str, str] | None = None, solved: bool = True):
    """The student notebook of ``assignment`` with every answer cell filled from the instructor's
    (or left blank when not ``solved``), then ``answers`` patched in: a submission for tests and benchmarks."""
    import nbformat

    nb = nbformat.read(notebook_path("exercises", assignment), as_version=4)
    return with_answers(nb, {**(solutions(assignment) if solved else {}), **(answers or {})})
