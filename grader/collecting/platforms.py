"""The learning platforms' downloads: whose submission a path of their download is.

Downloads, read by ``collect.gather`` through :func:`identify` (verified against the platforms' own code):

- Canvas, "Download Submissions" (canvas-lms ``lib/content_zipper.rb``): ``<sortable name>[_LATE]_<user id>_<file
  id>_<file name>``, the name lower-cased and without spaces or punctuation (accents kept); an anonymous assignment
  writes ``anon_<id>`` for both. A file name a student uploads again is made unique with ``-1``, ``-2`` (after 8
  tries a UUID) before its extension (``Attachment.make_unique_filename``).
- Moodle, "Download all submissions" (``mod/assign/classes/downloader.php``): a folder ``<Full name>_<participant
  id>_assignsubmission_file`` (a trailing ``_`` before Moodle 4.1) holding the files as uploaded, or, without
  folders, ``<Full name>_<participant id>_assignsubmission_file_<file name>``; a ``_`` in a name becomes a space.
- nbgrader: ``submitted/<student>/<assignment>/<notebook>``.

Who a file belongs to is decided from the top of the download down, by the one place the platform writes it: a
folder is a student's **place** when it is not inside another's place and its own name is a Moodle submission
folder's, or it holds a folder named like the assignment (nbgrader's ``<student>/``). Everything below a place is
that student's, at any depth, whatever its names say (:func:`identify_in`): a folder ``bob/<assignment>/`` or a
file named like a Canvas download inside Mallory's place is Mallory's. A file outside every place is read by its
own name (:func:`identify`): a plain file named like one of these (``bob_12_34_x.ipynb`` reads as Canvas's) is
taken as that platform's.

Grades and feedback pages back to the platforms: ``grader/reporting/export.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MOODLE_FOLDER = re.compile(r"^(?P<name>[^_]*)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
MOODLE_FILE = re.compile(r"^(?P<name>[^_]*)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$", re.S)
CANVAS = re.compile(r"^(?P<name>\w*?)(?P<late>_LATE)?_(?P<uid>\d+)_(?P<fid>\d+)_(?P<file>.+)$", re.S)
CANVAS_ANON = re.compile(r"^(?P<late>LATE_)?(?P<uid>anon_[A-Za-z0-9]+)_(?P<fid>\d+)_(?P<file>.+)$", re.S)
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ATTEMPT = re.compile(rf"-(\d+|{UUID})(\.[^.]*)?$")
NBGRADER_STEPS = ("source", "release", "autograded", "feedback")  # a course folder's steps but submitted/
UUID_ATTEMPT = 8  # Canvas gives up on -1 .. -7 and writes a UUID: the 8th upload of one name, or later


@dataclass(frozen=True)
class Found:
    """Whose file a path is: the platform's identity of the student, and the name the row's id is made from."""
    platform: str          # canvas, moodle, nbgrader or folder
    platform_id: str = ""
    name: str = ""
    own: str = ""          # the row's own name: <sortable name>_<user id>, <Full name>_<participant id>, the folder's
    late: bool = False
    attempt: int = 0
    order: tuple = ()      # of one identity's notebooks, the highest is graded


def course_step(name: str, siblings: set[str] | frozenset[str]) -> bool:
    """Whether a folder named ``name`` beside the folders ``siblings`` is one of nbgrader's own steps in a course
    folder (``{course}/{step}/{student}/{assignment}/``: the source, the release, the graded and the feedback
    copies beside ``submitted/``), which holds no submission: not read."""
    return name in NBGRADER_STEPS and "submitted" in siblings


def is_place(name: str, folders: set[str] | frozenset[str], assignment: str) -> bool:
    """Whether a folder named ``name`` holding the folders ``folders`` (and inside no other place) is a student's
    place: a Moodle submission folder, or nbgrader's student folder (it holds ``<assignment>/``)."""
    return bool(MOODLE_FOLDER.match(name)) or assignment in folders


def file_owner(name: str) -> tuple[str, str] | None:
    """The platform identity a file outside every place names (Canvas's user id, Moodle's participant id), or None:
    what one student's files are counted under."""
    if m := MOODLE_FILE.match(name):
        return "moodle", m["pid"]
    if m := CANVAS_ANON.match(name) or CANVAS.match(name):
        return "canvas", m["uid"]
    return None


def identify_in(place: tuple[str, ...], parts: tuple[str, ...], assignment: str) -> tuple[Found, str]:
    """Whose ``parts`` is, inside the student's ``place``, and what it is to this assignment: ``"submission"`` (a
    notebook of it), ``"subfolder"`` (in a subfolder of nbgrader's assignment folder, which nbgrader never reads) or
    ``"other"`` (nbgrader: another assignment's)."""
    inside = parts[len(place):]
    if m := MOODLE_FOLDER.match(place[-1]):
        return _moodle(m, "/".join(inside), assignment), "submission"
    order = _by_name(parts[-1], assignment)
    found = Found("nbgrader", place[-1], "", place[-1], order=order)
    if inside[:1] != (assignment,):
        return found, "other"
    return found, "submission" if len(inside) <= 2 else "subfolder"


def identify(parts: tuple[str, ...], assignment: str, top: tuple[str, ...] = ()) -> Found | None:
    """Whose file ``parts`` (a path in the download, outside every place) is, by its own name: Moodle's or Canvas's
    file name, then a plain ``<student>[_<assignment>].ipynb`` directly in ``top``; None for a file of no layout."""
    name = parts[-1]
    if m := MOODLE_FILE.match(name):
        return _moodle(m, m["file"], assignment)
    if m := CANVAS_ANON.match(name) or CANVAS.match(name):
        attempt = ATTEMPT.search(m["file"])
        tries = 0 if attempt is None else UUID_ATTEMPT if "-" in attempt[1] else int(attempt[1])
        own = m["uid"] if m["uid"].startswith("anon_") else f"{m['name']}_{m['uid']}"
        return Found("canvas", m["uid"], "" if own == m["uid"] else m["name"], own, bool(m["late"]), tries,
                     (tries, int(m["fid"])))
    if tuple(parts[:-1]) == tuple(top):
        stem = name.rsplit(".", 1)[0] if "." in name[1:] else name  # bob.ipynb, bob.py: bob
        return Found("folder", own=stem[: -len(assignment) - 1] if stem.endswith("_" + assignment) else stem)
    return None


def _moodle(m: re.Match, inside: str, assignment: str) -> Found:
    return Found("moodle", m["pid"], m["name"], f"{m['name']}_{m['pid']}", order=_by_name(inside, assignment))


def _by_name(name: str, assignment: str) -> tuple:
    """Moodle and nbgrader do not say which file came last: the release's name first, then the last by name."""
    return (name.rsplit("/", 1)[-1] == f"{assignment}.ipynb", name)

