"""The hidden tests decide right from wrong, outside the kernel: each passes the solution and rejects
the bank's wrong answers (``tests/bank``), through the same plain-data round trip as in grading.

The probes run here in this process on a namespace built like the student's kernel (the setup cell,
the earlier correct answers, then the answer under test); their replies go through
``grader.kernel_side.plain`` (files, ``.npy`` without pickle), are read by ``grader.running.replies`` and judged by
``grader.judging.verdicts``. A reply that a hostile kernel rewrote into another form must not pass a wrong answer.
"""

from __future__ import annotations

import functools
import importlib
import json
import signal

import nbformat
import pytest

from grader import hidden, limits
from grader.judging.verdicts import judge_cell, problem_of
from grader.kernel_side import plain, probes
from grader.running.replies import read_reply
from layout import exercises
from layout.nbmeta import grade_id, is_graded, is_solution

from bank import CHECKS, RIGHT_CASES, WRONG, promises
from conftest import notebook_path, setup_source

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # a wrong answer may make PyTorch warn
LIMIT = 20  # seconds; an answer that runs longer fails, as a cell stopped by the grader's timeout would
SEED = 20261125  # any seed: a grading run draws a secret one


class TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimedOut()


@functools.cache
def solution(assignment: str) -> nbformat.NotebookNode:
    """The solution notebook, read once per test process (nothing here changes it)."""
    return nbformat.read(notebook_path("solutions", assignment), as_version=4)


@functools.cache
def cases_of(assignment: str) -> dict:
    """The hidden cases for ``SEED``, made once per test process: a case is only read (its request reaches the
    answer through the plain-data round trip, as a copy), so every test may share it."""
    return hidden.cases(assignment, SEED)


def graded_by(assignment: str) -> dict[str, str]:
    """answer cell -> the grade cell that judges it (the next grade cell)."""
    nb = solution(assignment)
    out, pending = {}, None
    for cell in nb.cells:
        if is_solution(cell) and cell.cell_type == "code":
            pending = grade_id(cell)
        elif is_graded(cell) and pending:
            out[pending], pending = grade_id(cell), None
    return out


def answers(assignment: str) -> list[tuple[str, str]]:
    nb = solution(assignment)
    return [(grade_id(c), c.source) for c in nb.cells if is_solution(c) and c.cell_type == "code"]


def namespace(assignment: str, cell: str, answer: str) -> dict:
    """The student's namespace: setup, the correct answers before ``cell``, then ``answer``."""
    ns: dict = {}
    exec(compile(setup_source(solution(assignment)), "<setup>", "exec"), ns)
    for gid, src in answers(assignment):
        if gid == cell:
            break
        exec(compile(src, "<earlier>", "exec"), ns)
    exec(compile(answer, "<answer>", "exec"), ns)
    return ns


def ask(assignment: str, cell: str, answer: str, tmp_path) -> tuple[list, list]:
    """The cases of the grade cell that judges ``cell``, and the replies when ``answer`` is written there."""
    gid = graded_by(assignment)[cell]
    cases = cases_of(assignment)[gid]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT)
    replies = []
    try:
        try:
            ns = namespace(assignment, cell, answer)
        except Exception as exc:  # noqa: BLE001 - an answer that raises when defined answers nothing
            return cases, [("error", repr(exc))] * len(cases)
        for i, case in enumerate(cases):
            there = tmp_path / f"{gid}-{i}"
            there.mkdir()
            sent = plain.encode({"probe": case.request.probe, "inputs": case.request.inputs}, there,
                                limits.REQUEST_BUDGET["items"])
            request = plain.decode(sent, str(there), True, plain.Budget(**limits.REQUEST_BUDGET))
            try:
                name = request["probe"]
                run = probes.resolve(name)
                value = run(ns, **request["inputs"])
                tree = {"ok": plain.encode(value, there, limits.REPLY_BUDGET["items"])}
            except TimedOut:
                tree = {"error": "TimedOut"}
            except Exception as exc:  # noqa: BLE001 - the probe reports it, as in the kernel
                tree = {"error": f"{type(exc).__name__}: {exc}"}
            (there / "reply.json").write_text(json.dumps(tree))
            replies.append(read_reply(there)[:2])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return cases, replies


