"""The term at a glance: every graded assignment joined per student, in ``grading/course.csv``, and a page with
a picture of the class over the term, ``grading/course.html`` (drawn by ``grader/reporting/course_page.py``).

``python -m grader.course [--grading DIR] [--out DIR]`` (or ``make gradebook``). An assignment counts once its
grading run has left ``grading/<id>/_nbgrader/gradebook.db``; its scores are read from that gradebook, so points
entered by hand show. Names, platform ids, lateness and flags come from its ``grades.csv``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import sqlite3
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from grader.collecting import roster
from grader.collecting.roster import Enrolled
from grader.reporting.course_page import cell, page
from grader.safe_text import clean
from layout.paths import ROOT, assignments

# The columns after the points per assignment: each student's counts over the term.
COUNTS = ("total", "max_total", "percent", "submitted", "late", "flagged")


class NothingGraded(LookupError):
    """No ``<grading>/<id>/_nbgrader/gradebook.db`` holds a graded assignment."""


@dataclass
class Entry:
    """One student's graded submission of one assignment."""

    student: str
    score: float
    name: str = ""
    platform: str = ""
    platform_id: str = ""
    late: bool = False
    flagged: bool = False


@dataclass
class Graded:
    """One assignment as its grading run left it."""

    assignment: str
    max_score: float
    entries: list[Entry] = field(default_factory=list)
    roster: list[Enrolled] = field(default_factory=list)  # the platform's students, when the run had --export


def graded(grading: Path) -> list[Graded]:
    """The course's assignments that ``grading`` holds a gradebook of, in course order."""
    found = []
    for assignment in assignments():
        db = grading / assignment / "_nbgrader" / "gradebook.db"
        if db.is_file() and _is_gradebook(db) and (book := _gradebook(db, assignment)) is not None:
            found.append(Graded(assignment, book[0], _entries(grading / assignment, book[1]),
                                roster.read(grading / assignment)))
    return found


def _is_gradebook(db: Path) -> bool:
    """Whether ``db`` is an sqlite file with nbgrader's tables, read without writing (nbgrader would make an empty
    or foreign file into a new gradebook); if not, a note."""
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as con:
            if con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'assignment'").fetchone():
                return True
    except sqlite3.DatabaseError:
        pass
    print(f"skipped {db}: not a gradebook of nbgrader's", file=sys.stderr)
    return False


def _gradebook(db: Path, assignment: str) -> tuple[float, dict[str, float]] | None:
    """(max score, {student: score}) from nbgrader's gradebook, whose ``score`` of a cell is the manual score when
    one was entered; None (and a note) when it holds no such assignment or cannot be read."""
    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning, SQLAlchemyError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's own session noise
            with Gradebook(f"sqlite:///{db}") as gb:
                found = gb.find_assignment(assignment)
                return float(found.max_score), {s.student.id: float(s.score) for s in found.submissions}
    except MissingEntry:
        print(f"skipped {db}: it holds no assignment {assignment} (its grading run did not start)", file=sys.stderr)
    except SQLAlchemyError as exc:
        print(f"skipped {db}: nbgrader cannot read it now ({type(exc).__name__}); try again", file=sys.stderr)
    return None


def _entries(folder: Path, scores: dict[str, float]) -> list[Entry]:
    """One entry per student with a graded submission: every student of the gradebook, with the gradebook's score,
    and a ``graded`` row of grades.csv that never reached it (a file that could not be read), with the CSV's."""
    rows = {}
    for row in _csv_rows(folder / "grades.csv"):
        if row.get("status", "graded") == "graded":
            rows[row.get("student", "")] = row
    by_clean = {clean(s): s for s in scores}  # grades.csv holds the ids cleaned
    entries = []
    for student in [*scores, *(s for s in rows if s and s not in by_clean)]:
        row = rows.get(clean(student), {})
        score = scores[student] if student in scores else _number(row.get("score"))
        entries.append(Entry(student, score, row.get("name", ""), row.get("platform", ""),
                             (row.get("platform_id") or "").strip(), _true(row.get("late")),
                             bool((row.get("flags") or "").strip())))
    return entries


def _csv_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: v or "" for k, v in row.items() if k is not None} for row in csv.DictReader(f)]


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _true(text) -> bool:
    return str(text).strip().lower() in ("true", "1", "yes")


def join(grading: Path) -> list[dict]:
    """One row per student over the term: the columns of course.csv, text cleaned for a spreadsheet, numbers as
    numbers, a score None where the student has no graded submission (students are matched as ``_matched`` says).
    Raises NothingGraded when ``grading`` holds no graded assignment."""
    return _join(_term(grading))


def _term(grading: Path) -> list[Graded]:
    if not (term := graded(grading)):
        raise NothingGraded(f"no graded assignment in {grading}: expected {grading}/<assignment>/_nbgrader/"
                            f"gradebook.db for an assignment such as {assignments()[0]} (run make grade first)")
    return term


def _join(term: list[Graded]) -> list[dict]:
    max_total = sum(g.max_score for g in term)
    people: dict[tuple, dict] = {}
    names = _moodle_names(term)
    for g, entry in _matched(term, names):
        person = people.setdefault(entry[0], {"scores": {}, "late": 0, "flagged": 0})
        e = entry[1]
        if g.assignment in person["scores"]:
            print(f"{g.assignment}: two graded submissions of {e.student!r}; kept the first", file=sys.stderr)
            continue
        person["scores"][g.assignment] = e.score
        person["late"] += e.late
        person["flagged"] += e.flagged
        person["student"], person["name"] = e.student, e.name or person.get("name", "")
        person["platform_id"] = e.platform_id or person.get("platform_id", "")
    for key, who in _enrolled(term, names):  # on the platform's roster, without a graded submission so far
        people.setdefault(key, {"scores": {}, "late": 0, "flagged": 0, "student": who.student, "name": who.name,
                                "platform_id": who.platform_id})
    rows = [_row(p, term, max_total) for p in people.values()]
    return sorted(rows, key=lambda r: (r["student"].casefold(), r["student"], r["name"]))


