"""grader.course: the term joined per student (course.csv) and drawn (course.html, grader.reporting.course_page), from
gradebooks and grades.csv files built here with nbgrader's API, against values worked out by hand below."""

from __future__ import annotations

import base64
import contextlib
import csv
import json
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader import course, limits
from grader.reporting import course_page
from layout.paths import assignments

A, B, C = assignments()[0], assignments()[2], assignments()[5]  # 5, 10 and 5 points: 20 in all
UNGRADED = assignments()[1]  # a grades.csv without a gradebook: not graded
COLUMNS = ["student", "score", "max_score", "ex1", "ex2", "status", "late", "platform", "platform_id", "name",
           "attempt", "manual", "problems", "sandbox", "flags", "file"]
ACCENTED = "Zoë Ångström"
FORMULA = '=HYPERLINK("http://example.com","x")'
SCRIPT = "<script>alert(1)</script>"


def _row(student: str, score: float, status: str = "graded", late: bool = False, platform_id: str = "",
         name: str = "", manual: str = "", flags: str = "", platform: str = "canvas") -> dict:
    return {"student": student, "score": score, "status": status, "late": late, "platform": platform,
            "platform_id": platform_id, "name": name, "manual": manual, "flags": flags, "file": f"{student}.ipynb"}


def _assignment(grading: Path, assignment: str, cells: dict[str, float], auto: dict[str, dict[str, float]],
                rows: list[dict], manual: dict[tuple[str, str], float] | None = None) -> None:
    """A grading run's folder: nbgrader's gradebook (autograded points, and ``manual`` entered by hand on top),
    grades.csv and run.json."""
    from nbgrader.api import Gradebook

    db = grading / assignment / "_nbgrader" / "gradebook.db"
    db.parent.mkdir(parents=True)
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.update_or_create_assignment(assignment)
        gb.add_notebook(assignment, assignment)
        for cell, points in cells.items():
            gb.add_grade_cell(cell, assignment, assignment, max_score=points, cell_type="code")
        for student, points in auto.items():
            gb.update_or_create_student(student)
            gb.add_submission(assignment, student)
            for cell, score in points.items():
                gb.find_grade(cell, assignment, assignment, student).auto_score = score
        for (student, cell), score in (manual or {}).items():
            gb.find_grade(cell, assignment, assignment, student).manual_score = score
        gb.db.commit()
    _grades_csv(grading / assignment, rows)
    (grading / assignment / "run.json").write_text(json.dumps({"assignment": assignment, "seed": 1}))


def _grades_csv(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)


@contextlib.contextmanager
def _new_gradebooks():
    """nbgrader stamps a new gradebook with its migrations' head, read here in this process (not by a new
    ``alembic heads`` process), and without its session's warnings."""
    import nbgrader.api
    from sqlalchemy.exc import SAWarning

    from layout.nbgrader_api import alembic_head

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        mp.setattr(nbgrader.api, "get_alembic_version", alembic_head)
        yield