def judge_replies(cases: list, replies: list, max_points: float):
    """The grader's verdict (:func:`grader.judging.verdicts.judge_cell`) for replies given as (kind, value) pairs, as
    ``grader/running/run.py`` judges them one by one; a missing one counts as no reply."""
    replies = list(replies)[: len(cases)]
    replies += [("missing", "no reply")] * (len(cases) - len(replies))
    return judge_cell(cases, [problem_of(c, k, r) for c, (k, r) in zip(cases, replies, strict=True)], max_points)


def verdict(assignment: str, cell: str, answer: str, tmp_path):
    """The verdict of the grade cell that judges ``cell`` when ``answer`` is written there."""
    return judge_replies(*ask(assignment, cell, answer, tmp_path), 1.0)


def reported_only(assignment: str) -> set:
    """The bank's ``REPORTED_ONLY``: (answer cell, mistake) pairs whose only fault no value the grader can compare with
    a reference of its own shows (the bank says why beside each): the hidden tests must report them, and cannot score
    them."""
    return getattr(importlib.import_module(f"bank.a{assignment[:2]}"), "REPORTED_ONLY", set())


CELLS = [(a, c) for a, cells in WRONG.items() for c in cells]


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_hidden_tests_pass_the_solution(assignment, cell, tmp_path):
    gid = graded_by(assignment)[cell]
    assert cases_of(assignment)[gid], f"{gid}: no hidden tests"
    solution = dict(answers(assignment))[cell]
    result = verdict(assignment, cell, solution, tmp_path)
    assert not result.failures, result.failures


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_hidden_tests_reject_wrong_answers(assignment, cell, tmp_path):
    wrong = WRONG[assignment][cell]
    reported = {mistake for c, mistake in reported_only(assignment) if c == cell}
    assert reported <= {mistake for mistake, _, _ in wrong}, f"{cell}: REPORTED_ONLY names mistakes not in the bank"
    caught = []
    for i, (mistake, src, _hint) in enumerate(wrong):
        sub = tmp_path / str(i)
        sub.mkdir()
        result = verdict(assignment, cell, src, sub)
        if mistake in reported:
            assert result.reported and not result.failures, (mistake, result)
        elif result.failures:
            caught.append(mistake)
    assert caught, f"{cell}: the hidden tests accept every wrong answer in the bank"
    known = [mistake for mistake, src, hint in wrong if hint and mistake not in caught and mistake not in reported]
    assert not known, f"{cell}: the hidden tests accept these known mistakes: {known}"


# The wrong answers whose only fault the hidden tests once reported without scoring (the bank's former
# REPORTED_ONLY): each now fails a scored case, whose reply is values the grader compares with its own reference, and
# the kernel's report of the fault stays beside it where there is one. (An input changed in place that the text says is
# not changed is itself scored now: no report is left beside it.)
FORMERLY_REPORTED = [
    ("01_tokenization", "ex2_answer", "empties the input", False),
    ("01_tokenization", "ex3_answer", "changes the input", False),
    ("03_positional_encodings", "ex5_answer", "table as a Parameter", True),
    ("09_output_head", "ex3_answer", "changes the caller's prefix", False),
    ("09_output_head", "ex3_answer", "two calls per token", True),
    ("09_output_head", "ex4_answer", "entries of size 1", True),
    ("09_output_head", "ex4_answer", "an own matrix kept besides the tied one", True),
    ("10_whole_transformer", "ex3_answer", "attribute misnamed", True),
    ("11_gpt_bert_vit", "ex3_answer", "in place", False),
]


@pytest.mark.parametrize("assignment,cell,mistake,still_reported", FORMERLY_REPORTED,
                         ids=[f"{a[:2]}-{c}-{m}" for a, c, m, _ in FORMERLY_REPORTED])
