"""Every assignment grades end to end: its solutions earn every point with nothing to report, and the
untouched exercise notebook earns none."""

from __future__ import annotations

import csv
import subprocess
import sys

import nbformat
import pytest

from conftest import ASSIGNMENTS, ROOT, make_submission, venv_env

pytestmark = pytest.mark.slow

# One grading process for all the assignments, one after another, with one worker each: fifteen
# processes would each pay again for importing torch, nbgrader and the grader.
GRADE_EACH = """import sys
from pathlib import Path

from grader.grade import Options, grade

root = Path(sys.argv[1])
sys.exit(max(grade(a, root / "subs" / a, root / "out", Options(jobs=1)) for a in sys.argv[2:]))
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("all")
    for assignment in ASSIGNMENTS:
        subs = root / "subs" / assignment
        subs.mkdir(parents=True)
        nbformat.write(make_submission(assignment), subs / "solved.ipynb")
        nbformat.write(make_submission(assignment, solved=False), subs / "blank.ipynb")
    proc = subprocess.run([sys.executable, "-c", GRADE_EACH, str(root), *ASSIGNMENTS], cwd=ROOT, env=venv_env(),
                          capture_output=True, text=True, timeout=1800)
    return proc, root / "out"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_earn_everything_and_blanks_nothing(assignment, graded):
    proc, out = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"Grading 2 submission(s) of {assignment}" in proc.stdout
    with open(out / assignment / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    solved, blank = rows["solved"], rows["blank"]
    assert float(solved["score"]) == float(solved["max_score"]) > 0, solved
    assert float(blank["score"]) == 0, blank
    assert solved["problems"] == blank["problems"] == solved["sandbox"] == solved["flags"] == ""
