"""Step 4: the gradebook. nbgrader keeps the assignment and the scores; the grader writes them itself.

``prepare`` has nbgrader release the assignment into a fresh course folder (which also fills the
gradebook with its grade cells and their points). ``record`` writes one submission's points, as
decided by the verdicts, and reads the total back.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def alembic_head() -> str:
    """The head revision of nbgrader's database migrations, which a new gradebook is stamped with.

    nbgrader asks a new ``alembic heads`` process for it (about 1.5 s, on every new gradebook); this
    reads the same migration scripts in this process.
    """
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite://") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


def make_api(work: Path, timeout: int = 60, release: Path | None = None):
    """An nbgrader API whose course lives in ``work`` (a fresh gradebook per run); ``release``: where
    ``generate_assignment`` writes the students' notebooks (default ``work/release``)."""
    import nbgrader.api
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    nbgrader.api.get_alembic_version = functools.cache(alembic_head)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    overrides = Config()
    cd = overrides.CourseDirectory
    cd.root = str(ROOT)
    cd.release_directory = str(release or work / "release")
    cd.submitted_directory = str(work / "submitted")
    cd.autograded_directory = str(work / "autograded")
    cd.feedback_directory = str(work / "feedback")
    cd.db_url = f"sqlite:///{work / 'gradebook.db'}"
    overrides.Execute.timeout = timeout
    config.merge(overrides)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config), cd.db_url


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
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


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
