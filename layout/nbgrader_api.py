"""nbgrader's Python API on this repository's course (``nbgrader_config.py``), with a gradebook of its own.

Used by the authors' ``tools.generate_exercises`` (a throwaway gradebook) and by the grader's gradebook step
(``grader/recording/gradebook.py``), which needs the same course with its own folders.
"""

from __future__ import annotations

import functools
from pathlib import Path

from layout.paths import ROOT


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
    """``(api, db_url)``: an nbgrader API whose course lives in ``work`` (a fresh gradebook per run);
    ``release``: where ``generate_assignment`` writes the students' notebooks (default ``work/release``)."""
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
