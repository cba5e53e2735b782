"""A reply whose structure was forged earns nothing more: for every wrong answer in the bank, each scored hidden
case it fails still fails when one part of its reply is forged (a field dropped, a list emptied or shortened, a
part set to None), as a cell that rewrites the probe's reply could do. The replies go through the same plain-data
round trip as in grading (see ``tests/test_hidden_tests.py``)."""

from __future__ import annotations

import json
import signal

import pytest

from grader import hidden
from grader.kernel_side import plain, probes
from grader.replies import read_reply
from grader.verdicts import problem_of
from test_hidden_tests import LIMIT, SEED, TimedOut, _alarm, answers, graded_by, namespace

from bank import WRONG

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # a wrong answer may make PyTorch warn
PORTED = ["07_masking", "08_cross_attention", "09_output_head", "10_whole_transformer", "11_gpt_bert_vit"]
CELLS = [(a, c) for a in PORTED for c in WRONG[a]]


def replies(assignment: str, cell: str, answer: str, tmp_path) -> list:
    """The (case, (kind, value)) pairs of the grade cell that judges ``cell`` when ``answer`` is written there."""
    cases = hidden.cases(assignment, SEED)[graded_by(assignment)[cell]]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT)
    out = []
    try:
        try:
            ns = namespace(assignment, cell, answer)
        except Exception:  # noqa: BLE001 - an answer that raises when defined answers nothing
            return []
        for i, case in enumerate(cases):
            there = tmp_path / str(i)
            there.mkdir()
            sent = plain.encode({"probe": case.request.probe, "inputs": case.request.inputs}, there)
            request = plain.decode(sent, str(there), tensors=True)
            try:
                value = probes.resolve(request["probe"])(ns, **request["inputs"])
                tree = {"ok": plain.encode(value, there)}
            except TimedOut:
                tree = {"error": "TimedOut"}
            except Exception as exc:  # noqa: BLE001 - the probe reports it, as in the kernel
                tree = {"error": f"{type(exc).__name__}: {exc}"}
            (there / "reply.json").write_text(json.dumps(tree))
            out.append((case, tuple(read_reply(there)[:2])))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return out


def forgeries(value, depth: int = 3):
    """(what, copy of ``value`` with one part of its structure forged), for the parts ``depth`` levels deep."""
    if depth == 0:
        return
    if isinstance(value, dict):
        for key in value:
            yield f"without {key!r}", {k: v for k, v in value.items() if k != key}
            yield f"{key!r} set to None", {**value, key: None}
            for what, forged in forgeries(value[key], depth - 1):
                yield f"{key!r}: {what}", {**value, key: forged}
    elif isinstance(value, (list, tuple)):
        if value:
            yield "emptied", []
            yield "its last item dropped", list(value[:-1])
        for i, item in enumerate(value[:4]):
            for what, forged in forgeries(item, depth - 1):
                yield f"[{i}]: {what}", [*value[:i], forged, *value[i + 1:]]


def test_forgeries_reach_every_part():
    reply = {"out": [1, 2], "args": [{"a": 1}]}
    forged = [what for what, _ in forgeries(reply)]
    assert "without 'args'" in forged and "'args': emptied" in forged and "'out': its last item dropped" in forged
    assert "'args': [0]: without 'a'" in forged


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_forged_replies_never_pass_a_wrong_answer(assignment, cell, tmp_path):
    sources = [("the solution", dict(answers(assignment))[cell])] + [(m, s) for m, s, _ in WRONG[assignment][cell]]
    failing = 0
    for i, (mistake, source) in enumerate(sources):
        sub = tmp_path / str(i)
        sub.mkdir()
        for case, (kind, value) in replies(assignment, cell, source, sub):
            if not case.scored or kind != "ok" or problem_of(case, kind, value) is None:
                continue
            failing += 1
            passed = [what for what, forged in forgeries(value) if problem_of(case, "ok", forged) is None]
            assert not passed, f"{mistake}: {case.what}: a forged reply passes ({passed[:3]})"
    assert failing, f"{cell}: no wrong answer fails a scored case with a reply to forge"


def test_reported_only_names_mistakes_of_the_bank():
    from bank import REPORTED_ONLY
    for assignment, entries in REPORTED_ONLY.items():
        for cell, mistake in entries:
            assert mistake in [m for m, _, _ in WRONG[assignment].get(cell, [])], (assignment, cell, mistake)
