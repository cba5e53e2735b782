"""The assignments: exercises/ is nbgrader's output for solutions/, the solutions pass their own
tests, and the untouched exercise notebooks fail every graded cell."""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from layout.nbmeta import grade_id, is_graded, nbgrader

from conftest import ASSIGNMENTS, ROOT, notebook_path, venv_env

pytestmark = pytest.mark.slow


def run_notebook(nb, cwd):
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def grade_cells(nb):
    return [c for c in nb.cells if is_graded(c)]


def errors(cell):
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def test_there_are_assignments():
    assert "04_queries_keys_values" in ASSIGNMENTS


def test_regenerating_exercises_changes_nothing(tmp_path):
    subprocess.run([sys.executable, "-m", "tools.generate_exercises", "--release-dir", str(tmp_path / "release")],
                   cwd=ROOT, env=venv_env(), check=True)
    for a in ASSIGNMENTS:
        fresh = sorted(p.relative_to(tmp_path / "release" / a) for p in (tmp_path / "release" / a).rglob("*")
                       if p.is_file())
        committed = sorted(p.relative_to(ROOT / "exercises" / a) for p in (ROOT / "exercises" / a).rglob("*")
                           if p.is_file())
        assert fresh == committed, f"{a}: files differ"
        for rel in fresh:
            assert (tmp_path / "release" / a / rel).read_bytes() == (ROOT / "exercises" / a / rel).read_bytes(), (
                f"exercises/{a}/{rel} is out of date: run `make exercises`")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_pass_their_own_tests(assignment):
    """The stored outputs of the solutions: no error, and every graded cell's checks passed. Strict nbval
    (``make test``) runs the solution notebooks again and requires these very outputs."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    assert grade_cells(nb)
    failed = [grade_id(c) or c.source[:40] for c in nb.cells if errors(c)]
    assert not failed, f"cells fail in the solutions notebook: {failed}"
    assert all("public checks passed" in "".join(o.get("text", "") for o in c.outputs) for c in grade_cells(nb))


def test_untouched_exercises_fail_every_graded_cell(tmp_path):
    """Every exercise notebook as a student first opens it, run one after another in one kernel (its
    names cleared before each): every graded cell fails its visible check."""
    combined = nbformat.v4.new_notebook()
    for assignment in ASSIGNMENTS:
        combined.cells.append(nbformat.v4.new_code_cell("%reset -f"))
        for cell in nbformat.read(notebook_path("exercises", assignment), as_version=4).cells:
            cell.metadata["assignment"] = assignment
            combined.cells.append(cell)
    run_notebook(combined, tmp_path)
    cells = grade_cells(combined)
    assert {c.metadata["assignment"] for c in cells} == set(ASSIGNMENTS)
    passing = [f"{c.metadata['assignment']}: {grade_id(c)}" for c in cells if not errors(c)]
    assert not passing, f"graded cells pass without an answer: {passing}"
    assert not [c for c in combined.cells if c.source == "%reset -f" and errors(c)]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_structure(assignment):
    sol = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    ex = nbformat.read(notebook_path("exercises", assignment), as_version=4)
    graded = grade_cells(sol)
    assert len(graded) >= 3, "at least three graded exercises"
    for cell in graded:
        gid = grade_id(cell)
        assert nbgrader(cell)["points"] > 0, gid
        assert re.search(r"\bcheck_\w+\(", cell.source), f"{gid}: no visible check"
        assert "HIDDEN TESTS" not in cell.source, f"{gid}: hidden tests live in grader/hidden/, not in the notebook"
    text = "\n".join(c.source for c in sol.cells if c.cell_type == "markdown")
    assert len(re.findall(r"\(★+☆*, \d+ points?\)", text)) == len(graded), "each exercise states difficulty and points"
    assert text.count("**Tolerance:**") == len(graded), "each exercise states its tolerance"
    assert "<details>" in text, "hints live in collapsible cells"
    student_text = "\n".join(c.source for c in ex.cells)
    for secret in ("BEGIN SOLUTION", "HIDDEN TESTS", "_ref"):
        assert secret not in student_text
    assert not any(c.get("outputs") for c in ex.cells if c.cell_type == "code")
