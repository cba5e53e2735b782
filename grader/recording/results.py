"""Saved results: each graded submission's result, kept in ``grading/<id>/results/`` as soon as it is ready.

A result is the grader's own record (points, verdicts in words, notes) in ``<student>.json`` and the notebook
as it ran in ``<student>.ipynb``, with the digest of the file that was graded and the seed of the questions
asked. ``--only`` and ``--resume`` grade part of a class and take everyone else's result from here; a result
is reused only for the very same file (and, with ``--resume``, the same seed).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from grader.judging.verdicts import Verdict


def save(folder: Path, student: str, record: dict, notebook_text: str) -> None:
    """``record``: JSON-able fields (``digest``, ``seed``, ``points``, ``verdicts``, ``problems``, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    verdicts = {gid: dataclasses.asdict(v) for gid, v in record.get("verdicts", {}).items()}
    (folder / f"{student}.ipynb").write_text(notebook_text, encoding="utf-8")
    # written last: a result without its notebook is never seen as complete
    (folder / f"{student}.json").write_text(json.dumps({**record, "verdicts": verdicts}, indent=1), encoding="utf-8")


def load(folder: Path, student: str) -> dict | None:
    """The saved result of ``student`` with its verdicts and notebook text, or None when there is none whole."""
    try:
        record = json.loads((folder / f"{student}.json").read_text(encoding="utf-8"))
        text = (folder / f"{student}.ipynb").read_text(encoding="utf-8")
        record["verdicts"] = {gid: Verdict(**v) for gid, v in record["verdicts"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return {**record, "notebook": text}


def reusable(folder: Path, student: str, file_digest: str, seed: int | None) -> dict | None:
    """The saved result of the same file (and ``seed``, unless None), or None."""
    saved = load(folder, student)
    if saved is None or saved.get("digest") != file_digest:
        return None
    if seed is not None and saved.get("seed") != seed:
        return None
    return saved


def write_run(out: Path, run_info: dict) -> None:
    """The run's settings in ``run.json``: written as grading starts, so that a run that stops can be resumed with
    its seed (``--resume``), and again at the end with its times."""
    (out / "run.json").write_text(json.dumps(run_info, indent=1), encoding="utf-8")


def previous_run(out: Path) -> dict | None:
    """The settings of the last run of this assignment (``run.json``), or None."""
    try:
        return json.loads((out / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
