"""What an assignment's prose says about its exercises, read in one place: the heading of each exercise, the table
of the solution notebook's ``intro`` cell, and the numbered list of the chapter's closing ``## Exercises`` section.

The map of exercises (``layout/exercises.py``) names the cells; these are the words around them. The tests hold the
three to the map and to the grade cells' points (``tests/test_exercise_listings.py``); ``tools/new_exercise.py``
writes a new line into each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from layout.nbmeta import grade_id

HEADING = re.compile(r"^## Exercise (\d+): (.+) \(([★☆]+), (\d+(?:\.\d+)?) points?\)\s*$", re.M)
TABLE_ROW = re.compile(r"^\| (\d+) \| (.+) \| ([★☆]+) \| (\d+(?:\.\d+)?) \|\s*$", re.M)
LIST_ITEM = re.compile(r"^(\d+)\. \*\*(.+?)\*\*", re.M)
EXERCISES_SECTION = "## Exercises"


@dataclass(frozen=True)
class Listed:
    """One exercise as a heading or a row of the intro's table names it."""

    number: int
    title: str
    stars: str
    points: float


def stars(difficulty: int) -> str:
    """``2`` -> ``★★☆``: the difficulty as the headings write it (1 to 3)."""
    return "★" * difficulty + "☆" * (3 - difficulty)


def points_words(points: float) -> str:
    """``1`` -> ``1 point``, ``3`` -> ``3 points``, as the headings write them."""
    shown = f"{points:g}"
    return f"{shown} point" if shown == "1" else f"{shown} points"


def heading(text: str) -> Listed | None:
    """The exercise heading in a markdown cell's ``text``, ``## Exercise 2: title (★★☆, 3 points)``, or None."""
    m = HEADING.search(text)
    return Listed(int(m[1]), m[2], m[3], float(m[4])) if m else None


def cell(nb, gid: str):
    """The cell of ``nb`` whose grade_id is ``gid``, or None."""
    return next((c for c in nb.cells if grade_id(c) == gid), None)


def intro_table(nb) -> list[Listed]:
    """The rows of the table of exercises in the notebook's ``intro`` cell, in order."""
    intro = cell(nb, "intro")
    text = intro.source if intro is not None else ""
    return [Listed(int(m[1]), m[2], m[3], float(m[4])) for m in TABLE_ROW.finditer(text)]


def exercises_section(chapter) -> str:
    """The chapter's closing ``## Exercises`` section, from its heading to the end of that cell ('' if none)."""
    for c in reversed(chapter.cells):
        if c.cell_type == "markdown" and EXERCISES_SECTION + "\n" in c.source + "\n":
            return c.source[c.source.rindex(EXERCISES_SECTION):]
    return ""


def chapter_list(chapter) -> list[tuple[int, str]]:
    """(number, bold title) of each item of the numbered list in the chapter's ``## Exercises`` section."""
    return [(int(m[1]), m[2]) for m in LIST_ITEM.finditer(exercises_section(chapter))]


STOP = {"a", "an", "the", "of", "by", "hand", "and", "in", "with", "for", "its", "to", "from", "as", "one", "two"}


def words(title: str) -> set[str]:
    """The content words of a title, lower case: ``A patching sweep`` -> ``{"patching", "sweep"}``."""
    return {w for w in re.split(r"[^a-z0-9_]+", title.lower()) if w and w not in STOP}
