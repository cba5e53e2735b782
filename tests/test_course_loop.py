"""A course's loop, end to end, in the sandbox: Canvas's download (a zip) in, progress as it goes, Canvas's gradebook
file back, a similarity report, points given by hand, then one student graded again from the unpacked folder, where a
named pipe, a link and a colliding name wait. The download is shaped as canvas-lms's ``lib/content_zipper.rb`` writes
it (``<sortable name>[_LATE]_<user id>_<file id>_<file name>``, ``-1`` for a name uploaded again), the gradebook as
``lib/gradebook_exporter.rb`` writes it (see tests/test_platforms.py)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import zipfile

import nbformat
import pytest

from conftest import NO_SCALE, ROOT, make_submission, solution_sources, venv_env

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"
COLUMN = "Notebook 4: Queries, keys and values (40002)"


def renamed(source: str) -> str:
    """The solution as a student who copied it would hand it in: other names, the same code."""
    for old, new in (("scores", "logits"), ("s1", "a"), ("s2", "b"), ("w1", "p"), ("w2", "r")):
        source = re.sub(rf"\b{old}\b", new, source)
    return source


def canvas_files() -> dict[str, nbformat.NotebookNode]:
    copied = {gid: renamed(src) for gid, src in solution_sources(A).items()}
    return {f"doejohn_1001_5001_{A}.ipynb": make_submission(A),                      # superseded by -1
            f"doejohn_1001_5101_{A}-1.ipynb": make_submission(A, {"ex2_answer": NO_SCALE}),
            f"müllerzoë_LATE_1002_5002_{A}.ipynb": make_submission(A),                 # late, accented
            f"roeana_1003_5003_{A}.ipynb": make_submission(A, copied),                  # Zoë's code, renamed
            f"blankbob_1004_5004_{A}.ipynb": make_submission(A, solved=False)}


def canvas_gradebook() -> str:
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Notebook 3: Attention (40001)", COLUMN,
                "Current Score", "Final Score"])
    w.writerow(["    Points Possible", "", "", "", "", "10.00", "10.00", "(read only)", "(read only)"])
    for name, uid in (("Doe, John", "1001"), ("Müller, Zoë", "1002"), ("Roe, Ana", "1003"), ("Blank, Bob", "1004"),
                      ("Nobody, Nadia", "1005")):
        w.writerow([name, uid, f"S{uid}", f"login{uid}", "Section A", "8.00", "", "80", "80"])
    return out.getvalue()


def grade(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "grader", A, *map(str, args)], cwd=ROOT, env=venv_env(),
                          capture_output=True, text=True, timeout=timeout)


def read_rows(folder):
    with open(folder / "grades.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    files = canvas_files()
    with zipfile.ZipFile(root / "submissions.zip", "w") as z:
        for name, nb in files.items():
            z.writestr(name, nbformat.writes(nb).encode("utf-8"))
    (root / "gradebook.csv").write_text(canvas_gradebook(), encoding="utf-8")
    out = root / "out"
    first = grade(root / "submissions.zip", "--out", out, "--jobs", "2", "--export", "canvas", root / "gradebook.csv")
    rows_first = read_rows(out / A)
    imported_first = (out / A / "canvas_import.csv").read_text(encoding="utf-8")
    manual = subprocess.run([sys.executable, "-m", "grader.manual", A, "doejohn_1001", "ex2_attention", "2", "--out",
                             out], cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=120)
    rows_manual = read_rows(out / A)
    imported_manual = (out / A / "canvas_import.csv").read_text(encoding="utf-8")
    with zipfile.ZipFile(out / A / "canvas_feedback.zip") as z:  # John's page, named by his -1 file's ids
        returned_manual = z.read("doejohn_1001_5101_feedback.html").decode("utf-8")
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / A / "results").glob("*.json")}
    # the unpacked folder, Bob's file handed in anew, and three things that are not a student's notebook
    folder = root / "unpacked"
    folder.mkdir()
    for name, nb in files.items():  # the same bytes as in the zip
        (folder / name).write_text(nbformat.writes(make_submission(A) if name.startswith("blankbob") else nb),
                                   encoding="utf-8")
    os.mkfifo(folder / "zz.ipynb")
    os.symlink(folder / f"roeana_1003_5003_{A}.ipynb", folder / "mallory.ipynb")
    nbformat.write(make_submission(A, solved=False), folder / "mallory!.ipynb")
    again = grade(folder, "--out", out, "--jobs", "2", "--only", "blankbob_1004", timeout=300)
    rows_again = read_rows(out / A)
    after_again = {p.name: p.stat().st_mtime_ns for p in (out / A / "results").glob("*.json")}
    (out / A / "results" / "roeana_1003.json").unlink()  # as if the run had stopped before Ana's result
    resumed = grade(folder, "--out", out, "--jobs", "2", "--resume", timeout=300)
    return {"first": (first, rows_first), "manual": (manual, rows_manual), "again": (again, rows_again),
            "imported": {"first": imported_first, "manual": imported_manual}, "returned_manual": returned_manual,
            "resumed": (resumed, read_rows(out / A)), "out": out / A, "mtimes": mtimes, "after_again": after_again}


def by_student(rows):
    return {r["student"]: r for r in rows}


def test_the_download_is_graded_with_the_platform_identity_kept(loop):
    proc, rows = loop["first"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    graded = {r["student"]: r for r in rows if r["status"] == "graded"}
    assert sorted(graded) == ["blankbob_1004", "doejohn_1001", "mullerzoe_1002", "roeana_1003"]
    zoe = graded["mullerzoe_1002"]
    assert (zoe["platform"], zoe["platform_id"], zoe["late"], zoe["score"]) == ("canvas", "1002", "True", "10.0")
    assert graded["doejohn_1001"]["attempt"] == "1" and float(graded["doejohn_1001"]["score"]) < 10
    earlier = [r for r in rows if r["status"] == "superseded"]
    assert [r["file"] for r in earlier] == [f"doejohn_1001_5001_{A}.ipynb"] and earlier[0]["score"] == ""
    assert f"doejohn_1001_5101_{A}-1.ipynb" in earlier[0]["problems"]


def test_progress_lines_in_a_log_and_a_summary_of_a_screen(loop):
    proc, _ = loop["first"]
    assert re.search(r"^4/4 graded, \d+:\d\d elapsed, [\d.]+ s/submission, about 0:00 left$", proc.stdout, re.M)
    assert "\x1b[" not in proc.stdout, "no terminal codes in a log"
    assert "1 earlier submission(s) not graded" in proc.stdout
    assert len(proc.stdout.splitlines()) < 40


def canvas_points(text: str) -> dict[str, str]:
    """Canvas user id -> the assignment's cell of a filled gradebook file."""
    table = list(csv.reader(io.StringIO(text, newline="")))
    col = table[0].index(COLUMN)
    return {row[1]: row[col] for row in table[2:]}


