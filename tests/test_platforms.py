"""Grades back to the learning platforms (grader/reporting/export.py): the platform's own export, filled and read back
as the platform reads it; the feedback zips the platforms take back."""

import csv
import io
import os
import re
import zipfile
from datetime import datetime

import pytest

from grader.recording import handback
from grader.reporting import export

A = "04_queries_keys_values"


def graded(student, pid, score, platform="canvas", status="graded", summary="", name=""):
    return {"student": student, "score": score, "max_score": 10.0, "status": status, "platform": platform,
            "platform_id": pid, "name": name, "late": False, "problems": "", "summary": summary,
            "file": f"{student}.ipynb"}


def read_csv(data: bytes, delimiter=","):
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""), delimiter=delimiter))


def write_csv(rows, delimiter=",", end="\n", bom=False) -> bytes:
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=delimiter, lineterminator=end).writerows(rows)
    return (b"\xef\xbb\xbf" if bom else b"") + out.getvalue().encode("utf-8")


def only_changed(before, after, cells: dict):
    """``after`` is ``before`` with exactly ``cells`` ((row, column) -> value) changed."""
    assert len(after) == len(before) and after[0] == before[0]
    for i, (old, new) in enumerate(zip(before, after)):
        assert len(new) == len(old), i
        for j, (a, b) in enumerate(zip(old, new)):
            assert b == cells.get((i, j), a), (i, j, a, b)


# Canvas's gradebook export, as lib/gradebook_exporter.rb writes it: Student, ID, SIS User ID, SIS Login ID, Section,
# one "<title> (<assignment id>)" column per assignment, then read-only totals; a "Manual Posting" row when an
# assignment posts manually, then "    Points Possible". Canvas reads it back with app/models/gradebook_importer.rb
# (comma or semicolon, decimal commas allowed, read-only columns ignored: "Any changes made to these columns will be
# ignored when you re-upload the file", https://ts.vcu.edu/askit/teaching-and-learning/canvas/faculty/grading-faculty/
# gradebook-action-menu-faculty/), https://github.com/instructure/canvas-lms/blob/master/lib/gradebook_exporter.rb
TOTALS = ["Assignments Current Score", "Assignments Unposted Current Score", "Assignments Final Score",
          "Assignments Unposted Final Score", "Current Score", "Unposted Current Score", "Final Score",
          "Unposted Final Score"]
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Notebook 3: Attention (40001)",
                 "Notebook 4: Queries, keys and values (40002)", "Quiz 1 (40003)", *TOTALS]
COLUMN = 6


def canvas_export(points="20.00", extra_header=None):
    header = [*CANVAS_HEADER, *([extra_header] if extra_header else [])]
    pad = [""] * (len(header) - len(CANVAS_HEADER))
    students = [("Müller, José", "1001"), ("Smith, Anna", "1002"), ("Smith, Anna", "1003"), ("Lee, Yu", "1004"),
                ('="=cmd|\' /C calc\'!A0"', "1006"), ("Student, Test", "1099")]
    return [header,
            ["", "", "", "", "", "", "Manual Posting", "", *[""] * len(TOTALS), *pad],
            ["    Points Possible", "", "", "", "", "10.00", points, "5.00", *["(read only)"] * len(TOTALS), *pad],
            *[[name, uid, f"S{uid}", f"login{uid}", "Section A", "9.00", "5.00" if uid == "1002" else "", "4.00",
               *["81.82"] * len(TOTALS), *pad] for name, uid in students]]


CANVAS_ROWS = [graded("mullerjose_1001", "1001", 7.5), graded("mullerjose_1001_2", "1001", 1.0, status="superseded"),
               graded("smithanna_1002", "1002", 10.0), graded("smithanna_1003", "1003", 0.0),
               graded("kimmin_1005", "1005", 6.0), graded("latecomer", "", 9.0, platform="folder")]


@pytest.mark.parametrize("style", [{"bom": True}, {"delimiter": ";", "end": "\r\n", "decimal": ","}],
                         ids=["comma-bom", "semicolon-crlf"])
