"""The hidden tests can fail: each one rejects wrong answers from the bank, not only the visible check.

Each grade cell's hidden block is run (as nbgrader would: after the setup cell and the earlier,
correct answers) against every wrong answer for the answer cell it judges.
"""

from __future__ import annotations

import re
import signal

import nbformat
import pytest

from bank import CHECKS, WRONG
from conftest import notebook_path, setup_source

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
# Wrong answers may make PyTorch warn (a variance over one element); that is part of being wrong.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
LIMIT = 20  # seconds; an answer that runs longer fails, as a cell stopped by the grader's timeout would


class TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimedOut()


def judged_by(assignment: str) -> dict[str, tuple[str, str, str]]:
    """answer cell -> (setup source, visible part, hidden part) of the grade cell that follows it."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    setup = setup_source(nb)
    out, pending = {}, None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            pending = meta["grade_id"]
        elif meta.get("grade") and pending:
            hidden = HIDDEN.search(cell.source)
            visible = HIDDEN.sub("", cell.source)
            out[pending] = (setup, visible, hidden.group(1) if hidden else "")
            pending = None
    return out


def answers_before(assignment: str, cell: str) -> list[str]:
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    out = []
    for c in nb.cells:
        meta = c.metadata.get("nbgrader", {})
        if meta.get("solution") and c.cell_type == "code":
            if meta["grade_id"] == cell:
                break
            out.append(c.source)
    return out


def rejects(assignment: str, cell: str, answer: str, part: str) -> bool:
    setup, visible, hidden = judged_by(assignment)[cell]
    ns: dict = {}
    exec(compile(setup, "<setup>", "exec"), ns)
    for src in answers_before(assignment, cell):
        exec(compile(src, "<earlier>", "exec"), ns)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT)
    try:
        exec(compile(answer, "<answer>", "exec"), ns)
        exec(compile(visible if part == "visible" else hidden, f"<{part}>", "exec"), ns)
    except Exception:  # noqa: BLE001 - any failure is a rejection, as in nbgrader
        return True
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return False


CELLS = [(a, c) for a, cells in WRONG.items() for c in cells]


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_every_hidden_block_exists_and_passes_the_solution(assignment, cell):
    setup, visible, hidden = judged_by(assignment)[cell]
    assert hidden.strip(), f"{cell}: its grade cell has no hidden tests"
    solution = next(c.source for c in nbformat.read(notebook_path("solutions", assignment), as_version=4).cells
                    if c.metadata.get("nbgrader", {}).get("grade_id") == cell)
    assert not rejects(assignment, cell, solution, "hidden")


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_hidden_tests_reject_wrong_answers(assignment, cell):
    wrong = WRONG[assignment][cell]
    caught = [mistake for mistake, src, _ in wrong if rejects(assignment, cell, src, "hidden")]
    assert caught, f"{cell}: the hidden tests accept every wrong answer in the bank"
    known = [mistake for mistake, src, hint in wrong if hint and mistake not in caught]
    assert not known, f"{cell}: the hidden tests accept these known mistakes: {known}"


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_visible_check_rejects_wrong_answers(assignment, cell):
    assert cell in CHECKS[assignment]
    caught = [m for m, src, _ in WRONG[assignment][cell] if rejects(assignment, cell, src, "visible")]
    assert caught, f"{cell}: the visible check accepts every wrong answer in the bank"
