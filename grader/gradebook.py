"""Step 4: the gradebook. nbgrader keeps the assignment and the scores; the grader writes them itself.

``prepare`` has nbgrader release the assignment into a fresh course folder (which also fills the
gradebook with its grade cells and their points). ``record`` writes one submission's points, as
decided by the verdicts, and reads the total back.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from tools import nbmeta
from tools.nbgrader_api import alembic_head, make_api  # noqa: F401 - nbgrader's API, shared with tools/


def prepare(work: Path, assignment: str, timeout: int):
    """(release notebook path, db_url, {grade_id: points}), or raise RuntimeError with nbgrader's reason."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session noise
    api, db_url = make_api(work, timeout)
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise RuntimeError(f"nbgrader could not generate the assignment:\n{result.get('error')}")
    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(assignment, assignment)
        points = {c.name: c.max_score for c in nb.grade_cells}
    order = _cell_order(work / "release" / assignment / f"{assignment}.ipynb")
    return work / "release" / assignment / f"{assignment}.ipynb", db_url, {g: points[g] for g in order if g in points}


def _cell_order(path: Path) -> list[str]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return [nbmeta.grade_id(c) for c in nb.cells if nbmeta.is_graded(c)]


def record(db_url: str, assignment: str, student: str, points: dict[str, float]) -> float:
    """Write ``points`` (grade_id -> score) as the submission's autograded scores; the total."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        gb.update_or_create_student(student)
        try:
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
        gb.add_submission(assignment, student)
        for gid, score in points.items():
            grade = gb.find_grade(gid, assignment, assignment, student)
            grade.auto_score = float(score)
        gb.db.commit()
        return float(gb.find_submission_notebook(assignment, assignment, student).score)
