"""layout/nbmeta.py reads nbgrader's cell metadata; layout/paths.py finds the repository's notebooks."""

from __future__ import annotations

import nbformat
import pytest

from layout import nbmeta
from layout.paths import ROOT, assignments, notebook_path


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


# A submitted notebook may hold any JSON value where nbgrader's metadata goes.
HOSTILE_METADATA = [[], "metadata", None, 3, 2.5, True]
HOSTILE_NBGRADER = [[], ["grade_id", "ex1_answer"], "solution", None, 0, 1, 1.5, True]
HOSTILE_GRADE_ID = [5, 1.0, True, ["ex1_answer"], {"ex1_answer": 1}]


def shapes(metadata):
    """The same cell as a plain dict (JSON as read) and as an nbformat node."""
    plain = {"cell_type": "code", "source": "x = 1", "metadata": metadata, "outputs": [], "execution_count": None}
    return [plain, nbformat.from_dict(plain)]


def reads_as_nothing(c) -> bool:
    return (nbmeta.nbgrader(c), nbmeta.grade_id(c), nbmeta.is_solution(c), nbmeta.is_graded(c),
            nbmeta.is_locked(c)) == ({}, None, False, False, False)


@pytest.mark.parametrize("metadata", HOSTILE_METADATA, ids=repr)
def test_metadata_that_is_not_a_dict_reads_as_none(metadata):
    assert all(reads_as_nothing(c) for c in shapes(metadata))


@pytest.mark.parametrize("entry", HOSTILE_NBGRADER, ids=repr)
def test_an_nbgrader_entry_that_is_not_a_dict_reads_as_none(entry):
    assert all(reads_as_nothing(c) for c in shapes({"nbgrader": entry}))


@pytest.mark.parametrize("gid", HOSTILE_GRADE_ID, ids=repr)
def test_a_grade_id_that_is_not_a_string_reads_as_none(gid):
    for c in shapes({"nbgrader": {"grade_id": gid, "solution": True}}):
        assert nbmeta.grade_id(c) is None and nbmeta.is_solution(c)


def test_cells_that_are_not_dicts_read_as_none():
    assert all(reads_as_nothing(c) for c in (None, [], "cell", 7))


def test_answers_go_only_to_cells_with_that_grade_id():
    nb = {"cells": [*shapes({"nbgrader": []}), *shapes({"nbgrader": {"grade_id": 5, "solution": True}}),
                    *shapes({"nbgrader": {"grade_id": "ex1_answer", "solution": True}})]}
    nbmeta.with_answers(nb, {"ex1_answer": "x = 2", "5": "y = 0"})
    assert [c["source"] for c in nb["cells"]] == ["x = 1"] * 4 + ["x = 2"] * 2
    assert nbmeta.solution_sources(nb) == {None: "x = 1", "ex1_answer": "x = 2"}


def test_every_cell_nbgrader_wrote_is_well_formed():
    """The reference: the metadata nbgrader itself wrote into the repository's exercise sets."""
    seen = 0
    for kind in ("solutions", "exercises"):
        for a in assignments():
            for c in nbformat.read(notebook_path(kind, a), as_version=4).cells:
                if "nbgrader" in c.metadata:
                    seen += 1
                    assert nbmeta.well_formed(c.metadata["nbgrader"]), (kind, a, c.metadata["nbgrader"])
    assert seen > 100


GOOD = {"grade_id": "ex1_check", "solution": False, "grade": True, "locked": True, "points": 2, "schema_version": 3,
        "task": False, "checksum": "abc", "cell_type": "code"}
BAD = {"grade_id": [7, True, "", "x" * 101], "solution": ["true", 1, None], "grade": ["yes", 0], "locked": [1],
       "task": ["no"], "schema_version": [True, 3.0, "3"], "points": ["2", None], "checksum": [5],
       "cell_type": [None]}


def test_well_formed_checks_each_key_nbgrader_writes():
    assert nbmeta.well_formed(GOOD) and nbmeta.well_formed({}) and nbmeta.well_formed({**GOOD, "other": []})
    assert nbmeta.well_formed({**GOOD, "grade_id": "x" * 100, "points": 1.5})
    bad = [(k, v) for k, values in BAD.items() for v in values if nbmeta.well_formed({**GOOD, k: v})]
    assert not bad, bad
    assert not any(map(nbmeta.well_formed, HOSTILE_NBGRADER))


def test_drop_malformed_removes_only_a_malformed_entry():
    good, bad, none = shapes({"nbgrader": dict(GOOD)}), shapes({"nbgrader": {"grade": "yes"}}), shapes({"tags": []})
    assert [nbmeta.drop_malformed(c) for c in good + bad + none] == [False, False, True, True, False, False]
    assert [c["metadata"] for c in good + bad + none] == [{"nbgrader": GOOD}] * 2 + [{}] * 2 + [{"tags": []}] * 2
    assert not any(nbmeta.drop_malformed(c) for c in shapes(None) + shapes([]))


def test_a_submission_carries_the_instructors_answers_or_the_blanks():
    a = "04_queries_keys_values"
    released = nbmeta.solution_sources(nbformat.read(notebook_path("exercises", a), as_version=4))
    answers = nbmeta.solutions(a)
    assert answers.keys() == released.keys() and answers != released  # the release holds stubs in the same cells
    first = next(iter(answers))
    assert nbmeta.solution_sources(nbmeta.submission(a)) == answers
    assert nbmeta.solution_sources(nbmeta.submission(a, solved=False)) == released
    assert nbmeta.solution_sources(nbmeta.submission(a, {first: "pass"})) == {**answers, first: "pass"}
