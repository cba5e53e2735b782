"""Assignment 12's hidden tests against forged replies: a kernel that rewrites the form of a reply (drops a
field, shortens or empties a list, empties ``args``) never turns a wrong answer's failing case into a pass."""

from __future__ import annotations

import pytest

from grader.judging.verdicts import problem_of
from test_hidden_tests import answers, ask

from bank import WRONG

ASSIGNMENT = "12_from_2017_to_today"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def forgeries(value, depth: int = 3, args: bool = True):
    """Every reply of the same content with its form changed in one place: a dict without one of its keys, a
    list or tuple one item shorter or empty, ``args`` emptied (unless ``args`` is False: the arguments after
    the call earn nothing, so a correct reply may change them freely), the same one level further down."""
    if depth == 0:
        return
    if isinstance(value, dict):
        for key in value:
            yield {k: v for k, v in value.items() if k != key}
            if key == "args" and not args:
                continue
            if key == "args":
                yield {**value, "args": []}
            for inner in forgeries(value[key], depth - 1, args):
                yield {**value, key: inner}
    elif isinstance(value, (list, tuple)) and value:
        kind = type(value)
        yield kind(value[:-1])
        yield kind()
        for i, item in enumerate(value):
            for inner in forgeries(item, depth - 1, args):
                yield kind([*value[:i], inner, *value[i + 1:]])


def replies(cell: str, source: str, tmp_path):
    """The hidden cases that judge ``cell`` and the replies for ``source``, through the grading round trip
    (``test_hidden_tests.ask``): an answer that cannot be defined answers every case with an error."""
    return ask(ASSIGNMENT, cell, source, tmp_path)


WRONGS = [(cell, mistake, src) for cell, wrongs in WRONG[ASSIGNMENT].items() for mistake, src, _ in wrongs]


@pytest.mark.parametrize("cell,mistake,source", WRONGS, ids=[f"{c}-{m}" for c, m, _ in WRONGS])
def test_forging_the_form_of_a_reply_never_passes_a_failing_case(cell, mistake, source, tmp_path):
    cases, got = replies(cell, source, tmp_path)
    failing = 0
    for case, (kind, reply) in zip(cases, got, strict=True):
        if not case.scored or problem_of(case, kind, reply) is None or kind != "ok":
            continue
        failing += 1
        for forged in forgeries(reply):
            assert problem_of(case, "ok", forged) is not None, f"{case.what}: a forged reply passes"
    assert failing or any(kind != "ok" for kind, _ in got), f"{mistake}: no scored case fails"


def test_the_solutions_replies_pass_and_their_forgeries_fail(tmp_path):
    """The forgeries are real changes: every one of the solution's replies passes, and every forgery of it fails."""
    for cell, source in answers(ASSIGNMENT):
        (tmp_path / cell).mkdir()
        cases, got = replies(cell, source, tmp_path / cell)
        for case, (kind, reply) in zip(cases, got, strict=True):
            assert kind == "ok" and problem_of(case, kind, reply) is None, case.what
            for forged in forgeries(reply, args=False):
                assert problem_of(case, "ok", forged) is not None, f"{case.what}: a forged correct reply passes"
