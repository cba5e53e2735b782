"""Regenerate every student notebook in exercises/ from its source in solutions/ (authors only).

    python tools/generate_exercises.py [--release-dir DIR] [--db FILE]

Runs ``nbgrader generate_assignment <id> --force`` for each folder in solutions/.
The output is byte-identical from run to run, so ``git diff --exit-code exercises/``
proves that the committed exercises are in sync with their sources.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generate(release_dir: Path | None = None, db: Path | None = None) -> list[str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    assignments = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    for a in assignments:
        cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", a, "--force"]
        if release_dir is not None:
            cmd.append(f"--CourseDirectory.release_directory={release_dir}")
        if db is not None:
            cmd.append(f"--CourseDirectory.db_url=sqlite:///{db}")
        (ROOT / "grading").mkdir(exist_ok=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        print(f"generated exercises for {a}")
    return assignments


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release-dir", type=Path)
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    generate(args.release_dir, args.db)
