"""``python -m grader ASSIGNMENT SUBMISSIONS [--out DIR] [--timeout S] [--jobs N] [--forbidden flag|zero]``
(or ``make grade``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.grade import ROOT, grade


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader",
                                     description="Grade a folder of submissions, each in its own sandbox.")
    parser.add_argument("assignment", help="assignment id, e.g. 04_queries_keys_values")
    parser.add_argument("submissions", type=Path,
                        help="folder of <student>.ipynb files, or nbgrader's submitted/ folder")
    parser.add_argument("--out", type=Path, default=ROOT / "grading", help="where grading/<assignment>/ goes")
    parser.add_argument("--timeout", type=int, help="seconds a cell may run (default: nbgrader_config.py)")
    parser.add_argument("--jobs", type=int, help="submissions graded at once (default: one per core)")
    parser.add_argument("--forbidden", choices=("flag", "zero"), default="flag",
                        help="code that uses what its exercise forbids: flag it (default) or score that exercise 0")
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs: expected a whole number >= 1, got {args.jobs}")
    if args.timeout is not None and args.timeout < 1:
        parser.error(f"--timeout: expected a whole number of seconds >= 1, got {args.timeout}")
    return grade(args.assignment, args.submissions.resolve(), args.out.resolve(), args.timeout, args.jobs,
                 args.forbidden)


if __name__ == "__main__":
    sys.exit(main())
