"""`make grade` end to end: a correct, a blank, a wrong and a broken submission, each in its sandbox."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import NO_SCALE, ROOT, make_submission, venv_env

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same batch graded by two runs at once: on two workers from a folder, and on one worker from
    nbgrader's ``submitted/<student>/<assignment>/`` layout. Each run claims its own sandbox uid, boxes,
    gradebook and output folder; neither may disturb the other."""
    subs = write_batch(tmp_path_factory.mktemp("submissions"))
    out = tmp_path_factory.mktemp("grading")
    layout = tmp_path_factory.mktemp("layout")
    (layout / "flat").mkdir()
    flat = write_batch(layout / "flat")
    for sub in sorted(flat.iterdir()):
        student = sub.stem.removesuffix(f"_{A}")
        (layout / "submitted" / student / A).mkdir(parents=True)
        sub.rename(layout / "submitted" / student / A / f"{A}.ipynb")
    beside = subprocess.Popen(grader_command(layout / "submitted", layout / "out", "--jobs", "1"), cwd=ROOT,
                              env=venv_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc, rows = run_grader(subs, out, "--jobs", "2")  # two workers, whatever the machine's cores
    beside_out, _ = beside.communicate(timeout=600)
    return {"folder": (proc, rows, out / A), "layout": (beside.returncode, beside_out, layout / "out" / A)}


@pytest.fixture(scope="module")
def graded(runs):
    return runs["folder"]


def write_batch(subs):
    """A correct, a blank, a wrong and a broken submission."""
    nbformat.write(make_submission(A), subs / "alice.ipynb")
    nbformat.write(make_submission(A, solved=False), subs / f"bob_{A}.ipynb")
    nbformat.write(make_submission(A, {"ex2_answer": NO_SCALE}), subs / "carol.ipynb")
    (subs / "dave.ipynb").write_text("{ this is not a notebook", encoding="utf-8")
    return subs


def grader_command(subs, out, *options) -> list[str]:
    return [sys.executable, "-m", "grader", A, str(subs), "--out", str(out), *options]


def run_grader(subs, out, *options, env=None):
    proc = subprocess.run(grader_command(subs, out, *options), cwd=ROOT,
                          env=env or venv_env(), capture_output=True, text=True, timeout=600)
    return proc, read_grades(out / A)


def read_grades(folder):
    with open(folder / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def test_every_submission_gets_a_row(graded):
    proc, rows, _ = graded
    assert sorted(rows) == ["alice", "bob", "carol", "dave"], proc.stdout + proc.stderr


def test_columns(graded):
    _, rows, _ = graded
    cols = list(next(iter(rows.values())))
    assert cols[:3] == ["student", "score", "max_score"]
    tail = ["status", "late", "platform", "platform_id", "name", "attempt", "manual", "problems", "sandbox", "flags",
            "file"]
    assert cols[3:-len(tail)] == ["ex1_flying_arrows", "ex2_attention", "ex3_kernel_regression", "ex4_self_attention"]
    assert cols[-len(tail):] == tail
    assert {r["status"] for r in rows.values()} == {"graded"} and {r["platform"] for r in rows.values()} == {"folder"}


def test_scores(graded):
    _, rows, _ = graded
    assert float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) == 10
    assert float(rows["bob"]["score"]) == 0
    # Carol's attention lacks 1/sqrt(d_k): exercise 2 fails, and so does exercise 4, which calls it.
    carol = rows["carol"]
    assert [float(carol[c]) for c in ("ex1_flying_arrows", "ex2_attention", "ex3_kernel_regression",
                                      "ex4_self_attention")] == [2, 0, 2, 0]
    assert float(carol["score"]) == 4
    assert float(rows["dave"]["score"]) == 0


def test_broken_submission_is_reported_not_fatal(graded):
    proc, rows, _ = graded
    assert "not a notebook" in rows["dave"]["problems"]
    assert all(rows[s]["problems"] == rows[s]["sandbox"] == rows[s]["flags"] == "" for s in ("alice", "bob", "carol"))
    assert proc.returncode == 0, "the run completed, even though a submission could not be graded"
    assert "1 of 4 submission(s) need your attention" in proc.stdout


def test_feedback_pages(graded):
    _, _, out = graded
    pages = sorted(p.name for p in (out / "feedback").glob("*.html"))
    assert pages == ["alice.html", "bob.html", "carol.html", "dave.html"]
    carol = (out / "feedback" / "carol.html").read_text(encoding="utf-8")
    assert "forgot to divide the scores by sqrt(d_k)" in carol          # the visible check, as it ran
    # with a single key the weight is 1 whatever the scale, so the two one-key cases pass without 1/sqrt(d_k)
    assert "Hidden tests: 2 of 7 passed" in carol and "Hidden tests: 6 of 6 passed" in carol
    assert "attention with q (3, 5, 8), k (3, 7, 8), v (3, 7, 4), no mask: values are wrong" in carol
    assert "2024" not in carol and "Generator" not in carol  # no hidden source: its seed, its generator
    assert "_static/mathjax/tex-mml-chtml.js" in carol and (out / "feedback" / "_static" / "mathjax").is_dir()
    assert "not a notebook" in (out / "feedback" / "dave.html").read_text(encoding="utf-8")


def test_make_grade_writes_into_grading_folder(tmp_path):
    nbformat.write(make_submission(A), tmp_path / "erin.ipynb")
    proc = subprocess.run(["make", "grade", f"ASSIGNMENT={A}", f"SUBMISSIONS={tmp_path}", f"VENV={sys.prefix}"],
                          cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(ROOT / "grading" / A / "grades.csv", newline="", encoding="utf-8") as f:
        assert [(r["student"], float(r["score"])) for r in csv.DictReader(f)] == [("erin", 10.0)]
    assert (ROOT / "grading" / A / "feedback" / "erin.html").exists()
    ignored = subprocess.run(["git", "check-ignore", "-q", "grading/"], cwd=ROOT)
    assert ignored.returncode == 0, "grading/ must be git-ignored"


def test_one_worker_on_nbgraders_layout_grades_exactly_like_two_on_a_folder_at_the_same_time(runs):
    """Workers split the batch, and the batch may come as ``submitted/<student>/<assignment>/<notebook>.ipynb``,
    as nbgrader lays it out; the grades, notes and pages must depend on neither, nor on another run
    grading beside this one."""
    proc, rows, out = runs["folder"]
    code1, stdout1, out1 = runs["layout"]
    assert code1 == 0, stdout1
    rows1 = read_grades(out1)
    assert "1 at a time" in stdout1 and "2 at a time" in proc.stdout
    assert {s: r["file"] for s, r in rows1.items()} == {s: f"{s}/{A}/{A}.ipynb" for s in rows}
    assert {s: (r["platform"], r["platform_id"]) for s, r in rows1.items()} == {s: ("nbgrader", s) for s in rows}
    same = ("file", "platform", "platform_id")
    assert {s: {**r, **dict.fromkeys(same)} for s, r in rows1.items()} == \
        {s: {**r, **dict.fromkeys(same)} for s, r in rows.items()}
    assert sorted(p.name for p in (out1 / "results").glob("*.json")) == \
        ["alice.json", "bob.json", "carol.json"], "every graded submission is saved as it finishes"
    assert sorted(p.name for p in (out1 / "results").glob("*.ipynb")) == ["alice.ipynb", "bob.ipynb", "carol.ipynb"]
    assert sorted(p.name for p in (out1 / "feedback").glob("*.html")) == \
        sorted(p.name for p in (out / "feedback").glob("*.html"))


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_must_be_positive(tmp_path, jobs, capsys):
    from grader.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main([A, str(tmp_path), "--jobs", jobs])
    assert exit_.value.code == 2
    assert f"--jobs: expected a whole number >= 1, got {jobs}" in capsys.readouterr().err


def test_a_new_gradebook_is_stamped_with_nbgraders_own_alembic_head(tmp_path):
    """The grader reads the head revision of nbgrader's migrations in its own process; nbgrader asks
    ``alembic heads`` in a new one. Both must give the same revision."""
    from nbgrader.dbutil import _temp_alembic_ini

    from layout.nbgrader_api import alembic_head

    with _temp_alembic_ini("sqlite://") as ini:
        heads = subprocess.run([str(Path(sys.executable).parent / "alembic"), "-c", ini, "heads"], check=True,
                               capture_output=True, text=True).stdout
    assert alembic_head() == heads.split()[0] and len(heads.split()[0]) == 12


def test_the_gradebook_holds_the_verdicts(graded):
    """nbgrader's gradebook is written by the grader from its verdicts: the CSV agrees with it."""
    from nbgrader.api import Gradebook

    _, rows, out = graded
    with Gradebook(f"sqlite:///{out / '_nbgrader' / 'gradebook.db'}") as gb:
        for student in ("alice", "bob", "carol"):
            nb = gb.find_submission_notebook(A, A, student)
            assert nb.score == float(rows[student]["score"])
            assert {g.name: g.score for g in nb.grades}["ex2_attention"] == float(rows[student]["ex2_attention"])


def test_refuses_without_a_sandbox_and_grades_when_told(tmp_path):
    """No bubblewrap: a clear refusal. UNSAFE_NO_SANDBOX=1: graded, and every row says it was not sandboxed."""
    nbformat.write(make_submission(A), tmp_path / "hana.ipynb")
    env = venv_env()
    env["PATH"] = str(Path(sys.executable).parent)  # no bwrap on this PATH
    proc = subprocess.run([sys.executable, "-m", "grader", A, str(tmp_path), "--out", str(tmp_path / "o")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "bubblewrap" in proc.stderr and "UNSAFE_NO_SANDBOX=1" in proc.stderr
    env = venv_env()
    env["UNSAFE_NO_SANDBOX"] = "1"
    proc, rows = run_grader(tmp_path, tmp_path / "o", "--jobs", "1", env=env)
    assert proc.returncode == 0 and float(rows["hana"]["score"]) == 10
    assert rows["hana"]["sandbox"] == "UNSANDBOXED" and "WARNING: graded without a sandbox" in proc.stdout
    assert "graded without a sandbox" in (tmp_path / "o" / A / "feedback" / "hana.html").read_text()
    manual = subprocess.run([sys.executable, "-m", "grader.manual", A, "hana", "ex1_flying_arrows", "1", "--out",
                             str(tmp_path / "o")], cwd=ROOT, env=venv_env(), capture_output=True, text=True,
                            timeout=120)
    assert manual.returncode == 0, manual.stderr
    assert "graded without a sandbox" in (tmp_path / "o" / A / "feedback" / "hana.html").read_text(), \
        "a page made again for points given by hand keeps the run's warning"