def test_canvas_gets_its_own_export_back_with_only_the_assignment_column_filled(tmp_path, style):
    decimal = style.pop("decimal", ".")
    table = [[c.replace(".", decimal) if c[:1].isdigit() else c for c in row] for row in canvas_export()]
    data = write_csv(table, **style)
    (tmp_path / "export.csv").write_bytes(data)
    done = export.export("canvas", tmp_path / "export.csv", CANVAS_ROWS, A, tmp_path / "out")
    written = (tmp_path / "out" / "canvas_import.csv").read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") == style.get("bom", False)
    after = read_csv(written, style.get("delimiter", ","))
    only_changed(table, after, {(3, COLUMN): "15", (4, COLUMN): "20", (5, COLUMN): "0"})  # 7.5/10 of 20 points
    assert [float(after[i][COLUMN].replace(",", ".")) for i in (3, 4, 5)] == [15.0, 20.0, 0.0]
    changed = {3, 4, 5}
    lines_before, lines_after = data.splitlines(keepends=True), written.splitlines(keepends=True)
    assert [b for i, b in enumerate(lines_before) if i not in changed] == \
        [a for i, a in enumerate(lines_after) if i not in changed]  # every other line byte for byte
    assert done["column"] == "Notebook 4: Queries, keys and values (40002)" and done["filled"] == 3
    assert "scaled" in done["scaled"] and "20" in done["scaled"]
    assert [r["student"] for r in done["without_match"]] == ["kimmin_1005", "latecomer"]
    assert done["without_submission"] == ["Lee, Yu (ID 1004)", '="=cmd|\' /C calc\'!A0" (ID 1006)',
                                          "Student, Test (ID 1099)"]
    unmatched = (tmp_path / "out" / "canvas_unmatched.txt").read_text(encoding="utf-8")
    assert "Lee, Yu (ID 1004)" in unmatched and "kimmin_1005" in unmatched and "latecomer" in unmatched


def test_canvas_column_is_chosen_or_refused_by_name(tmp_path):
    resubmit = "Notebook 4 resubmission: queries, keys and values (40009)"
    (tmp_path / "export.csv").write_bytes(write_csv(canvas_export(extra_header=resubmit)))
    with pytest.raises(ValueError, match=r"^--column: expected one assignment column .* got 2") as refused:
        export.export("canvas", tmp_path / "export.csv", CANVAS_ROWS, A, tmp_path / "out")
    assert resubmit in str(refused.value) and CANVAS_HEADER[COLUMN] in str(refused.value)
    assert not (tmp_path / "out" / "canvas_import.csv").exists()
    for column in ("40009", resubmit):
        done = export.export("canvas", tmp_path / "export.csv", CANVAS_ROWS, A, tmp_path / "out", column=column)
        assert done["column"] == resubmit
    with pytest.raises(ValueError, match=r"^--column: expected one of the export's assignment columns"):
        export.export("canvas", tmp_path / "export.csv", CANVAS_ROWS, A, tmp_path / "out", column="Quiz 9")
    with pytest.raises(ValueError, match=r"^--column: .* got 0 \(none\)"):
        export.export("canvas", tmp_path / "export.csv", CANVAS_ROWS, "07_layer_norm", tmp_path / "out")


# Moodle's offline grading worksheet, as mod/assign/gradingtable.php writes it when downloading (Identifier
# "Participant <id>", Full name, Email address, Status, Grade, Maximum grade, Grade can be changed, Last modified
# (submission), the online text, Last modified (grade), Feedback comments) and
# mod/assign/feedback/offline/importgradeslib.php reads it back (Identifier, Grade, Last modified (grade) and the
# feedback columns by name; the participant id after "Participant "):
# https://github.com/moodle/moodle/blob/main/mod/assign/feedback/offline/importgradeslib.php
MOODLE_HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum grade",
                 "Grade can be changed", "Last modified (submission)", "Online text", "Last modified (grade)",
                 "Feedback comments"]


def moodle_sheet():
    people = [("17", "José Müller", "55.00"), ("18", "José Müller", ""), ("20", "Ana Lima", ""),
              ("21", "Zoë, O'Brien", "")]
    return [MOODLE_HEADER, *[[f"Participant {pid}", name, f"p{pid}@example.org", "Submitted for grading", grade,
                              "100.00", "Yes", "Monday, 3 June 2024, 10:00 AM", "", "-", ""]
                             for pid, name, grade in people]]


