"""The text is the contract: what an exercise's text promises about its answer besides the values (its inputs are not
changed, the dtype and the shape of its result, a device) is held by its visible check and by its hidden tests alike,
and breaking it costs the exercise's points.

The promises are read from each exercise's text (its ``exN_text`` cell): the inputs it says are not changed and the
dtype it gives the result must be those its row of the map lists (``keeps``, ``dtype_of`` in layout/exercises.py), both
ways. For each promise, the solution made to break that promise alone (``tests/bank/promises.py``) must fail the
visible check with the promise's words (``checks/rule.py``) and lose the exercise's points in the hidden
tests, with the same words.
"""

from __future__ import annotations

import ast
import functools
import re

import nbformat
import pytest

import checks
from checks.rule import dtype_words, kept_words
from layout import exercises
from layout.nbmeta import grade_id
from layout.paths import assignments, notebook_path
from test_hidden_tests import answers, namespace, verdict

from bank import promises

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # a broken answer may make PyTorch warn

CHANGE = re.compile(r"(?i)\b(?:do not|don't|never|without) (?:chang|modif)\w*([^.:;]*)")
SAYS_KEPT = re.compile(r"(?i)\bin place\b|\b(?:is|are) not (?:changed|modified)\b|\bas (?:it|they) (?:was|were) given")
NAMED = re.compile(r"`([A-Za-z_]\w*)`")
DTYPE_OF = re.compile(r"\bdtype of `(\w+)`")
BOOL = re.compile(r"dtype `torch·bool`|`torch·bool` tensor|\bboolean tensor")
DEVICE = re.compile(r"(?i)\b(?:device|cuda|gpu|cpu)\b")
RESULT = re.compile(r"(?i)\b(?:return|returns|returning|the result (?:is|has)|turns\b[^;]*?\binto|maps\b[^;]*?\bto)\b")
SHAPE = re.compile(r"(?i)\bshape\b|\b0-dimensional\b|`\((?:batch|···|seq|T|d|heads|n_)")
CALLED = re.compile(r"`(\w+)\(")


@functools.cache
def texts(assignment: str) -> dict[str, str]:
    """answer cell -> the text of its exercise, on one line (``ex2_text`` goes with ``ex2_answer``)."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    return {grade_id(c).replace("_text", "_answer"): " ".join(c.source.split()) for c in nb.cells
            if c.cell_type == "markdown" and (grade_id(c) or "").endswith("_text")}


def parameters(assignment: str, row: exercises.Exercise) -> set[str]:
    """The inputs of the answer: the parameters of the function it defines, or of its module's ``forward``."""
    tree = ast.parse(dict(answers(assignment))[row.answer])
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in (row.defines, "forward")]
    return {a.arg for n in defs for a in [*n.args.args, *n.args.kwonlyargs] if a.arg != "self"}


def kept_inputs(text: str, inputs: set[str]) -> set[str]:
    """The inputs the text says are not changed: those named right after "do not change", "without changing"."""
    return {n for m in CHANGE.finditer(text) for n in NAMED.findall(m.group(1)) if n in inputs}


def results(text: str, defines: str) -> list[str]:
    """What the sentences of the text that say what the answer ``defines`` returns (not what a function it is handed
    returns) say after their verb; the dots of code in backticks do not end a sentence."""
    text = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(".", "·").replace(";", ","), text)
    found = []
    for sentence in re.split(r"[.;|]\s|\s-\s", text):  # sentences, table cells, items of a list
        verb = RESULT.search(sentence)
        if verb and all(name in (defines, "forward") for name in CALLED.findall(sentence[:verb.start()])):
            found.append(sentence[verb.end():])
    return found


def promised_dtype(text: str, inputs: set[str], defines: str) -> set[str]:
    """The inputs whose dtype the text says the result has, and ``torch.bool`` for a result it says is boolean."""
    boolean = any(BOOL.search(said) for said in results(text, defines))
    return {n for n in DTYPE_OF.findall(text) if n in inputs} | ({"torch.bool"} if boolean else set())


def promises_shape(text: str, defines: str) -> bool:
    """Whether the text gives the result a shape."""
    return any(SHAPE.search(said) for said in results(text, defines))


ROWS = [(a, e) for a in assignments() for e in exercises.of(a)]
IDS = [f"{a[:2]}-{e.answer}" for a, e in ROWS]


@pytest.mark.parametrize("assignment,row", ROWS, ids=IDS)
def test_the_map_lists_every_promise_of_the_text_and_no_other(assignment, row):
    text, inputs = texts(assignment)[row.answer], parameters(assignment, row)
    assert kept_inputs(text, inputs) == set(row.keeps), (
        f"{row.graded}: the text says these inputs are not changed: {sorted(kept_inputs(text, inputs))}; the map's "
        f"row keeps {sorted(row.keeps)} (hold the promise in the visible check and the hidden tests, and list it)")
    found = promised_dtype(text, inputs, row.defines)
    assert found == ({row.dtype_of} - {""}), (
        f"{row.graded}: the text gives the result the dtype {sorted(found)}; the map's row says "
        f"{row.dtype_of or 'none'}")


