"""A reply whose structure was forged anywhere earns nothing more (assignments 01, 03 and 07 to 11): for every wrong
answer in the bank, each scored hidden case it fails still fails when any one part of its reply, up to three levels
deep, is forged (a field dropped, a list emptied or cut short, a part set to None), unless the forged part became the
solution's own (then it is the right answer, which a forger has to compute). ``test_hidden_tests`` breaks the
reply's outer form; this goes inside it (the losses of a training step, the parameters after it, the gradients).
"""

from __future__ import annotations

import pytest
import torch

from grader.judging.verdicts import problem_of
from test_hidden_tests import answers, ask

from bank import WRONG

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # a wrong answer may make PyTorch warn
PORTED = ["01_tokenization", "03_positional_encodings", "07_masking", "08_cross_attention", "09_output_head",
          "10_whole_transformer", "11_gpt_bert_vit"]
CELLS = [(a, c) for a in PORTED for c in WRONG[a]]


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
    right = [value for _, value in ask(assignment, cell, dict(answers(assignment))[cell], tmp_path / "solution")[1]]
    failing = 0
    for i, (mistake, source, _hint) in enumerate(WRONG[assignment][cell]):
        sub = tmp_path / str(i)
        sub.mkdir()
        for n, (case, (kind, value)) in enumerate(zip(*ask(assignment, cell, source, sub), strict=True)):
            if not case.scored or kind != "ok" or problem_of(case, kind, value) is None:
                continue
            failing += 1
            passed = [what for what, where, part, forged in forgeries(value)
                      if problem_of(case, "ok", forged) is None and not same(part, at(right[n], where))]
            assert not passed, f"{mistake}: {case.what}: a forged reply passes ({passed[:3]})"
    assert failing, f"{cell}: no wrong answer fails a scored case with a reply to forge"


# Wrong answers that a rewritten reply used to lift to full marks, and the rewrite: the honest reply fails a scored
# case, and so does the rewritten one.
_NO_GRAD = ("import torch\n_given = masked_attention\n\ndef masked_attention(q, k, v, mask):\n"
            "    with torch.no_grad():\n        return _given(q, k, v, mask)\n")
_CONSTANT_LOSS = ("_given = train_step\n\ndef train_step(*args, **kwargs):\n    _given(*args, **kwargs)\n"
                  "    return 1.0\n")
FINDINGS = [
    ("07_masking", "ex6_answer", _NO_GRAD, lambda r: [{**r, "grads": []}, {**r, "grads": None},
                                                       {"out": r["out"]}]),
    ("10_whole_transformer", "ex2_answer", _CONSTANT_LOSS, lambda r: [{**r, "losses": []}, {**r, "losses": [1.0]},
                                                                      {k: v for k, v in r.items() if k != "losses"}]),
]


@pytest.mark.parametrize("assignment,cell,wrapper,rewrite", FINDINGS, ids=["07-no_grad", "10-constant_loss"])
def test_rewritten_replies_of_known_attacks_still_fail(assignment, cell, wrapper, rewrite, tmp_path):
    source = dict(answers(assignment))[cell] + "\n" + wrapper
    cases, replies = ask(assignment, cell, source, tmp_path)
    failed = [(case, value) for case, (kind, value) in zip(cases, replies, strict=True)
              if case.scored and kind == "ok" and problem_of(case, kind, value)]
    assert failed, "the honest reply of the wrong answer passes"
    for case, value in failed:
        for forged in rewrite(value):
            assert problem_of(case, "ok", forged), case.what
