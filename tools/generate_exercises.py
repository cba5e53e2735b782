"""Regenerate student notebooks in exercises/ from their sources in solutions/ (authors only).

    python -m tools.generate_exercises [ASSIGNMENT ...] [--release-dir DIR]

Has nbgrader generate each named assignment (default: every folder in solutions/) with a
throwaway gradebook, in this process (``layout.nbgrader_api.make_api``). The output is byte-identical
from run to run, so ``git diff --exit-code exercises/`` proves that the committed exercises are in
sync with their sources.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from layout.nbgrader_api import make_api
from layout.paths import EXERCISES
from layout.paths import assignments as all_assignments


def generate(assignments: list[str] | None = None, release_dir: Path | None = None) -> list[str]:
    assignments = assignments or all_assignments()
    with tempfile.TemporaryDirectory() as tmp:
        api, _ = make_api(Path(tmp), release=(release_dir or EXERCISES).resolve())
        for a in assignments:
            result = api.generate_assignment(a, force=True, create=True)
            if not result["success"]:
                sys.exit(f"nbgrader generate_assignment {a} failed:\n{result.get('error')}")
            print(f"generated exercises for {a}")
    return assignments


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*")
    parser.add_argument("--release-dir", type=Path)
    args = parser.parse_args()
    generate(args.assignments, args.release_dir)
