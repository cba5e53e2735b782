"""Grade a folder of submissions for one assignment, through nbgrader.

    python tools/grade.py ASSIGNMENT SUBMISSIONS_FOLDER     (or: make grade ASSIGNMENT=... SUBMISSIONS=...)

Every ``<student>.ipynb`` (or ``<student>_<assignment>.ipynb``) in the folder is
autograded in a fresh kernel, gets a feedback page, and gets one row in the
gradebook. Writes, under ``grading/<assignment>/``:

- ``grades.csv``: ``student, score, max_score``, the points of every graded cell, ``problems``;
- ``feedback/<student>.html``: nbgrader's feedback page (or a page that says why there is none).

A submission that cannot be graded (not a notebook, say) still gets its row,
with score 0 and the reason in ``problems``; the run always goes on. The exit
status is 0 when every submission was graded cleanly and 1 when something
needs the instructor's eye.
"""

from __future__ import annotations

import argparse
import csv
import html
import os
import re
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Submission:
    student: str
    source: Path
    problems: list[str] = field(default_factory=list)
    graded: bool = False


def student_id(path: Path, assignment: str, taken: set[str]) -> str:
    """``alice_04_x.ipynb`` -> ``alice``; anything but letters, digits, ``-``, ``_`` and ``.`` becomes ``_``."""
    stem = path.stem
    if stem.endswith("_" + assignment):
        stem = stem[: -len(assignment) - 1]
    sid = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._") or "student"
    base, n = sid, 2
    while sid in taken:
        sid, n = f"{base}_{n}", n + 1
    taken.add(sid)
    return sid


def make_api(work: Path):
    """An nbgrader API whose course lives in ``work`` (a fresh gradebook per run)."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    overrides = Config()
    cd = overrides.CourseDirectory
    cd.root = str(ROOT)
    cd.release_directory = str(work / "release")
    cd.submitted_directory = str(work / "submitted")
    cd.autograded_directory = str(work / "autograded")
    cd.feedback_directory = str(work / "feedback")
    cd.db_url = f"sqlite:///{work / 'gradebook.db'}"
    config.merge(overrides)
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config), cd.db_url


def last_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "unknown error"


def problem_page(student: str, assignment: str, problems: list[str]) -> str:
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(assignment)}: "
            f"{html.escape(student)}</title></head><body><h1>{html.escape(assignment)}: {html.escape(student)}</h1>"
            f"<p>This submission could not be graded automatically:</p><ul>{items}</ul></body></html>")


def grade(assignment: str, submissions: Path, out_root: Path = ROOT / "grading") -> int:
    import nbformat
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session noise

    source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    if not source.exists():
        known = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
        print(f"ASSIGNMENT: expected one of {known}, got {assignment!r}", file=sys.stderr)
        return 2
    if not submissions.is_dir():
        print(f"SUBMISSIONS: expected a folder of <student>.ipynb files, got {str(submissions)!r}", file=sys.stderr)
        return 2

    out = out_root / assignment
    work = out / "_nbgrader"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(out / "feedback", ignore_errors=True)
    (out / "feedback").mkdir(parents=True)
    work.mkdir(parents=True)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

    api, db_url = make_api(work)
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        print(f"nbgrader could not generate the assignment:\n{result.get('error')}", file=sys.stderr)
        return 2

    taken: set[str] = set()
    subs = [Submission(student_id(p, assignment, taken), p) for p in sorted(submissions.glob("*.ipynb"))]
    print(f"Grading {len(subs)} submission(s) of {assignment} ...")
    for sub in subs:
        try:
            nbformat.validate(nbformat.read(sub.source, as_version=4))
        except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
            sub.problems.append(f"not a valid notebook ({type(exc).__name__}: {last_line(str(exc))})")
            continue
        dest = work / "submitted" / sub.student / assignment
        dest.mkdir(parents=True)
        shutil.copyfile(sub.source, dest / f"{assignment}.ipynb")
        result = api.autograde(assignment, sub.student, force=True, create=True)
        if not result["success"]:
            sub.problems.append(f"autograding failed: {last_line(result.get('error') or result.get('log'))}")
            continue
        sub.graded = True
        fb = api.generate_feedback(assignment, sub.student, force=True)
        page = work / "feedback" / sub.student / assignment / f"{assignment}.html"
        if fb["success"] and page.exists():
            shutil.copyfile(page, out / "feedback" / f"{sub.student}.html")
        else:
            sub.problems.append(f"no feedback page: {last_line(fb.get('error') or fb.get('log'))}")

    with Gradebook(db_url) as gb:
        nb_model = gb.find_notebook(assignment, assignment)
        cells = [c.name for c in nb_model.grade_cells]
        max_points = {c.name: c.max_score for c in nb_model.grade_cells}
        rows = []
        for sub in subs:
            row = {"student": sub.student, "max_score": nb_model.max_score}
            if sub.graded:
                snb = gb.find_submission_notebook(assignment, assignment, sub.student)
                points = {g.name: g.score for g in snb.grades}
                row["score"] = snb.score
                row.update({c: points.get(c, 0.0) for c in cells})
            else:
                row["score"] = 0.0
                row.update({c: 0.0 for c in cells})
                (out / "feedback" / f"{sub.student}.html").write_text(
                    problem_page(sub.student, assignment, sub.problems), encoding="utf-8")
            row["problems"] = "; ".join(sub.problems)
            rows.append(row)

    columns = ["student", "score", "max_score", *cells, "problems"]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)

    width = max([len("student"), *(len(r["student"]) for r in rows)])
    print(f"\n{'student':<{width}}  score  problems")
    for r in rows:
        print(f"{r['student']:<{width}}  {r['score']:>2g}/{r['max_score']:g}  {r['problems']}")
    print("\npoints per graded cell: " + ", ".join(f"{c} ({max_points[c]:g})" for c in cells))
    print(f"wrote {out / 'grades.csv'} and {len(rows)} page(s) in {out / 'feedback'}")
    attention = [r for r in rows if r["problems"]]
    if attention:
        print(f"{len(attention)} submission(s) need your attention: see the 'problems' column")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment", help="assignment id, e.g. 04_queries_keys_values")
    parser.add_argument("submissions", type=Path, help="folder of <student>.ipynb files")
    parser.add_argument("--out", type=Path, default=ROOT / "grading", help="where grading/<assignment>/ goes")
    args = parser.parse_args(argv)
    return grade(args.assignment, args.submissions.resolve(), args.out.resolve())


if __name__ == "__main__":
    sys.exit(main())
