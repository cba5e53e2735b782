"""What nbgrader's metadata says about a notebook cell, read in one place.

An exercise notebook's cells carry ``metadata["nbgrader"]``: ``grade_id`` names the cell,
``solution`` marks an answer cell, ``grade`` a graded test cell, ``locked`` a cell the student
may not change. The functions here read it from ``nbformat`` cells (or plain dicts of the same shape).
"""

from __future__ import annotations


def nbgrader(cell) -> dict:
    """The cell's nbgrader metadata (``{}`` for a cell without any)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell) -> str | None:
    return nbgrader(cell).get("grade_id")


def is_solution(cell) -> bool:
    """An answer cell: the student writes here."""
    return bool(nbgrader(cell).get("solution"))


def is_graded(cell) -> bool:
    """A cell that gives points (the tests of an answer, or a manually graded answer)."""
    return bool(nbgrader(cell).get("grade"))


def is_locked(cell) -> bool:
    return bool(nbgrader(cell).get("locked"))


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
