"""Feedback pages back to the students, in one zip per class that the platform's own upload takes apart.

- Canvas, "Re-Upload Submissions" (canvas-lms ``app/models/assignment.rb``, ``generate_comments_from_files`` and
  ``infer_comment_context_from_filename``): every file of the zip is taken out of its folders (``ZipExtractor``
  keeps only the base name); the base name is split at ``_`` and its first two parts made only of digits are the
  user id and the attachment id; a file goes to the student as a comment when that attachment is one of the
  student's submission for this assignment; every other file is listed as ignored.
- Moodle, "Upload multiple feedback files in a zip" (``mod/assign/feedback/file/importziplib.php``,
  ``is_valid_filename_for_import``): the first part of a file's path named
  ``<full name>_<participant id>_assignfeedback_file`` gives the participant, and the rest of the path is kept as
  that participant's own feedback file.

Neither platform shares one file among students, so the pages go without the feedback folder's ``_static/``
MathJax: on the platform a page shows its formulas as TeX, and says so (``grader/recording/feedback.py``).
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from pathlib import Path

from grader.collecting.platforms import CANVAS
from grader.collecting.student_ids import SAFE_ID, ascii_name

FEEDBACK_ZIPS = {"canvas": "canvas_feedback.zip", "moodle": "moodle_feedback.zip"}


def feedback_zip(kind: str, out: Path, rows: list[dict]) -> Path | None:
    """``out/<kind>_feedback.zip`` for the platform ``kind`` (``canvas`` or ``moodle``); None when no page has the
    platform's ids."""
    write = {"canvas": canvas_feedback_files, "moodle": moodle_feedback_files}.get(kind)
    if write is None:
        raise ValueError(f"kind: expected 'canvas' or 'moodle', got {kind!r}")
    return write(out, rows)


def canvas_feedback_files(out: Path, rows: list[dict]) -> Path | None:
    """``out/canvas_feedback.zip`` for Canvas's "Re-Upload Submissions": one page per student,
    ``<sortable name>_<user id>_<attachment id>_feedback.html``, the ids read from the downloaded file's name
    (``platforms.CANVAS``); the name keeps letters only, so the first two all-digit parts are the ids. Anonymous
    downloads (``anon_<id>``) carry no user id Canvas can read back, and are left out."""
    chosen = {}
    for r in _chosen(out, rows, "canvas").values():
        m = CANVAS.match(str(r.get("file", "")).replace("\\", "/").rsplit("/", 1)[-1])
        if m is not None and m["uid"] == str(r["platform_id"]):
            label = re.sub(r"[^A-Za-z]+", "", ascii_name(m["name"]))[:60] or "student"
            chosen[f"{label}_{m['uid']}_{m['fid']}_feedback.html"] = r
    return _write(out / FEEDBACK_ZIPS["canvas"], out, chosen)


def moodle_feedback_files(out: Path, rows: list[dict]) -> Path | None:
    """``out/moodle_feedback.zip`` for Moodle's "Upload multiple feedback files in a zip": one folder per
    participant, ``<name>_<participant id>_assignfeedback_file/<student>.html`` (the name without ``_``, which
    Moodle splits at)."""
    chosen = {}
    for pid, r in _chosen(out, rows, "moodle").items():
        label = re.sub(r"[^A-Za-z0-9]+", " ", ascii_name(str(r.get("name", "")))).strip()[:60] or "Participant"
        chosen[f"{label}_{pid}_assignfeedback_file/{r['student']}.html"] = r
    return _write(out / FEEDBACK_ZIPS["moodle"], out, chosen)


def _chosen(out: Path, rows: list[dict], kind: str) -> dict[str, dict]:
    """The platform's id -> the row whose page goes back: the graded row's, else the first with a page."""
    chosen: dict[str, dict] = {}
    for r in rows:
        pid = str(r.get("platform_id", ""))
        if r.get("platform") != kind or not pid.isdigit() or page_of(out / "feedback", r["student"]) is None:
            continue
        if pid not in chosen or (r.get("status") == "graded" and chosen[pid].get("status") != "graded"):
            chosen[pid] = r
    return chosen


def _write(target: Path, out: Path, chosen: dict[str, dict]) -> Path | None:
    target.unlink(missing_ok=True)
    if not chosen:
        return None
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, r in sorted(chosen.items()):
            bundle.write(page_of(out / "feedback", r["student"]), name)
    return target


def page_of(pages: Path, student: str) -> Path | None:
    """The student's feedback page, if it is a regular file and the id a plain name (never a path)."""
    if not SAFE_ID.fullmatch(str(student)):
        return None
    page = pages / f"{student}.html"
    try:
        return page if stat.S_ISREG(os.lstat(page).st_mode) else None
    except OSError:
        return None