@pytest.mark.parametrize("bom", [True, False])
def test_moodle_gets_its_worksheet_back_with_grade_and_feedback_filled(tmp_path, bom):
    table = moodle_sheet()
    (tmp_path / "sheet.csv").write_bytes(write_csv(table, bom=bom))
    rows = [graded("Jose_Muller_17", "17", 7.0, "moodle", summary="7/10: <b>ex2</b> failed, see the page"),
            graded("Ana_Lima_20", "20", 10.0, "moodle", summary="10/10"),
            graded("Bo_Li_99", "99", 5.0, "moodle")]
    when = datetime(2024, 6, 3, 9, 5)
    done = export.export("moodle", tmp_path / "sheet.csv", rows, A, tmp_path / "out", when=when)
    written = (tmp_path / "out" / "moodle_import.csv").read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") == bom
    after = read_csv(written)
    grade, feedback = MOODLE_HEADER.index("Grade"), MOODLE_HEADER.index("Feedback comments")
    modified = MOODLE_HEADER.index("Last modified (grade)")
    only_changed(table, after, {(1, grade): "70", (1, feedback): "7/10: &lt;b&gt;ex2&lt;/b&gt; failed, see the page",
                                (3, grade): "100", (3, feedback): "10/10",
                                (1, modified): "Monday, 3 June 2024, 9:05 AM",
                                (3, modified): "Monday, 3 June 2024, 9:05 AM"})
    assert float(after[1][grade]) == 70.0 and done["filled"] == 2 and done["feedback"]
    assert "100" in done["scaled"]
    assert done["without_submission"] == ["José Müller (Participant 18)", "Zoë, O'Brien (Participant 21)"]
    assert [r["student"] for r in done["without_match"]] == ["Bo_Li_99"]
    assert "Bo_Li_99" in (tmp_path / "out" / "moodle_unmatched.txt").read_text(encoding="utf-8")


def moodle_skips(cell: str, stored_grade_time: datetime) -> bool:
    """Moodle's importer on one row (mod/assign/feedback/offline/importgradeslib.php and locallib.php): the cell read
    with strtotime (the worksheet's own date format; "-" or anything else it cannot read is false, time 0), and the
    row skipped when the grade Moodle holds was modified more than 60 s after it ("ignore modified" unticked)."""
    try:
        modified = datetime.strptime(cell, "%A, %d %B %Y, %I:%M %p").timestamp()
    except ValueError:
        modified = 0.0
    return stored_grade_time.timestamp() > modified + 60


def test_a_regrade_reimported_into_moodle_is_not_skipped(tmp_path):
    """A grade Moodle already holds (an earlier import, or the feedback zip uploaded first) made the importer skip
    every row whose "Last modified (grade)" was Moodle's "-"; the grading time is written instead."""
    (tmp_path / "sheet.csv").write_bytes(write_csv(moodle_sheet()))
    graded_at, stored_at = datetime(2024, 6, 10, 14, 30), datetime(2024, 6, 10, 14, 0)
    export.export("moodle", tmp_path / "sheet.csv", [graded("Ana_Lima_20", "20", 9.0, "moodle")], A, tmp_path / "out",
                  when=graded_at)
    after = read_csv((tmp_path / "out" / "moodle_import.csv").read_bytes())
    modified = MOODLE_HEADER.index("Last modified (grade)")
    assert not moodle_skips(after[3][modified], stored_at)
    assert moodle_skips(moodle_sheet()[3][modified], stored_at)  # the sheet as Moodle wrote it: "-"
    assert moodle_skips(after[3][modified], datetime(2024, 6, 10, 14, 32))  # a grade given in Moodle after the run
    assert after[2][modified] == "-"  # a row the run did not grade keeps Moodle's own value


def test_a_worksheet_without_moodles_columns_is_refused_by_name(tmp_path):
    (tmp_path / "sheet.csv").write_bytes(write_csv([["Kennung", "Bewertung"], ["Teilnehmer/in 17", ""]]))
    with pytest.raises(ValueError, match=r"^platform_file: expected Moodle's grading worksheet with a column"):
        export.export("moodle", tmp_path / "sheet.csv", [], A, tmp_path / "out")
    with pytest.raises(ValueError, match=r"^kind: expected 'canvas' or 'moodle', got 'blackboard'"):
        export.export("blackboard", tmp_path / "sheet.csv", [], A, tmp_path / "out")


def _pages(out, students):
    (out / "feedback" / "_static" / "mathjax").mkdir(parents=True)
    (out / "feedback" / "_static" / "mathjax" / "tex.js").write_text("// mathjax", encoding="utf-8")
    os.symlink("/etc/passwd", out / "feedback" / "_static" / "passwd")
    for s in students:
        (out / "feedback" / f"{s}.html").write_text(f"<p>{s}</p>", encoding="utf-8")


