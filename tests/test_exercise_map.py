"""The map of exercises (``layout/exercises.py``) names every piece of every exercise, and every piece is named by it:
a row that names something missing fails here, and so does a check, mistake list, reference, hidden test, probe,
``FORBIDS`` entry or bank entry that no row names."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nbformat
import pytest

import checks
from checks import references
from grader import hidden
from grader.kernel_side import probes
from layout import exercises
from layout.nbmeta import grade_id, is_graded, is_solution
from layout.paths import assignments, notebook_path

import bank

SEED = 5
ASSIGNMENTS = assignments()


def cells(assignment: str) -> list[tuple[str, str, str]]:
    """(answer cell, the grade cell after it, the answer's source) in the solution notebook, in order."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    out, pending = [], None
    for cell in nb.cells:
        if is_solution(cell) and cell.cell_type == "code":
            pending = cell
        elif is_graded(cell) and pending is not None:
            out.append((grade_id(pending), grade_id(cell), pending.source))
            pending = None
    return out


def test_every_assignment_has_rows_and_every_row_an_assignment():
    assert sorted({e.number for e in exercises.EXERCISES}) == [a[:2] for a in ASSIGNMENTS]
    keys = [(e.number, e.answer) for e in exercises.EXERCISES]
    assert len(keys) == len(set(keys)), "an answer cell with two rows"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_rows_are_the_notebooks_cells_in_order(assignment):
    found = cells(assignment)
    assert [(e.answer, e.graded) for e in exercises.of(assignment)] == [(a, g) for a, g, _ in found]
    for e, (_, _, source) in zip(exercises.of(assignment), found):
        assert e.defines in source, f"{e.answer} does not define {e.defines!r}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_check_exists_in_its_assignments_module_with_its_mistakes(assignment):
    module = importlib.import_module(f"checks.a{assignment[:2]}")
    for e in exercises.of(assignment):
        assert getattr(module, e.check, None) is getattr(checks, e.check, False), f"{e.check} not in {module.__name__}"
        assert e.check in checks.__all__, e.check
        assert checks.MISTAKES.get(e.check), f"{e.check}: no named mistakes"


def test_every_check_and_mistake_list_is_named_by_a_row():
    named = {e.check for e in exercises.EXERCISES}
    assert {n for n in checks.__all__ if n.startswith("check_")} == named
    assert set(checks.MISTAKES) == named


def test_every_reference_is_named_by_a_row_and_used_by_its_check():
    public = {n for n, f in inspect.getmembers(references, inspect.isfunction)
              if f.__module__ == references.__name__ and not n.startswith("_")}
    machinery = {"seeded"}  # the random state a reference is built in, not a reference
    named = {r for e in exercises.EXERCISES for r in e.references}
    assert named == public - machinery
    for e in exercises.EXERCISES:
        source = inspect.getsource(importlib.import_module(f"checks.a{e.number}"))
        for r in e.references:
            assert f"references.{r}(" in source, f"{e.check}: checks.a{e.number} never calls {r}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_hidden_test_asks_the_probes_its_row_names(assignment):
    asked = hidden.cases(assignment, SEED)
    for e in exercises.of(assignment):
        assert sorted({c.request.probe for c in asked[e.graded]}) == sorted(e.probes), e.graded
        for name in e.probes:
            assert probes.resolve(name), name


def test_every_hidden_test_and_probe_is_named_by_a_row():
    for assignment in ASSIGNMENTS:
        module = hidden.module_for(assignment)
        tests = {n for n, f in inspect.getmembers(module, inspect.isfunction)
                 if n.startswith("ex") and f.__module__ == module.__name__}
        assert tests == set(exercises.graded(assignment)), assignment
    named = {p for e in exercises.EXERCISES for p in e.probes}
    path = probes.__path__
    own = {f"{m.name}.{n}" for m in pkgutil.iter_modules(path)
           for n, f in inspect.getmembers(importlib.import_module(f"{probes.__name__}.{m.name}"), inspect.isfunction)
           if not n.startswith("_") and f.__module__.endswith(m.name)}
    assert own <= named, sorted(own - named)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_forbids_is_where_its_row_says_and_names_what_the_cell_defines(assignment):
    forbids = getattr(hidden.module_for(assignment), "FORBIDS", {})
    rows = exercises.of(assignment)
    assert set(forbids) == {e.graded for e in rows if e.forbids}
    for e in rows:
        if e.forbids:
            assert forbids[e.graded].function == e.defines, e.graded


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_answer_has_wrong_answers_in_the_bank_and_nothing_else_does(assignment):
    answers = {e.answer for e in exercises.of(assignment)}
    assert set(bank.WRONG[assignment]) == answers
    for table in (bank.RIGHT, bank.EXPECTED):
        assert set(table[assignment]) <= answers, assignment