def _matched(term: list[Graded], names: dict[str, bool]) -> list[tuple[Graded, tuple[tuple, Entry]]]:
    """(assignment, (person key, entry)) for every entry, in course order. A platform id that names the student for
    the whole term (Canvas's user id, nbgrader's student) is the key; an entry without one joins the one person
    seen with its student id and such a platform id, if there is one; else a Moodle entry joins by the full name
    Moodle wrote, if no two Moodle entries of one assignment share it; else the student id is the key."""
    by_id: dict[str, set[tuple]] = {}
    for g in term:
        for e in g.entries:
            if _lasting(e):
                by_id.setdefault(e.student, set()).add(("platform", e.platform, e.platform_id))
    out = []
    for g in term:
        for e in g.entries:
            seen = by_id.get(e.student, set())
            key = (("platform", e.platform, e.platform_id) if _lasting(e) else next(iter(seen)) if len(seen) == 1
                   else ("moodle", e.name) if e.platform == "moodle" and names.get(e.name) else ("student", e.student))
            out.append((g, (key, e)))
    return out


def _enrolled(term: list[Graded], names: dict[str, bool]) -> list[tuple[tuple, Enrolled]]:
    """(person key, student) for everyone on an assignment's roster but its graded submissions' students, keyed as
    ``_matched`` keys an entry: Canvas's user id; Moodle's full name when it may join (else its participant id in
    that assignment, a row of its own)."""
    out = []
    for g in term:
        graded_ids = {(e.platform, e.platform_id) for e in g.entries}
        for who in g.roster:
            if (who.platform, who.platform_id) in graded_ids:
                continue
            key = (("platform", who.platform, who.platform_id) if who.platform != "moodle" else
                   ("moodle", who.name) if names.get(who.name) else ("roster", g.assignment, who.platform_id))
            out.append((key, who))
    return out


def _lasting(e: Entry) -> bool:
    """Whether ``e``'s platform id names its student in every assignment: not Moodle's participant id (one per
    assignment and student, its ``assign_user_mapping``), nor Canvas's anonymous ``anon_...`` (one per submission)."""
    return bool(e.platform_id) and e.platform != "moodle" and not e.platform_id.startswith("anon_")


def _moodle_names(term: list[Graded]) -> dict[str, bool]:
    """Moodle's full names -> whether they may join a student's entries (no two entries of one assignment have it)."""
    ok: dict[str, bool] = {}
    for g in term:
        counts: dict[str, int] = {}
        for e in g.entries:
            if e.platform == "moodle" and e.name and not _lasting(e):
                counts[e.name] = counts.get(e.name, 0) + 1
        for name, n in _roster_names(g).items():  # two enrolled of one name, one of them graded, stay apart
            counts[name] = max(n, counts.get(name, 0))
        for name, n in counts.items():
            if n > 1 and ok.get(name, True):
                print(f"{g.assignment}: {n} Moodle students are named {clean(name)!r}: their rows are not joined by "
                      "name (join them by hand)", file=sys.stderr)
            ok[name] = ok.get(name, True) and n == 1
    return ok


def _roster_names(g: Graded) -> dict[str, int]:
    counts: dict[str, int] = {}
    for who in g.roster:
        if who.platform == "moodle" and who.name:
            counts[who.name] = counts.get(who.name, 0) + 1
    return counts


def _row(person: dict, term: list[Graded], max_total: float) -> dict:
    total = sum(person["scores"].values())
    row = {"student": clean(person["student"]), "name": clean(person["name"]),
           "platform_id": clean(person["platform_id"])}
    row.update({g.assignment: person["scores"].get(g.assignment) for g in term})
    row.update(total=total, max_total=max_total, percent=round(100 * total / max_total, 1) if max_total else None,
               submitted=len(person["scores"]), late=person["late"], flagged=person["flagged"])
    return row


def write(grading: Path, out: Path) -> tuple[Path, Path]:
    """Write ``out/course.csv`` and ``out/course.html`` from the grading runs in ``grading``; their paths."""
    term = _term(grading)
    rows = _join(term)
    out.mkdir(parents=True, exist_ok=True)
    columns = ["student", "name", "platform_id", *(g.assignment for g in term), *COUNTS]
    with open(out / "course.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows({k: cell(v) for k, v in row.items()} for row in rows)
    (out / "course.html").write_text(page(rows, term, columns), encoding="utf-8")
    return out / "course.csv", out / "course.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.course",
                                     description="Join every graded assignment into course.csv and course.html.")
    parser.add_argument("--grading", type=Path, default=ROOT / "grading", help="the grading runs' folder "
                        "(default: grading/), holding <assignment>/_nbgrader/gradebook.db")
    parser.add_argument("--out", type=Path, help="where course.csv and course.html go (default: the grading folder)")
    args = parser.parse_args(argv)
    try:
        csv_path, html_path = write(args.grading, args.out or args.grading)
    except NothingGraded as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"wrote {csv_path} and {html_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
