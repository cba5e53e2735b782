"""The known mistakes of every exercise are data (``checks.MISTAKES``, by check): each one, given to
its check as the student's answer, is rejected, and the feedback names it with its hint."""

from __future__ import annotations

import math

import pytest
import torch

import checks
from checks import CheckFailed, Mistake

from bank import CHECKS
from conftest import solution_sources

CASES = [(check, m) for check, mistakes in checks.MISTAKES.items() for m in mistakes]
IDS = [f"{check}-{'' if m.part is None else f'{m.part}:'}{m.name}" for check, m in CASES]


def solution_answer(check: str):
    """The answer the solution notebook gives to the exercise that ``check`` judges."""
    assignment, cell, name = next((a, c, n) for a, cells in CHECKS.items() for c, (fn, n) in cells.items()
                                  if fn == check)
    namespace = {"math": math, "torch": torch}
    for grade_id, code in solution_sources(assignment).items():
        exec(compile(code, f"<{grade_id}>", "exec"), namespace)
        if grade_id == cell:
            return namespace[name]
    raise LookupError(check)


def test_every_check_has_its_mistakes_and_every_mistake_its_own_name():
    assert set(checks.MISTAKES) == {fn for cells in CHECKS.values() for fn, _ in cells.values()}
    for check, mistakes in checks.MISTAKES.items():
        assert mistakes and all(isinstance(m, Mistake) for m in mistakes), check
        names = [(m.part, m.name) for m in mistakes]
        assert len(set(names)) == len(names), f"{check}: two mistakes share a name"


@pytest.mark.parametrize("check,mistake", CASES, ids=IDS)
def test_mistake_is_caught_and_named(check, mistake, capsys):
    answer = mistake.wrong
    if mistake.part is not None:  # a wrong entry in an otherwise right answer
        right = solution_answer(check)
        answer = dict(right) if isinstance(mistake.part, str) else list(right)
        answer[mistake.part] = mistake.wrong
    with pytest.raises(CheckFailed) as err:
        getattr(checks, check)(answer)
    assert mistake.hint in str(err.value), f"the feedback should name '{mistake.name}':\n{err.value}"
    assert checks.PASSED not in capsys.readouterr().out
