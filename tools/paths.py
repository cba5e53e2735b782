"""The repository's folders, computed once: the tests, tools and benchmarks import them from here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
PACKAGE = ROOT / "transformer"  # the package the chapters teach
NOTEBOOKS = ROOT / "notebooks"  # the chapters
SOLUTIONS = ROOT / "solutions"  # the exercises' sources (nbgrader's source folder)
EXERCISES = ROOT / "exercises"  # the student notebooks generated from them


def assignments() -> list[str]:
    """The exercise sets, by folder name (``04_queries_keys_values``, ...), sorted."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir())


def notebook_path(kind: str, assignment: str) -> Path:
    """``<kind>/<assignment>/<assignment>.ipynb`` for ``kind`` in ``solutions`` and ``exercises``."""
    return ROOT / kind / assignment / f"{assignment}.ipynb"
