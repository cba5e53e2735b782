"""The repository's folders, computed once: the grader, tools, tests and benchmarks import them from here."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
PACKAGE = ROOT / "transformer"  # the package the chapters teach
CHECKS = ROOT / "checks"  # the exercises' visible checks, which a graded kernel imports
NOTEBOOKS = ROOT / "notebooks"  # the chapters
SOLUTIONS = ROOT / "solutions"  # the exercises' sources (nbgrader's source folder)
EXERCISES = ROOT / "exercises"  # the student notebooks generated from them


def assignments() -> list[str]:
    """The exercise sets, by folder name (``04_queries_keys_values``, ...), sorted."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir())


def notebook_path(kind: str, assignment: str) -> Path:
    """``<kind>/<assignment>/<assignment>.ipynb`` for ``kind`` in ``solutions`` and ``exercises``."""
    return ROOT / kind / assignment / f"{assignment}.ipynb"


def sandbox_mounts() -> set[Path]:
    """The folders a grading sandbox binds read-only besides ``/usr``, resolved: the virtual environment, the
    Python it was made from, that Python's standard library, the package and the exercises' checks."""
    return {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), PACKAGE, CHECKS,
            Path(sysconfig.get_paths()["stdlib"]).resolve()}


def kernel_read_roots(*more: Path) -> tuple[str, ...]:
    """The folders a graded kernel may read from without being reported, sorted: the virtual environment (as
    named and resolved), the Python it was made from, the package, the exercises' checks, and ``more``."""
    return tuple(sorted({sys.prefix, sys.base_prefix, str(Path(sys.prefix).resolve()), str(PACKAGE), str(CHECKS),
                         *map(str, more)}))