def canvas_reupload_owner(entry: str) -> tuple[str, str] | None:
    """(user id, attachment id) Canvas's "Re-Upload Submissions" reads from a zip entry, as canvas-lms does:
    ``ZipExtractor`` keeps the base name only, and ``Assignment#infer_comment_context_from_filename`` takes the
    first two parts between ``_`` made only of digits, no attachment when the last part starts with ``link`` or the
    name with ``._``."""
    name = entry.rsplit("/", 1)[-1]
    parts = name.split("_")
    digits = [p for p in parts if re.fullmatch(r"\d+", p)][:2]
    if len(digits) < 2 or re.match(r"link", parts[-1]) or name.startswith("._"):
        return None
    return digits[0], digits[1]


def test_canvas_takes_every_page_back_in_one_upload(tmp_path):
    """One zip for the class; every entry names the user id and the attachment id of the file that was graded, as
    Canvas's re-upload reads them back (the per-student zips carried no ids at all)."""
    _pages(tmp_path, ["doejohn_1001", "doejohn_1001_2", "mullerzoe_1002", "student_1006", "anon_x7", "ana_17"])
    rows = [graded("doejohn_1001_2", "1001", 0, status="superseded"),
            graded("doejohn_1001", "1001", 7),
            graded("mullerzoe_1002", "1002", 9), graded("student_1006", "1006", 8),
            graded("anon_x7", "anon_x7", 8), graded("ana_17", "17", 8, "moodle"), graded("nopage_1007", "1007", 5)]
    files = {"doejohn_1001_2": f"doejohn_1001_5001_{A}.ipynb", "doejohn_1001": f"sub/doejohn_1001_5101_{A}-1.ipynb",
             "mullerzoe_1002": f"müllerzoë_LATE_1002_5002_{A}.ipynb", "student_1006": f"2024_1006_5006_{A}.ipynb",
             "anon_x7": f"anon_x7_5007_{A}.ipynb", "nopage_1007": f"nopage_1007_5008_{A}.ipynb"}
    for r in rows:
        r["file"] = files.get(r["student"], r["file"])
    target = handback.feedback_zip("canvas", tmp_path, rows)
    assert target == tmp_path / "canvas_feedback.zip"
    with zipfile.ZipFile(target) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    owners = {canvas_reupload_owner(n): body for n, body in entries.items()}
    assert owners == {("1001", "5101"): b"<p>doejohn_1001</p>", ("1002", "5002"): b"<p>mullerzoe_1002</p>",
                      ("1006", "5006"): b"<p>student_1006</p>"}, sorted(entries)
    assert len({n.rsplit("/", 1)[-1] for n in entries}) == len(entries), "Canvas keeps base names only"
    assert not any("_static" in n for n in entries), "Canvas attaches no file without the ids: it would be ignored"
    assert not (tmp_path / "return").exists()


def test_moodles_feedback_zip_names_each_folder_by_participant_id(tmp_path):
    _pages(tmp_path, ["Jose_Muller_17", "Jose_Muller_17_2", "Ana_Lima_20", "smith_3"])
    rows = [graded("Jose_Muller_17_2", "17", 0, "moodle", status="superseded", name="José Müller"),
            graded("Jose_Muller_17", "17", 7, "moodle", name="José Müller"),
            graded("Ana_Lima_20", "20", 7, "moodle", status="not read", name="Ana_Lima"),
            graded("smith_3", "3", 7, "canvas")]
    target = handback.moodle_feedback_files(tmp_path, rows)
    with zipfile.ZipFile(target) as z:
        names = sorted(z.namelist())
    assert names == ["Ana Lima_20_assignfeedback_file/Ana_Lima_20.html",
                     "Jose Muller_17_assignfeedback_file/Jose_Muller_17.html"]
    assert [moodle_feedback_owner(n) for n in names] == [("20", "Ana_Lima_20.html"), ("17", "Jose_Muller_17.html")]


def moodle_feedback_owner(entry: str) -> tuple[str, str] | None:
    """(participant id, feedback file) Moodle's "Upload multiple feedback files in a zip" reads from a zip entry, as
    ``importziplib.php``'s ``is_valid_filename_for_import`` does: the first path part that splits at ``_`` (5 parts
    at most) into a name, a participant id and ``assignfeedback``, ``file``; the rest of the path is the file."""
    parts = entry.split("/")
    while parts:
        info = parts.pop(0).split("_", 4)
        if len(info) >= 4 and info[1].isdigit() and info[2:4] == ["assignfeedback", "file"]:
            return info[1], "/".join([*info[4:], *parts])
    return None