@pytest.fixture(scope="module")
def grading(tmp_path_factory) -> Path:
    """Five students over three graded assignments (see EXPECTED). bob's earlier, late and flagged file of A was
    superseded; dave's id changed from dave to Dave_S, his Canvas id (1004) stayed, and C came without one; erin's
    only file could not be read, so it never reached the gradebook."""
    grading = tmp_path_factory.mktemp("grading")
    with _new_gradebooks():
        _assignment(grading, A, {"ex1": 2, "ex2": 3},
                    {"alice": {"ex1": 2, "ex2": 3}, "bob": {"ex1": 1, "ex2": 0}, "carol": {"ex1": 0, "ex2": 3},
                     "dave": {"ex1": 2, "ex2": 2}},
                    [_row("alice", 5, platform_id="1001", name=ACCENTED),
                     _row("bob", 1, platform_id="1002", name=FORMULA),
                     _row("bob", 0, "superseded", late=True, platform_id="1002", name=FORMULA, flags="exec"),
                     _row("carol", 3, name=SCRIPT, flags="ex1_attention: uses importlib"),
                     _row("dave", 4, platform_id="1004", name="Dave Smith"),
                     _row("notes", 0, "not read")])
        _assignment(grading, B, {"ex1": 4, "ex2": 6},
                    {"alice": {"ex1": 4, "ex2": 2}, "carol": {"ex1": 4, "ex2": 6}, "Dave_S": {"ex1": 3, "ex2": 4}},
                    [_row("alice", 6, platform_id="1001", name=ACCENTED, manual="ex2"), _row("carol", 10, name=SCRIPT),
                     _row("Dave_S", 7, platform_id="1004", name="Dave Smith")],
                    manual={("alice", "ex2"): 5})
        _assignment(grading, C, {"ex1": 5},
                    {"alice": {"ex1": 5}, "bob": {"ex1": 3}, "carol": {"ex1": 0}, "Dave_S": {"ex1": 2}},
                    [_row("alice", 5, platform_id="1001", name=ACCENTED),
                     _row("bob", 3, late=True, platform_id="1002", name=FORMULA, flags="ex1: not plain Python"),
                     _row("carol", 0, name=SCRIPT), _row("Dave_S", 2, name="Dave Smith"),
                     _row("erin", 0, name="Erin")])
        _assignment(grading, "99_not_a_course_assignment", {"ex1": 50}, {"alice": {"ex1": 50}},
                    [_row("alice", 50)])
    _grades_csv(grading / UNGRADED, [_row("alice", 3)])
    course.write(grading, grading)
    return grading


# Worked out by hand from the fixture: A is out of 5, B of 10, C of 5, so max_total is 20 for everyone.
EXPECTED = {
    "alice": {"name": ACCENTED, "platform_id": "1001", A: "5", B: "9", C: "5",  # B: 4 + 5 entered by hand (auto 2)
              "total": "19", "percent": "95", "submitted": "3", "late": "0", "flagged": "0"},
    "bob": {"name": "'" + FORMULA, "platform_id": "1002", A: "1", B: "", C: "3",  # B missed: empty, counts 0
            "total": "4", "percent": "20", "submitted": "2", "late": "1", "flagged": "1"},
    "carol": {"name": SCRIPT, "platform_id": "", A: "3", B: "10", C: "0",
              "total": "13", "percent": "65", "submitted": "3", "late": "0", "flagged": "1"},
    "Dave_S": {"name": "Dave Smith", "platform_id": "1004", A: "4", B: "7", C: "2",
               "total": "13", "percent": "65", "submitted": "3", "late": "0", "flagged": "0"},
    "erin": {"name": "Erin", "platform_id": "", A: "", B: "", C: "0",
             "total": "0", "percent": "0", "submitted": "1", "late": "0", "flagged": "0"},
}


