"""``python -m grader.manual ASSIGNMENT STUDENT CELL POINTS`` (or ``clear``): points an instructor gives by hand.

The points are nbgrader's manual score of that cell in the run's gradebook (``grading/<id>/_nbgrader/``), so they
stay through every regrade (``--only``, ``--resume`` or a whole new run) until cleared. The student's row of
``grades.csv`` and feedback page are updated at once from the saved result, and so are the platform's import file
and the feedback zip when the run wrote them (``--export``). ``make manual`` runs it in the project's
environment.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from grader.recording import gradebook, results
from grader.recording.bookkeeping import write_page
from grader.reporting import export
from grader.safe_text import clean
from layout.paths import ROOT


def give(out: Path, assignment: str, student: str, cell: str, points: float | None) -> tuple[gradebook.Recorded, str]:
    """Set (or, with None, clear) ``student``'s manual points for ``cell``; ``grades.csv``, the page and the
    platform's file follow. Returns the gradebook's record and what was done with the platform's file."""
    import nbformat

    db = out / "_nbgrader" / "gradebook.db"
    if not db.is_file():
        raise ValueError(f"ASSIGNMENT: expected a graded assignment in {out}, found no gradebook")
    db_url = f"sqlite:///{db}"
    held = gradebook.set_manual(db_url, assignment, student, cell, points)
    _update_row(out / "grades.csv", student, held)
    saved, run = results.load(out / "results", student), results.previous_run(out) or {}
    if saved is not None:  # the page as the run made it (unsandboxed, if the run was), with the new points
        write_page(out, assignment, student, nbformat.reads(saved["notebook"], as_version=4), saved["verdicts"],
                   saved["problems"], saved.get("flags", []), held, sandboxed=run.get("sandboxed", True))
    return held, export.again(out, assignment, run.get("export"), held.max_points)


def _update_row(path: Path, student: str, held: gradebook.Recorded) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, table = reader.fieldnames, list(reader)
    for row in table:
        if row["student"] == student and row["status"] == "graded":
            row.update({c: p for c, p in held.points.items() if c in row})  # written as the grading run writes them
            row["score"], row["manual"] = held.score, " ".join(held.manual)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.manual", description=__doc__.split("\n\n")[0])
    p.add_argument("assignment")
    p.add_argument("student", help="the student's id, as in grades.csv")
    p.add_argument("cell", help="the graded cell, a column of grades.csv such as ex2_attention")
    p.add_argument("points", help="the points, or 'clear' to go back to the autograded points")
    p.add_argument("--out", type=Path, default=ROOT / "grading", help="where grading/<assignment>/ is")
    args = p.parse_args(argv)
    try:
        points = None if args.points == "clear" else float(args.points)
    except ValueError:
        p.error(f"points: expected a number or 'clear', got {args.points!r}")
    try:
        held, exported = give(args.out.resolve() / args.assignment, args.assignment, args.student, args.cell, points)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(clean(f"{args.student}: {args.cell} now {held.points[args.cell]:g}; score {held.score:g}; "
                       f"entered by hand: {', '.join(held.manual) or 'none'}; {exported}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
