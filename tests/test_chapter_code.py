"""The chapters show the package's own code: every chapter includes the source of some of the package's
objects with ``{literalinclude}`` and ``:pyobject:`` (taken at build time, so it cannot drift), and every
object it names exists in the file it names."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from conftest import ROOT

CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
INCLUDE = re.compile(r"```\{literalinclude\}\s+(\S+)\s*\n((?::[\w-]+:.*\n)*)")


def includes(path) -> list[tuple[str, str | None]]:
    """(file, pyobject) of every literalinclude in the markdown cells of a notebook."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for target, options in INCLUDE.findall(cell.source + "\n"):
                obj = re.search(r":pyobject:\s*(\S+)", options)
                found.append((target, obj.group(1) if obj else None))
    return found


def defines(tree: ast.Module, dotted: str) -> bool:
    """Whether ``dotted`` ("name" or "Class.method") is defined at the top of ``tree``."""
    scope = tree.body
    for part in dotted.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
        if node is None:
            return False
        scope = node.body
    return True


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_shows_package_code_that_exists(chapter):
    shown = [(t, o) for t, o in includes(chapter) if t.startswith("../transformer/")]
    assert shown, f"{chapter.name}: no literalinclude of the package's code"
    for target, obj in shown:
        path = (chapter.parent / target).resolve()
        assert path.is_file(), f"{chapter.name}: {target} does not exist"
        assert obj is not None, f"{chapter.name}: include {target} with :pyobject:, not the whole file"
        assert defines(ast.parse(path.read_text(encoding="utf-8")), obj), f"{chapter.name}: {target} has no {obj}"


def test_the_include_pattern_reads_a_directive():
    cell = "Text\n```{literalinclude} ../transformer/masks.py\n:pyobject: masked_softmax\n:language: python\n```\n"
    assert INCLUDE.findall(cell) == [("../transformer/masks.py", ":pyobject: masked_softmax\n:language: python\n")]
    tree = ast.parse("class A:\n    def f(self):\n        pass\n")
    assert defines(tree, "A.f") and not defines(tree, "A.g") and not defines(tree, "f")
