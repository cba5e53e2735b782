"""A reply whose structure was forged earns nothing more: for every wrong answer in the bank, each scored hidden
case it fails still fails when one part of its reply is forged (a field dropped, a list emptied or shortened, a
part set to None), as a cell that rewrites the probe's reply could do. The replies go through the same plain-data
round trip as in grading (see ``tests/test_hidden_tests.py``)."""

from __future__ import annotations

import json
import signal

import pytest
import torch

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


def forgeries(value, depth: int = 3, path: tuple = ()):
    """(what, path, part, copy of ``value`` with one part of its structure forged): the part at ``path`` is now
    ``part``. Parts ``depth`` levels deep are forged."""
    if depth == 0:
        return
    if isinstance(value, dict):
        for key in value:
            part = {k: v for k, v in value.items() if k != key}
            yield f"without {key!r}", path, part, part
            part = {**value, key: None}
            yield f"{key!r} set to None", path, part, part
            for what, where, inner, forged in forgeries(value[key], depth - 1, (*path, key)):
                yield f"{key!r}: {what}", where, inner, {**value, key: forged}
    elif isinstance(value, (list, tuple)):
        if value:
            yield "emptied", path, [], []
            yield "its last item dropped", path, list(value[:-1]), list(value[:-1])
        for i, item in enumerate(value[:4]):
            for what, where, inner, forged in forgeries(item, depth - 1, (*path, i)):
                yield f"[{i}]: {what}", where, inner, [*value[:i], forged, *value[i + 1:]]


def at(value, path: tuple):
    """The part of ``value`` at ``path``, or a marker that matches nothing when there is none."""
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return object()
    return value


def same(a, b) -> bool:
    """Equal plain data (tensors equal in shape, dtype and values)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and bool(torch.equal(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return type(a) is type(b) and a == b


def test_forgeries_reach_every_part():
    reply = {"out": [1, 2], "args": [{"a": 1}]}
    forged = {what: (where, part) for what, where, part, _ in forgeries(reply)}
    assert forged["without 'args'"] == ((), {"out": [1, 2]}) and forged["'args': emptied"] == (("args",), [])
    assert forged["'out': its last item dropped"] == (("out",), [1]) and "'args': [0]: without 'a'" in forged
    assert same(at(reply, ("args", 0)), {"a": 1}) and not same(at(reply, ("out", 5)), None)


@pytest.mark.parametrize("assignment,cell", CELLS, ids=[f"{a[:2]}-{c}" for a, c in CELLS])
def test_forged_replies_never_pass_a_wrong_answer(assignment, cell, tmp_path):
    """A forgery may pass only where it turned the part it forged into the solution's own (then it sent the right
    answer, which any reply may do)."""
    (tmp_path / "solution").mkdir()
    right = [value for _, (_, value) in replies(assignment, cell, dict(answers(assignment))[cell],
                                                tmp_path / "solution")]
    failing = 0
    for i, (mistake, source, _hint) in enumerate(WRONG[assignment][cell]):
        sub = tmp_path / str(i)
        sub.mkdir()
        for n, (case, (kind, value)) in enumerate(replies(assignment, cell, source, sub)):
            if not case.scored or kind != "ok" or problem_of(case, kind, value) is None:
                continue
            failing += 1
            passed = [what for what, where, part, forged in forgeries(value)
                      if problem_of(case, "ok", forged) is None and not same(part, at(right[n], where))]
            assert not passed, f"{mistake}: {case.what}: a forged reply passes ({passed[:3]})"
    assert failing, f"{cell}: no wrong answer fails a scored case with a reply to forge"


def test_reported_only_names_mistakes_of_the_bank():
    from bank import REPORTED_ONLY
    for assignment, entries in REPORTED_ONLY.items():
        for cell, mistake in entries:
            assert mistake in [m for m, _, _ in WRONG[assignment].get(cell, [])], (assignment, cell, mistake)
