"""tools/nbmeta.py reads nbgrader's cell metadata; tools/paths.py finds the repository's notebooks."""

from __future__ import annotations

import nbformat

from tools import nbmeta
from tools.paths import ROOT, assignments, notebook_path


def cell(source: str, **meta) -> nbformat.NotebookNode:
    c = nbformat.v4.new_code_cell(source)
    if meta:
        c.metadata["nbgrader"] = meta
    return c


def test_metadata_is_read_as_nbgrader_writes_it():
    answer = cell("x = 1", grade_id="ex1_answer", solution=True, grade=False, locked=False)
    graded = cell("check(x)", grade_id="ex1_check", solution=False, grade=True, locked=True, points=2)
    plain = cell("import torch")
    assert [nbmeta.grade_id(c) for c in (answer, graded, plain)] == ["ex1_answer", "ex1_check", None]
    assert [nbmeta.is_solution(c) for c in (answer, graded, plain)] == [True, False, False]
    assert [nbmeta.is_graded(c) for c in (answer, graded, plain)] == [False, True, False]
    assert [nbmeta.is_locked(c) for c in (answer, graded, plain)] == [False, True, False]
    nb = nbformat.v4.new_notebook(cells=[plain, answer, graded])
    assert nbmeta.solution_sources(nb) == {"ex1_answer": "x = 1"}
    nbmeta.with_answers(nb, {"ex1_answer": "x = 2", "elsewhere": "y = 0"})
    assert [c.source for c in nb.cells] == ["import torch", "x = 2", "check(x)"]


def test_paths_find_every_exercise_set():
    assert (ROOT / "pyproject.toml").is_file()
    names = assignments()
    assert "04_queries_keys_values" in names and names == sorted(names)
    assert all(notebook_path(kind, a).is_file() for kind in ("solutions", "exercises") for a in names)