def test_formerly_reported_mistakes_now_cost_points(assignment, cell, mistake, still_reported, tmp_path):
    source = next(src for m, src, _ in WRONG[assignment][cell] if m == mistake)
    assert (cell, mistake) not in reported_only(assignment)
    result = verdict(assignment, cell, source, tmp_path)
    assert result.failures and result.points < result.max_points, result
    if still_reported:
        assert result.reported, "the kernel's report of the fault is gone"


# Assignments whose hidden tests read replies strictly (grader.hidden.judge.fields/items); a ported module joins.
STRICT = {"00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "13", "14"}


def forgeries(reply):
    """The reply a probe wrote, with its form broken: wrapped in a list or a call's reply, each field dropped,
    ``args`` emptied, a list of replies emptied or cut short by one, and the same inside that list's first reply. The
    values computed stay as they were (cutting a wrong list of ids short could make it right, which a forger has to
    compute)."""
    yield [reply]
    yield {"out": reply, "args": []}
    yield from _broken(reply)


def _broken(reply):
    if isinstance(reply, dict):
        for key in reply:
            yield {k: v for k, v in reply.items() if k != key}
        if "args" in reply:
            yield {**reply, "args": []}
    elif isinstance(reply, list) and reply and all(isinstance(r, dict) for r in reply):
        yield []
        yield reply[:-1]
        for forged in _broken(reply[0]):
            yield [forged, *reply[1:]]


STRICT_CELLS = [(a, c) for a, c in CELLS if a[:2] in STRICT]


@pytest.mark.parametrize("assignment,cell", STRICT_CELLS, ids=[f"{a[:2]}-{c}" for a, c in STRICT_CELLS])
def test_forged_replies_never_pass_a_wrong_answer(assignment, cell, tmp_path):
    """A kernel that rewrites a wrong answer's reply into another form (a field dropped, a list cut short, ``args``
    emptied) gets no scored case that the honest reply failed: the judges demand the probe's exact form. (A cell that
    only reads a value the student bound has no probe's form to break: its value is forged like any wrong answer.)"""
    forged_some = all(c.request.probe == "value" for c in cases_of(assignment)[graded_by(assignment)[cell]])
    for i, (mistake, src, _hint) in enumerate(WRONG[assignment][cell]):
        sub = tmp_path / str(i)
        sub.mkdir()
        cases, replies = ask(assignment, cell, src, sub)
        for case, (kind, reply) in zip(cases, replies, strict=True):
            honest_fails = kind == "ok" and problem_of(case, kind, reply) is not None
            if case.request.probe == "value" or not case.scored or not honest_fails:
                continue
            for forged in forgeries(reply):
                forged_some = True
                assert problem_of(case, "ok", forged), (mistake, case.what)
    assert forged_some, f"{cell}: no wrong answer in the bank gave a probe's reply to forge"


@pytest.mark.parametrize("assignment,cell,what,source", RIGHT_CASES,
                         ids=[f"{c[0][:2]}-{c[1]}-{c[2]}" for c in RIGHT_CASES])
def test_hidden_tests_pass_correct_alternatives(assignment, cell, what, source, tmp_path):
    """Another correct answer (another kind of number, another dtype, an input changed in place) earns the points."""
    result = verdict(assignment, cell, source, tmp_path)
    assert not result.failures, result.failures


def _changing_cells():
    """The cells of a function or a module whose text says nothing about its inputs (the map's ``keeps`` is empty)."""
    out = []
    for assignment, cells in CHECKS.items():
        sources, keeps = dict(answers(assignment)), {e.answer: e.keeps for e in exercises.of(assignment)}
        out += [(assignment, cell) for cell, (_, name) in cells.items()
                if promises.kind_of(sources[cell], name) and not keeps[cell]]
    return out


CHANGING = _changing_cells()


@pytest.mark.parametrize("assignment,cell", CHANGING, ids=[f"{a[:2]}-{c}" for a, c in CHANGING])
def test_inputs_changed_in_place_are_allowed_where_the_text_says_nothing(assignment, cell, tmp_path):
    """An answer that changes its inputs in place passes the visible check and the hidden tests where the exercise's
    text does not say they are not changed (where it does, tests/test_exercise_promises.py takes the points)."""
    check, name = CHECKS[assignment][cell]
    source = promises.broken(dict(answers(assignment))[cell], name, "keeps")
    result = verdict(assignment, cell, source, tmp_path)
    assert not result.failures, result.failures
    exec(f"{check}({name})", namespace(assignment, cell, source))


def test_every_grade_cell_has_hidden_tests():
    import conftest
    for assignment in conftest.ASSIGNMENTS:
        graded = [grade_id(c) for c in solution(assignment).cells if is_graded(c)]
        module = hidden.module_for(assignment)
        assert list(cases_of(assignment)) == graded, assignment
        assert module.ASSIGNMENT == assignment


def test_hidden_tests_never_appear_in_the_notebooks():
    """One place for each hidden test: the grader's module, not a block in the solution notebook."""
    import conftest
    for assignment in conftest.ASSIGNMENTS:
        text = notebook_path("solutions", assignment).read_text()
        assert "BEGIN HIDDEN TESTS" not in text, assignment


def _inputs(case, folder):
    folder.mkdir(exist_ok=True)
    tree = plain.encode(case.request.inputs, folder, limits.REQUEST_BUDGET["items"])
    return tree, {f.name: f.read_bytes() for f in folder.iterdir()}


def test_hidden_inputs_are_the_same_for_the_same_seed(tmp_path):
    """A regrade with the run's recorded seed asks every student the same questions."""
    import conftest
    for assignment in conftest.ASSIGNMENTS:
        for (gid, a), (_, b) in zip(hidden.all_cases(assignment, SEED), hidden.all_cases(assignment, SEED),
                                    strict=True):
            (tmp_path / "a").mkdir(exist_ok=True)
            (tmp_path / "b").mkdir(exist_ok=True)
            ta = plain.encode(a.request.inputs, tmp_path / "a", limits.REQUEST_BUDGET["items"])
            tb = plain.encode(b.request.inputs, tmp_path / "b", limits.REQUEST_BUDGET["items"])
            assert ta == tb and a.what == b.what, gid
            for f in (tmp_path / "a").iterdir():
                assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), gid