def _course_csv(grading: Path) -> tuple[list[str], dict[str, dict]]:
    with open(grading / "course.csv", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, {r["student"]: r for r in reader}


def test_the_columns_are_the_graded_course_assignments_in_course_order(grading):
    """Only assignments of the course with a gradebook: not a grades.csv alone, not a folder of another name."""
    columns, _ = _course_csv(grading)
    assert columns == ["student", "name", "platform_id", A, B, C, "total", "max_total", "percent", "submitted",
                       "late", "flagged"]


def test_each_student_row_equals_the_hand_computed_one(grading):
    """Totals, percent, counts of submissions, late and flagged ones (a superseded file counts for nothing, a file
    that was not read is no student), one row per student."""
    _, rows = _course_csv(grading)
    assert list(rows) == ["alice", "bob", "carol", "Dave_S", "erin"]
    for student, expected in EXPECTED.items():
        assert {k: v for k, v in rows[student].items() if k in expected} == expected, student
        assert rows[student]["max_total"] == "20", student


def test_points_entered_by_hand_override_the_autograded_ones(grading):
    """alice's B: grades.csv and the autograder say 6, the gradebook's hand-entered 5 on ex2 makes it 9."""
    _, rows = _course_csv(grading)
    assert rows["alice"][B] == "9" and rows["alice"]["total"] == "19"


def test_a_missed_assignment_is_empty_and_still_counts_in_max_total(grading):
    _, rows = _course_csv(grading)
    assert rows["bob"][B] == "" and rows["bob"]["submitted"] == "2"
    assert rows["bob"]["max_total"] == "20" and rows["bob"]["percent"] == "20"


def test_a_platform_id_joins_a_student_whose_id_changed(grading):
    """dave (A) and Dave_S (B) share Canvas id 1004: one row, under the latest id; Dave_S's C, without a platform
    id, joins it by the student id."""
    _, rows = _course_csv(grading)
    assert "dave" not in rows and rows["Dave_S"]["submitted"] == "3" and rows["Dave_S"]["platform_id"] == "1004"


def test_text_is_kept_and_cleaned_for_a_spreadsheet(grading):
    """An accented name comes through as written; a name that is a formula starts with a quote."""
    _, rows = _course_csv(grading)
    assert rows["alice"]["name"] == ACCENTED
    assert rows["bob"]["name"] == "'" + FORMULA
    assert course.join(grading)[1]["name"] == "'" + FORMULA


def test_join_returns_numbers(grading):
    """The function the tests call: scores as numbers, None for a missed assignment."""
    rows = {r["student"]: r for r in course.join(grading)}
    assert rows["bob"][B] is None and rows["alice"][B] == 9.0 and rows["alice"]["percent"] == 95.0
    assert rows["bob"]["late"] == 1 and rows["carol"]["flagged"] == 1


def test_moodle_rows_join_by_name_and_canvas_ids_keep_students_apart(tmp_path, capsys):
    """Moodle's participant id is new in every assignment, and so is the student id made from it: Frank's two rows
    join by his full name. Two Moodle students named Sam Lee in C: no Sam Lee is joined by name (three rows). Two
    Canvas users both filed as bob: two rows, kept apart by their user ids."""
    with _new_gradebooks():
        _assignment(tmp_path, A, {"ex1": 2, "ex2": 3},
                    {"Frank_rsted_501": {"ex1": 2}, "Sam_Lee_601": {"ex1": 1}, "bob": {"ex2": 3}},
                    [_row("Frank_rsted_501", 2, platform="moodle", platform_id="501", name="Frank Ørsted"),
                     _row("Sam_Lee_601", 1, platform="moodle", platform_id="601", name="Sam Lee"),
                     _row("bob", 3, platform_id="11", name="bob")])
        _assignment(tmp_path, C, {"ex1": 5},
                    {"Frank_rsted_777": {"ex1": 5}, "Sam_Lee_602": {"ex1": 4}, "Sam_Lee_603": {"ex1": 0},
                     "bob": {"ex1": 1}},
                    [_row("Frank_rsted_777", 5, platform="moodle", platform_id="777", name="Frank Ørsted"),
                     _row("Sam_Lee_602", 4, platform="moodle", platform_id="602", name="Sam Lee"),
                     _row("Sam_Lee_603", 0, platform="moodle", platform_id="603", name="Sam Lee"),
                     _row("bob", 1, platform_id="12", name="bob")])
    rows = course.join(tmp_path)
    frank = [r for r in rows if r["name"] == "Frank Ørsted"]
    assert [(r["student"], r[A], r[C], r["total"], r["submitted"]) for r in frank] == \
        [("Frank_rsted_777", 2.0, 5.0, 7.0, 2)]
    assert sorted(r["student"] for r in rows if r["name"] == "Sam Lee") == ["Sam_Lee_601", "Sam_Lee_602",
                                                                          "Sam_Lee_603"]
    assert sorted((r["platform_id"], r["total"]) for r in rows if r["student"] == "bob") == [("11", 3.0), ("12", 1.0)]
    assert "2 Moodle students are named 'Sam Lee'" in capsys.readouterr().err


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


def _images(page: str) -> list[dict]:
    parser = _Images()
    parser.feed(page)
    return parser.images


def test_the_page_escapes_names_and_embeds_its_picture_with_alt_text(grading):
    page = (grading / "course.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html><html lang='en'>") and "<title>" in page and "<th scope='col'>" in page
    assert "<script" not in page and html_escaped(SCRIPT) in page
    assert re.search(r"(src|href)=['\"]?(https?:)?//", page) is None  # nothing from the network
    (image,) = _images(page)
    assert base64.b64decode(image["src"].removeprefix("data:image/png;base64,"))[:8] == b"\x89PNG\r\n\x1a\n"
    # A's percents: alice 100, bob 20, carol 60, dave 80 (erin did not hand it in): median (60 + 80) / 2
    assert f"{A}: median 70%, lowest 20%, highest 100%, 4 of 5 handed in" in image["alt"]
    # B's: alice 90, carol 100, Dave 70 (bob and erin did not hand it in)
    assert f"{B}: median 90%, lowest 70%, highest 100%, 3 of 5 handed in" in image["alt"]
    assert "A heat map shows each student's percent" in image["alt"]


def html_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _png_height(png: bytes) -> int:
    return int.from_bytes(png[20:24], "big")


def test_a_class_over_the_cut_off_gets_no_heat_map(grading, monkeypatch):
    rows, term = course.join(grading), course.graded(grading)
    with_map, alt = course_page.picture(rows, term)
    monkeypatch.setattr(limits, "HEATMAP_MAX_STUDENTS", len(rows) - 1)
    without, alt_without = course_page.picture(rows, term)
    assert "A heat map" in alt and f"No heat map: the class has more than {len(rows) - 1} students" in alt_without
    assert _png_height(with_map) > _png_height(without)


def test_nothing_graded_is_a_clear_error(tmp_path, capsys):
    """A grades.csv without a gradebook, an empty gradebook.db (left as it is, not made a gradebook): exit 2."""
    _grades_csv(tmp_path / A, [_row("alice", 3)])
    (tmp_path / B / "_nbgrader").mkdir(parents=True)
    (tmp_path / B / "_nbgrader" / "gradebook.db").touch()
    assert course.main(["--grading", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"no graded assignment in {tmp_path}" in err and "_nbgrader/gradebook.db" in err
    assert "not a gradebook of nbgrader's" in err and (tmp_path / B / "_nbgrader" / "gradebook.db").stat().st_size == 0
    assert not (tmp_path / "course.csv").exists()


def test_main_writes_both_files_where_told(grading, tmp_path, capsys):
    assert course.main(["--grading", str(grading), "--out", str(tmp_path / "term")]) == 0
    assert (tmp_path / "term" / "course.csv").read_text(encoding="utf-8") == \
        (grading / "course.csv").read_text(encoding="utf-8")
    assert (tmp_path / "term" / "course.html").is_file() and "course.html" in capsys.readouterr().out


def _canvas_gradebook(path: Path, students: list[tuple[str, str, str]]) -> Path:
    """Canvas's gradebook export as ``lib/gradebook_exporter.rb`` writes it (see tests/test_platforms.py): the
    student's sortable name and user id, ``N/A`` where the assignment is not theirs, the Test Student last."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Notebook (40001)", "Current Score"])
        w.writerow(["    Points Possible", "", "", "", "", "5.00", "(read only)"])
        for name, uid, cell in students:
            w.writerow([name, uid, "", f"login{uid}", "Section A", cell, "80"])
    return path


def _moodle_worksheet(path: Path, people: list[tuple[str, str]]) -> Path:
    """Moodle's grading worksheet (see tests/test_platforms.py): one row per participant of the assignment."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum grade",
                    "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"])
        for pid, name in people:
            w.writerow([f"Participant {pid}", name, f"p{pid}@example.org", "No submission", "", "100.00", "Yes", "-",
                        "-", ""])
    return path


def test_the_platforms_roster_counts_students_who_handed_nothing_in(tmp_path):
    """The grading run (``--export``) keeps the students of the Canvas export it filled: Nora, enrolled, never
    handed A in, and gets her row (no points, 0 submitted, counted in the share of the class); Ed, for whom A is
    ``N/A`` (not his assignment), and Canvas's Test Student do not. Before, the term listed submitters only."""
    from grader.reporting import export

    with _new_gradebooks():
        _assignment(tmp_path, A, {"ex1": 2, "ex2": 3}, {"alice_1001": {"ex1": 2, "ex2": 3}, "bob_1002": {"ex1": 1}},
                    [_row("alice_1001", 5, platform_id="1001", name="alice"),
                     _row("bob_1002", 1, platform_id="1002", name="bob")])
    sheet = _canvas_gradebook(tmp_path / "gradebook.csv", [
        ("Alice, A", "1001", ""), ("Bob, B", "1002", ""), ("Never, Nora", "1005", ""), ("Elsewhere, Ed", "1006", "N/A"),
        ("Student, Test", "1099", "")])
    with open(tmp_path / A / "grades.csv", newline="", encoding="utf-8") as f:
        rows = [{**r, "max_score": "5"} for r in csv.DictReader(f)]
    export.export("canvas", sheet, rows, A, tmp_path / A, column="40001")
    course.write(tmp_path, tmp_path)
    _, rows = _course_csv(tmp_path)
    assert list(rows) == ["alice_1001", "bob_1002", "nevernora_1005"]
    nora = rows["nevernora_1005"]
    assert (nora["name"], nora["platform_id"], nora[A], nora["total"], nora["submitted"]) == \
        ("Never, Nora", "1005", "", "0", "0")
    page = (tmp_path / "course.html").read_text(encoding="utf-8")
    assert "<p>3 student(s) (1 with no graded submission), 1 assignment(s) graded so far" in page
    (image,) = _images(page)
    assert f"{A}: median 60%, lowest 20%, highest 100%, 2 of 3 handed in" in image["alt"]


def test_moodles_roster_joins_its_students_by_name_across_assignments(tmp_path):
    """Moodle's worksheets give each participant a new id per assignment: Ben, who handed in nothing in either, is
    one row; Ana's graded A and her empty C are one row. Two enrolled students named Kim Park in C, one graded: they
    stay two rows."""
    from grader.reporting import export

    with _new_gradebooks():
        _assignment(tmp_path, A, {"ex1": 2, "ex2": 3}, {"Ana_Lima_20": {"ex1": 2}},
                    [_row("Ana_Lima_20", 2, platform="moodle", platform_id="20", name="Ana Lima")])
        _assignment(tmp_path, C, {"ex1": 5}, {"Kim_Park_45": {"ex1": 5}},
                    [_row("Kim_Park_45", 5, platform="moodle", platform_id="45", name="Kim Park")])
    for assignment, people in ((A, [("20", "Ana Lima"), ("21", "Ben Ode")]),
                               (C, [("40", "Ana Lima"), ("41", "Ben Ode"), ("45", "Kim Park"), ("46", "Kim Park")])):
        with open(tmp_path / assignment / "grades.csv", newline="", encoding="utf-8") as f:
            graded = [{**r, "max_score": "5"} for r in csv.DictReader(f)]
        export.export("moodle", _moodle_worksheet(tmp_path / f"{assignment}.csv", people), graded, assignment,
                      tmp_path / assignment)
    rows = {(r["name"], r["student"]): (r[A], r[C], r["submitted"]) for r in course.join(tmp_path)}
    assert rows == {("Ana Lima", "Ana_Lima_20"): (2.0, None, 1), ("Ben Ode", "Ben_Ode_21"): (None, None, 0),
                    ("Kim Park", "Kim_Park_45"): (None, 5.0, 1), ("Kim Park", "Kim_Park_46"): (None, None, 0)}
