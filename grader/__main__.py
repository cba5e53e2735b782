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
    parser.add_argument("--budget", type=int, help="seconds one submission may take in all: cells, replays and "
                        "hidden tests (default: ten cell timeouts)")
    parser.add_argument("--seed", type=int, help="the hidden inputs' seed of an earlier run (grading/<assignment>/"
                        "run.json), to ask the same questions again")
    parser.add_argument("--secret-file", type=Path, help="a file outside the repository holding the course's "
                        "secret, from which the seed is derived (or set $GRADER_SECRET; default: a fresh seed)")
    parser.add_argument("--forbidden", choices=("flag", "zero"), default="flag",
                        help="code that uses what its exercise forbids: flag it (default) or score that exercise 0")
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs: expected a whole number >= 1, got {args.jobs}")
    if args.timeout is not None and args.timeout < 1:
        parser.error(f"--timeout: expected a whole number of seconds >= 1, got {args.timeout}")
    if args.budget is not None and args.budget < 1:
        parser.error(f"--budget: expected a whole number of seconds >= 1, got {args.budget}")
    return grade(args.assignment, args.submissions.resolve(), args.out.resolve(), args.timeout, args.jobs,
                 args.budget, args.seed, args.secret_file, args.forbidden)


if __name__ == "__main__":
    sys.exit(main())
