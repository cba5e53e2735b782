"""``python -m grader ASSIGNMENT SUBMISSIONS [options]`` (or ``make grade``): see ``--help``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.running import cluster
from layout.paths import ROOT


def _positive(text: str) -> int:
    """A whole number >= 1 (argparse names the option before the message)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text}")
    return value


def _address(text: str) -> str:
    """A dask scheduler's address (argparse names ``--cluster`` before the message)."""
    try:
        return cluster.check(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--cluster: ")) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader",
                                description="Grade a folder (or a zip) of submissions, each in its own sandbox.")
    p.add_argument("assignment", help="assignment id, e.g. 04_queries_keys_values")
    p.add_argument("submissions", type=Path,
                   help="a folder or a .zip: <student>.ipynb files, nbgrader's submitted/ folder, or the download "
                        "of Canvas's or Moodle's submissions")
    p.add_argument("--out", type=Path, default=ROOT / "grading", help="where grading/<assignment>/ goes")
    p.add_argument("--timeout", type=_positive,
                   help="seconds a cell may run (default: nbgrader_config.py)")
    p.add_argument("--jobs", type=_positive, help="submissions graded at once (default: one per core)")
    p.add_argument("--cluster", type=_address, metavar="ADDRESS",
                   help="grade on the workers of this dask scheduler (tcp://HOST:PORT), each with bubblewrap and this "
                        "repository; the results, gradebook, pages and exports are written here (default: this "
                        "machine, --jobs at a time)")
    p.add_argument("--budget", type=_positive, help="seconds one submission may take in all: cells, "
                   "replays and hidden tests (default: ten cell timeouts)")
    p.add_argument("--seed", type=int, help="the hidden inputs' seed of an earlier run (grading/<assignment>/"
                   "run.json), to ask the same questions again")
    p.add_argument("--secret-file", type=Path, help="a file outside the repository holding the course's secret, "
                   "from which the seed is derived (or set $GRADER_SECRET; default: a fresh seed)")
    p.add_argument("--forbidden", choices=("flag", "zero"), default="flag",
                   help="code that uses what its exercise forbids: flag it (default) or score that exercise 0")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--only", nargs="+", metavar="STUDENT", default=(),
                       help="grade these students again (ids as in grades.csv) with the last run's questions; keep "
                            "everyone else's saved result")
    again.add_argument("--resume", action="store_true",
                       help="finish a run that stopped: reuse every saved result of the same file and seed")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no lines as it goes: the summary only")
    p.add_argument("--export", nargs=2, metavar=("PLATFORM", "FILE"),
                   help="write the grades back for a learning platform: 'canvas GRADEBOOK.csv' (Canvas's gradebook "
                        "export) or 'moodle WORKSHEET.csv' (Moodle's offline grading worksheet)")
    p.add_argument("--column", help="with --export canvas: the gradebook's column of this assignment, by Canvas's "
                   "assignment id (the number in brackets in its header) or its whole header (default: the one column "
                   "whose header contains the assignment id or all its words)")
    p.add_argument("--similar", type=_share,
                   help="list pairs of submissions at least this alike in similarity.html (a share from 0 to 1)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    export = None
    if args.export:
        kind, path = args.export
        if kind not in ("canvas", "moodle"):
            p.error(f"--export: expected canvas or moodle, got {kind!r}")
        export = (kind, Path(path).resolve())
    elif args.column:
        p.error("--column: expected with --export canvas, got no --export")
    if args.cluster and args.jobs:
        p.error("--jobs: expected without --cluster (its workers' threads say how many at once), got both")
    from grader.grade import Options, grade  # torch and nbgrader: not for --help or a refused argument

    opts = Options(timeout=args.timeout, jobs=args.jobs, budget=args.budget, seed=args.seed,
                   secret_file=args.secret_file, forbidden=args.forbidden, only=tuple(args.only), resume=args.resume,
                   quiet=args.quiet, export=export, column=args.column, similar=args.similar, cluster=args.cluster)
    return grade(args.assignment, args.submissions.resolve(), args.out.resolve(), opts)


if __name__ == "__main__":
    sys.exit(main())
