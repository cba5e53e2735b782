"""Two classes of layout and wording a reader notices at once, checked in every chapter:

- the book stands alone: no chapter, no exercise notebook (and not the introduction) speaks of a lecture the reader
  never attended;
- a paragraph that ends with a colon announces what follows it: the next cell is that code, list, table or
  equation, never a new heading (chapter 5 once announced a cell three sections before it came).
"""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ROOT

CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))  # the exercise notebooks are made from these
LECTURE = re.compile(r"\blectures?\b|\b(?:the|a|one|its) slides?\b", re.IGNORECASE)  # not "slide the knob"


def lecture_mentions(cells) -> list[str]:
    """The lines of markdown cells that speak of a lecture or its slides."""
    return [line.strip() for cell in cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if LECTURE.search(line)]


def unkept_colons(cells) -> list[str]:
    """The last lines of markdown cells that end with a colon and are followed by a heading, or by nothing."""
    found = []
    for i, cell in enumerate(cells):
        text = cell.source.rstrip()
        if cell.cell_type != "markdown" or not text.endswith(":"):
            continue
        after = cells[i + 1] if i + 1 < len(cells) else None
        if after is None or after.cell_type == "markdown" and after.source.lstrip().startswith("#"):
            found.append(text.splitlines()[-1].strip())
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_stands_alone_without_a_lecture(chapter):
    assert lecture_mentions(nbformat.read(chapter, as_version=4).cells) == []


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_the_exercises_stand_alone_without_a_lecture(solution):
    assert lecture_mentions(nbformat.read(solution, as_version=4).cells) == []


def test_the_introduction_stands_alone_without_a_lecture():
    lines = [line for line in (ROOT / "book" / "intro.md").read_text(encoding="utf-8").splitlines()
             if LECTURE.search(line)]
    assert lines == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_paragraph_ending_in_a_colon_is_followed_by_what_it_announces(chapter):
    assert unkept_colons(nbformat.read(chapter, as_version=4).cells) == []


def test_both_rules_catch_what_they_are_for():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md("As the lecture's slide shows, counting on real modules:"), md("## The heads of a trained model"),
             md("The parameters:"), code("print(1)"), md("A list:"), md("- one\n- two"), md("At the end:")]
    assert unkept_colons(cells) == ["As the lecture's slide shows, counting on real modules:", "At the end:"]
    assert lecture_mentions(cells) == ["As the lecture's slide shows, counting on real modules:"]
    assert lecture_mentions([md("Elected to the chair. Slide the temperature down.")]) == []
    assert lecture_mentions([md("The slides also list two more.")]) == ["The slides also list two more."]