def test_canvas_gets_its_gradebook_back_with_the_points_filled(loop):
    out = loop["out"]
    table = list(csv.reader(io.StringIO(loop["imported"]["first"], newline="")))
    header = table[0]
    col = header.index(COLUMN)
    points = {row[1]: row[col] for row in table[2:]}
    _, rows = loop["first"]
    graded = by_student(r for r in rows if r["status"] == "graded")
    assert float(points["1002"]) == 10 and float(points["1004"]) == 0
    assert float(points["1001"]) == float(graded["doejohn_1001"]["score"])
    assert points["1005"] == ""
    assert all(row[5] == "8.00" for row in table[2:]), "another assignment's points are not touched"
    assert "Nobody, Nadia" in (out / "canvas_unmatched.txt").read_text(encoding="utf-8")
    with zipfile.ZipFile(out / "canvas_feedback.zip") as z:  # one upload: <name>_<user id>_<attachment id>_
        assert sorted(z.namelist()) == ["blankbob_1004_5004_feedback.html", "doejohn_1001_5101_feedback.html",
                                        "mullerzoe_1002_5002_feedback.html", "roeana_1003_5003_feedback.html"]
    assert not (out / "return").exists()


def test_copied_code_under_other_names_is_reported(loop):
    """Zoë handed in the published solution, Ana the same with other names (and, by the last run, Bob's new file
    is the solution too): one row of the solution's table, the same code, and not a pair."""
    page = (loop["out"] / "similarity.html").read_text(encoding="utf-8")
    solution = re.findall(r"<tr><td class='num'>(\d+)%</td><td class='num'>(\d+)</td><td>([^<]*)</td></tr>", page)
    assert ("100", "3", "blankbob_1004, mullerzoe_1002, roeana_1003") in solution, solution
    assert "No pair of submissions scores 70% or more." in page
    proc, _ = loop["first"]  # Zoë, Ana and John (the solution but one answer) match the published solution
    said = [line for line in proc.stdout.splitlines() if "unusually alike" in line]
    assert said and said[0].startswith("no pair of submissions is unusually alike; 3 submission(s) match the "
                                       "published solution"), said


def test_points_given_by_hand_show_at_once(loop):
    proc, rows = loop["manual"]
    assert proc.returncode == 0, proc.stderr
    john = by_student(r for r in rows if r["status"] == "graded")["doejohn_1001"]
    assert john["manual"] == "ex2_attention" and float(john["ex2_attention"]) == 2


