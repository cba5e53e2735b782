"""Step 4: the gradebook. nbgrader keeps the assignment and the scores; the grader writes them itself.

``prepare`` has nbgrader release the assignment into the run's course folder (which also fills the
gradebook with its grade cells and their points). ``record`` writes one submission's points, as
decided by the verdicts, and reads back what the gradebook holds: the gradebook is kept from run to run,
so points an instructor entered by hand (nbgrader's manual scores) stay through a regrade.
"""

from __future__ import annotations

import functools
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from layout import nbmeta
from layout.nbgrader_api import make_api  # nbgrader's API on this repository, as the authors' tools use it too


def prepare(work: Path, assignment: str, timeout: int):
    """(release notebook path, db_url, {grade_id: points}), or raise RuntimeError with nbgrader's reason."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session noise
    api, db_url = make_api(work, timeout)
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        if CELLS_CHANGED in (result.get("log") or ""):
            raise RuntimeError(changed_cells_words(work, assignment))
        raise RuntimeError(f"nbgrader could not generate the assignment:\n{result.get('error')}")
    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(assignment, assignment)
        points = {c.name: c.max_score for c in nb.grade_cells}
    order = _cell_order(work / "release" / assignment / f"{assignment}.ipynb")
    return work / "release" / assignment / f"{assignment}.ipynb", db_url, {g: points[g] for g in order if g in points}


CELLS_CHANGED = "Cannot add or remove cells for notebook"  # nbgrader's SaveCells, when the gradebook has submissions


def changed_cells_words(work: Path, assignment: str) -> str:
    """What to do when the assignment's graded cells are no longer those of the gradebook kept in ``work``."""
    return (f"{assignment}: its graded cells have changed since the gradebook in {work} was made, and nbgrader keeps "
            "the cells of a gradebook that holds scores. Grade into a new folder (--out), or move "
            f"{work} aside to start a new gradebook there (points given by hand in the old one are not carried "
            "over).")


def _cell_order(path: Path) -> list[str]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return [nbmeta.grade_id(c) for c in nb.cells if nbmeta.is_graded(c)]


@functools.cache
def opened(db_url: str):
    """One open gradebook per database in this process: SQLAlchemy compiles each query once for it (a gradebook
    opened per submission compiled them again, 0.1 s a record against 0.02 s)."""
    from nbgrader.api import Gradebook

    return Gradebook(db_url)


@contextmanager
def _session(db_url: str):
    """The open gradebook of ``db_url``; what a failed step wrote is rolled back."""
    gb = opened(db_url)
    try:
        yield gb
    except BaseException:
        gb.db.rollback()
        raise


@dataclass
class Recorded:
    """One submission as the gradebook holds it: points per cell, hand-entered ones included, and what its feedback
    page shows besides (nbgrader's GetGrades reads the same from the gradebook, one query per cell)."""

    score: float
    points: dict[str, float]   # grade_id -> the cell's score (the manual score where an instructor gave one)
    manual: list[str]          # grade_ids whose points were entered by hand
    max_points: dict[str, float]   # grade_id -> the cell's points
    comments: dict[str, str | None]  # answer cell -> an instructor's comment, if any
    max_score: float
    late_penalty: float


def record(db_url: str, assignment: str, student: str, points: dict[str, float]) -> Recorded:
    """Write ``points`` (grade_id -> score) as the submission's autograded scores and read it back.

    A cell's manual score (entered by an instructor: ``python -m grader.manual`` or nbgrader's formgrader) is
    kept: nbgrader's score of a cell is its manual score when there is one.
    """
    from nbgrader.api import MissingEntry

    with _session(db_url) as gb:
        gb.update_or_create_student(student)
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            gb.add_submission(assignment, student)
        for gid, score in points.items():
            gb.find_grade(gid, assignment, assignment, student).auto_score = float(score)
        gb.db.commit()
        return _read(gb, assignment, student)


def _read(gb, assignment: str, student: str) -> Recorded:
    nb = gb.find_submission_notebook(assignment, assignment, student)
    grades = {g.name: g for g in nb.grades}
    return Recorded(float(nb.score), {gid: float(g.score) for gid, g in grades.items()},
                    sorted(gid for gid, g in grades.items() if g.manual_score is not None),
                    {gid: float(g.max_score) for gid, g in grades.items()}, {c.name: c.comment for c in nb.comments},
                    float(nb.max_score), float(nb.late_submission_penalty or 0))


def set_manual(db_url: str, assignment: str, student: str, grade_id: str, points: float | None) -> Recorded:
    """An instructor's points for one cell of one submission (None: back to the autograded score)."""
    from nbgrader.api import MissingEntry

    with _session(db_url) as gb:
        try:
            grade = gb.find_grade(grade_id, assignment, assignment, student)
        except MissingEntry:
            raise ValueError(f"no graded cell {grade_id!r} for student {student!r} in {assignment}") from None
        if points is not None and not 0 <= points <= grade.max_score:
            raise ValueError(f"points: expected a number from 0 to {grade.max_score:g}, got {points:g}")
        grade.manual_score = None if points is None else float(points)
        gb.db.commit()
        return _read(gb, assignment, student)


def forget(db_url: str, assignment: str, keep: set[str]) -> list[str]:
    """Remove the submissions of students not in ``keep`` (no longer in the class's folder); their ids."""
    with _session(db_url) as gb:
        gone = [s.student.id for s in gb.find_assignment(assignment).submissions if s.student.id not in keep]
        for student in gone:
            gb.remove_submission(assignment, student)
        return gone
