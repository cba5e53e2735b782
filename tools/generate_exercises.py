"""Regenerate student notebooks in exercises/ from their sources in solutions/ (authors only).

    python -m tools.generate_exercises [ASSIGNMENT ...] [--release-dir DIR]

Runs ``nbgrader generate_assignment <id> --force`` for the named assignments
(default: every folder in solutions/), with a throwaway gradebook. The output
is byte-identical from run to run, so ``git diff --exit-code exercises/``
proves that the committed exercises are in sync with their sources.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generate(assignments: list[str] | None = None, release_dir: Path | None = None) -> list[str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    assignments = assignments or sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory() as tmp:
        for a in assignments:
            cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", a, "--force",
                   f"--CourseDirectory.db_url=sqlite:///{Path(tmp) / 'gradebook.db'}"]
            if release_dir is not None:
                cmd.append(f"--CourseDirectory.release_directory={release_dir}")
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"nbgrader generate_assignment {a} failed:\n{proc.stdout}\n{proc.stderr}")
            print(f"generated exercises for {a}")
    return assignments


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*")
    parser.add_argument("--release-dir", type=Path)
    args = parser.parse_args()
    generate(args.assignments, args.release_dir)
