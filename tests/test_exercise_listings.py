"""The words around the exercises agree with the map (``layout/exercises.py``) and with the grade cells: each
exercise's heading states the points its grade cell gives; the table in the ``intro`` of the solution and the
exercise notebook lists the map's exercises in order, with their headings' titles, difficulties and points; the
chapter's closing ``## Exercises`` section has one numbered item per exercise, in order, that names it.

An item of the chapter's list may shorten the heading's title ("Merging heads" for "merging the heads again"): it
names its exercise when it shares a content word with the title (``tools.exercise_text.words``) and with no other
exercise's title more than with its own. A stub left by ``tools/new_exercise.py`` (a ``TODO`` in an exercise's
text or hints) fails here until it is written.
"""

from __future__ import annotations

import functools

import nbformat
import pytest

from layout import exercises
from layout.nbmeta import nbgrader
from layout.paths import NOTEBOOKS, assignments, notebook_path
from tools.exercise_text import Listed, cell, chapter_list, heading, intro_table, words

ASSIGNMENTS = assignments()


@functools.cache
def read(kind: str, assignment: str):
    path = NOTEBOOKS / f"{assignment}.ipynb" if kind == "notebooks" else notebook_path(kind, assignment)
    return nbformat.read(path, as_version=4)


def number(e: exercises.Exercise) -> int:
    """The exercise's number, from its answer cell's id: ``ex3_answer`` -> 3."""
    return int(e.answer.split("_")[0][2:])


def headings(assignment: str) -> list[Listed | None]:
    """The heading of each exercise of the map, from its ``exN_text`` cell (None where it has none)."""
    nb = read("solutions", assignment)
    found = [cell(nb, f"ex{number(e)}_text") for e in exercises.of(assignment)]
    return [heading(c.source) if c is not None else None for c in found]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_heading_states_the_points_of_its_grade_cell(assignment):
    nb = read("solutions", assignment)
    for e, listed in zip(exercises.of(assignment), headings(assignment), strict=True):
        assert listed is not None, f"{assignment}: ex{number(e)}_text has no '## Exercise N: ... (★☆☆, P points)'"
        assert listed.number == number(e), f"{assignment}: ex{number(e)}_text is headed exercise {listed.number}"
        points = nbgrader(cell(nb, e.graded)).get("points")
        assert listed.points == points, f"{assignment}: exercise {listed.number}'s heading says {listed.points:g} " \
                                        f"points, its grade cell {e.graded} gives {points}"


@pytest.mark.parametrize("kind", ["solutions", "exercises"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_intro_table_lists_the_maps_exercises_as_headed(assignment, kind):
    table = intro_table(read(kind, assignment))
    assert table == headings(assignment), (
        f"{kind}/{assignment}: the table of the intro cell is not the exercises' headings, in the map's order:\n"
        + "\n".join(f"  table {t}\n  heads {h}" for t, h in zip(table, headings(assignment)) if t != h)
        + ("" if len(table) == len(headings(assignment)) else f"\n  {len(table)} rows for "
           f"{len(headings(assignment))} exercises"))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_chapters_exercise_list_names_every_exercise_in_order(assignment):
    items = chapter_list(read("notebooks", assignment))
    titles = [h.title if h else "" for h in headings(assignment)]
    assert [n for n, _ in items] == list(range(1, len(titles) + 1)), (
        f"notebooks/{assignment}.ipynb: the ## Exercises section lists {[n for n, _ in items]}, the map has "
        f"{len(titles)} exercises")
    for (n, item), title in zip(items, titles):
        shared = [len(words(item) & words(other)) for other in titles]
        assert shared[n - 1] and shared[n - 1] == max(shared), (
            f"notebooks/{assignment}.ipynb: item {n} of the exercise list, **{item}**, does not name exercise {n}, "
            f"'{title}'")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_exercise_text_is_left_a_stub(assignment):
    nb = read("solutions", assignment)
    for e in exercises.of(assignment):
        for part in ("text", "hints"):
            c = cell(nb, f"ex{number(e)}_{part}")
            assert c is not None and "TODO" not in c.source, (
                f"TODO: write the {part} of a{assignment[:2]}.{e.defines} (cell ex{number(e)}_{part}) in "
                f"solutions/{assignment}/{assignment}.ipynb")


def test_the_readers_find_what_they_look_for():
    """Each reader on a line written as the notebooks write it, and on one that breaks the form."""
    assert heading("## Exercise 2: a causal mask (★★☆, 1 point)\n") == Listed(2, "a causal mask", "★★☆", 1.0)
    assert heading("## Exercise 2: a causal mask (★★☆)\n") is None
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "| # | exercise | difficulty | points |\n| --- | --- | --- | --- |\n| 1 | by hand | ★☆☆ | 2 |\n",
        metadata={"nbgrader": {"grade_id": "intro"}})])
    assert intro_table(nb) == [Listed(1, "by hand", "★☆☆", 2.0)]
    chapter = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "## Summary\n\n1. **Not this**\n\n## Exercises\n\nIt contains:\n\n1. **Merging heads**: glue them.\n")])
    assert chapter_list(chapter) == [(1, "Merging heads")]
    assert words("Merging heads") & words("merging the heads again") == {"merging", "heads"}