def test_points_given_by_hand_reach_the_platforms_file_and_the_feedback_zip_at_once(loop):
    """They showed the old score until the next grading run."""
    before, after = (canvas_points(loop["imported"][when]) for when in ("first", "manual"))
    john = by_student(r for r in loop["manual"][1] if r["status"] == "graded")["doejohn_1001"]
    assert float(after["1001"]) == float(john["score"]) > float(before["1001"])
    assert {k: v for k, v in after.items() if k != "1001"} == {k: v for k, v in before.items() if k != "1001"}
    assert "canvas_import.csv and canvas_feedback.zip written again" in loop["manual"][0].stdout
    assert f"{float(john['score']):g}" in loop["returned_manual"]
    assert "Points given by hand: 2 of" in loop["returned_manual"], "the page marks the cell's points as the hand's"


def test_one_student_graded_again_and_everyone_else_kept(loop):
    proc, rows = loop["again"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # Bob, and the new file mallory!.ipynb, which has no saved result to keep
    assert "Grading 2 submission(s)" in proc.stdout and "3 result(s) kept from the last run" in proc.stdout, \
        proc.stdout
    graded = by_student(r for r in rows if r["status"] == "graded")
    assert "no saved result" in {r["file"]: r for r in rows}["mallory!.ipynb"]["problems"]
    assert float(graded["blankbob_1004"]["score"]) == 10
    john_before = by_student(r for r in loop["manual"][1] if r["status"] == "graded")["doejohn_1001"]
    assert graded["doejohn_1001"]["manual"] == "ex2_attention", "points given by hand stay through a regrade"
    assert graded["doejohn_1001"]["score"] == john_before["score"]
    results = loop["out"] / "results"
    before = {k: v for k, v in loop["mtimes"].items() if k != "blankbob_1004.json"}
    assert sorted(before) == ["doejohn_1001.json", "mullerzoe_1002.json", "roeana_1003.json"]
    assert {k: loop["after_again"][k] for k in before} == before, "their saved results are not rewritten"
    assert json.loads((loop["out"] / "run.json").read_text())["seed"] == \
        json.loads((results / "blankbob_1004.json").read_text())["seed"], "the same questions as the class"


def test_a_pipe_a_link_and_a_colliding_name_each_get_their_own_row(loop):
    _, rows = loop["again"]
    named = {r["file"]: r for r in rows}
    assert "named pipe" in named["zz.ipynb"]["problems"] and named["zz.ipynb"]["status"] == "not read"
    assert "symbolic link" in named["mallory.ipynb"]["problems"]
    assert named["mallory!.ipynb"]["student"] != named["mallory.ipynb"]["student"] == "mallory"
    assert "named" in named["mallory!.ipynb"]["problems"], "a renamed row says so"
    assert len({r["student"] for r in rows}) == len(rows), "no two rows share an id"
    ana = by_student(rows)["roeana_1003"]
    assert ana["file"] == f"roeana_1003_5003_{A}.ipynb" and float(ana["score"]) == 10


def test_resume_grades_only_what_has_no_result(loop):
    proc, rows = loop["resumed"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Grading 1 submission(s)" in proc.stdout and "4 result(s) kept from the last run" in proc.stdout, \
        proc.stdout
    def without_notes(table):  # the --only run noted why it graded mallory!.ipynb too
        return [{**r, "problems": r["problems"].split("; graded again with --only")[0]} for r in table]

    assert without_notes(rows) == without_notes(loop["again"][1]), "the same class, the same rows"


def test_an_export_that_cannot_be_filled_is_refused_before_grading(tmp_path):
    nbformat.write(make_submission(A), tmp_path / "ann.ipynb")
    (tmp_path / "gradebook.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (7)\n",
                                            encoding="utf-8")
    proc = grade(tmp_path, "--out", tmp_path / "o", "--export", "canvas", tmp_path / "gradebook.csv", timeout=120)
    assert proc.returncode == 2 and "--column" in proc.stderr and "Quiz 1 (7)" in proc.stderr
    assert not (tmp_path / "o").exists(), "nothing graded"


def test_the_term_lists_the_enrolled_student_who_handed_nothing_in(loop):
    """Nadia is in Canvas's gradebook export (user id 1005) and handed nothing in: the run kept the export's
    students (roster.json), and the term has her row, with no points and nothing submitted."""
    from grader import course

    rows = {r["student"]: r for r in course.join(loop["out"].parent)}
    nadia = rows["nobodynadia_1005"]
    assert (nadia["name"], nadia["platform_id"], nadia[A], nadia["submitted"]) == ("Nobody, Nadia", "1005", None, 0)
    assert [s for s, r in rows.items() if not r["submitted"]] == ["nobodynadia_1005"]