def test_hidden_inputs_change_with_the_seed(tmp_path):
    """Another seed, other questions: a table of one run's (input, output) pairs answers no other run's. Exempt:
    grade cells that only read a value the student wrote (``reads``) and those a module names in its ``FIXED``
    (questions fixed by the lectures or the exercise's text, worked by hand)."""
    import conftest
    for assignment in conftest.ASSIGNMENTS:
        one, two = cases_of(assignment), hidden.cases(assignment, SEED + 1)
        fixed = getattr(hidden.module_for(assignment), "FIXED", set())
        for gid in one:
            if gid in fixed or all(c.request.probe == "value" for c in one[gid]):
                continue
            a = [_inputs(c, tmp_path / f"{gid}-a{i}") for i, c in enumerate(one[gid])]
            b = [_inputs(c, tmp_path / f"{gid}-b{i}") for i, c in enumerate(two[gid])]
            assert a != b, f"{assignment} {gid}: the same questions for two seeds"


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_visible_check_rejects_wrong_answers(assignment, cell):
    assert cell in CHECKS[assignment]
    check, name = CHECKS[assignment][cell]
    caught = []
    for mistake, src, _ in WRONG[assignment][cell]:
        try:
            ns = namespace(assignment, cell, src)
            exec(f"{check}({name})", ns)
        except Exception:  # noqa: BLE001 - any failure is a rejection
            caught.append(mistake)
    assert caught, f"{cell}: the visible check accepts every wrong answer in the bank"
