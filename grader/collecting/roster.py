"""Who is enrolled: the students of the platform's file that a grading run filled (``--export``), kept beside the
run as ``grading/<id>/roster.json``, so that the term (``grader/course.py``) counts those who handed nothing in.

- Canvas's gradebook export (canvas-lms ``lib/gradebook_exporter.rb``): one row per student, with Canvas's user id
  (``ID``); an assignment's cell is ``N/A`` where the assignment is not the student's (no submission of it is
  visible to them); the course's Test Student (its ``StudentViewEnrollment``, written last, named "Student, Test")
  is nobody.
- Moodle's grading worksheet: one row per participant of the assignment (``Participant <id>``, ``Full name``).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.collecting.student_ids import reduce_name

ROSTER = "roster.json"
CANVAS_TEST_STUDENT = {"Student, Test", "Test Student"}  # the sortable name and the name Canvas gives it


@dataclass(frozen=True)
class Enrolled:
    """A student the platform lists for the assignment."""

    platform: str      # canvas or moodle
    platform_id: str   # Canvas's user id, Moodle's participant id
    name: str          # as the platform wrote it

    @property
    def student(self) -> str:
        """The id a submission of theirs would have had: ``doejohn_1001`` (Canvas's download writes the sortable
        name without spaces or punctuation, lower-cased), ``Ana_Lima_20`` (Moodle's, its full name)."""
        name = re.sub(r"\W+", "", self.name).lower() if self.platform == "canvas" else self.name
        return reduce_name(f"{name}_{self.platform_id}")


def write(out: Path, kind: str, students: list[tuple[str, str]], source: Path) -> Path:
    """``out/roster.json``: the platform ``kind``, the file read (``source``) and its ``students`` ((platform id,
    name), in the file's order)."""
    people = [asdict(Enrolled(kind, pid, name)) for pid, name in students]
    target = out / ROSTER
    target.write_text(json.dumps({"platform": kind, "file": str(source), "students": people}, indent=1,
                                 ensure_ascii=False), encoding="utf-8")
    return target


def read(folder: Path) -> list[Enrolled]:
    """The students ``folder/roster.json`` lists; none when the run had no ``--export``, or (said) when the file is
    not one this module wrote."""
    path = folder / ROSTER
    if not path.is_file():
        return []
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
        return [Enrolled(str(s["platform"]), str(s["platform_id"]), str(s["name"])) for s in held["students"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"skipped {path}: expected the roster a grading run wrote, got {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return []
