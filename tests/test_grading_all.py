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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_earn_everything_and_blanks_nothing(assignment, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    nbformat.write(make_submission(assignment), subs / "solved.ipynb")
    nbformat.write(make_submission(assignment, solved=False), subs / "blank.ipynb")
    # one worker: two submissions do not pay for starting a pool (the workers' own imports of torch)
    proc = subprocess.run([sys.executable, "-m", "grader", assignment, str(subs), "--out", str(out), "--jobs", "1"],
                          cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=900)
    with open(out / assignment / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    solved, blank = rows["solved"], rows["blank"]
    assert float(solved["score"]) == float(solved["max_score"]) > 0, solved
    assert float(blank["score"]) == 0, blank
    assert solved["problems"] == blank["problems"] == solved["sandbox"] == solved["flags"] == ""