@pytest.mark.parametrize("assignment,row", ROWS, ids=IDS)
def test_every_promise_about_inputs_or_devices_is_one_the_walk_reads(assignment, row):
    """A sentence that says an input stays as it was names the input right after "do not change" (so that the walk
    above reads it), and no text promises a device: nothing holds one."""
    text, inputs = texts(assignment)[row.answer], parameters(assignment, row)
    read = [m.group(0) for m in CHANGE.finditer(text) if kept_inputs(m.group(0), inputs)]
    unread = [m.group(0) for m in SAYS_KEPT.finditer(text) if not any(m.group(0) in r for r in read)]
    assert not unread, f"{row.graded}: a promise about the inputs that names none right after 'do not change': {unread}"
    assert not DEVICE.search(text), f"{row.graded}: the text promises a device, which no check holds"


def _held(assignment, row, promise: str, words: list[str], tmp_path) -> None:
    """The solution made to break ``promise`` alone fails the visible check and loses the points in the hidden tests,
    each saying one of ``words``."""
    check, name = row.check, row.defines
    source = promises.broken(dict(answers(assignment))[row.answer], name, promise)
    with pytest.raises(checks.CheckFailed) as failed:
        exec(f"{check}({name})", namespace(assignment, row.answer, source))
    assert any(w in str(failed.value) for w in words), f"the visible check does not say {words}:\n{failed.value}"
    result = verdict(assignment, row.answer, source, tmp_path)
    assert result.points == 0, f"the hidden tests give the points: {result}"
    assert any(w in f for f in result.failures for w in words), f"no scored failure says {words}: {result.failures}"


KEEPS = [(a, e) for a, e in ROWS if e.keeps]
DTYPES = [(a, e) for a, e in ROWS if e.dtype_of]
SHAPES = [(a, e) for a, e in ROWS if promises_shape(texts(a)[e.answer], e.defines)]


@pytest.mark.parametrize("assignment,row", KEEPS, ids=[f"{a[:2]}-{e.answer}" for a, e in KEEPS])
def test_inputs_changed_in_place_cost_the_points(assignment, row, tmp_path):
    _held(assignment, row, "keeps", [kept_words(n) for n in row.keeps], tmp_path)


@pytest.mark.parametrize("assignment,row", DTYPES, ids=[f"{a[:2]}-{e.answer}" for a, e in DTYPES])
def test_a_result_of_another_dtype_costs_the_points(assignment, row, tmp_path):
    words = ["torch.bool"] if row.dtype_of == "torch.bool" else [dtype_words(row.dtype_of)]
    _held(assignment, row, "dtype", words, tmp_path)


@pytest.mark.parametrize("assignment,row", SHAPES, ids=[f"{a[:2]}-{e.answer}" for a, e in SHAPES])
def test_a_result_of_another_shape_costs_the_points(assignment, row, tmp_path):
    _held(assignment, row, "shape", ["shape"], tmp_path)


def test_the_walk_reads_promises_as_written():
    """The readers on sentences written for them, and on ones that promise nothing."""
    inputs = {"labels", "prefix", "src", "tgt", "mask", "q"}
    assert kept_inputs("Do not change `labels` in place: the batch comes back.", inputs) == {"labels"}
    assert kept_inputs("returns the logits, without changing `src` or `tgt` in place.", inputs) == {"src", "tgt"}
    assert kept_inputs("The sublayers are given in `__init__`; do not change it.", inputs) == set()
    assert kept_inputs("`prefix` is the list of ids to start from. Do not change it.", inputs) == set()
    assert promised_dtype("the result is `(..., T_q, d_v)`, in the dtype of `q`.", inputs, "f") == {"q"}
    assert promised_dtype("`f(ids)` returns a `torch.bool` tensor `(batch, seq, seq)`", inputs, "f") == {"torch.bool"}
    assert promised_dtype("`mask` is a boolean tensor. Return the output.", inputs, "f") == set()
    assert promised_dtype("`ids` is an integer tensor; `E` is a float tensor", inputs, "f") == set()
    assert promises_shape("Write `f(x)` that returns a tensor of shape `(batch, d)`.", "f")
    assert not promises_shape("`next_logits(ids)` returns a tensor of shape `(vocab,)`. Return a list.", "greedy")
    assert not promises_shape("Return a dict that maps each pair of symbols `(a, b)` to its count.", "count_pairs")
