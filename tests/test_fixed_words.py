"""The hidden tests' words are fixed, and the visible checks and the hidden tests compare values by one rule.

A reply is written by the student's code, which sees the hidden inputs. If the feedback page said how many values
are NaN, how many are wrong, where the first one is or how large the error is, a reply could choose that number and
carry the hidden inputs out, a few bits per case. So the page must read the same for every such choice: the tests
here send replies that encode a number k (k NaNs, k wrong values, a wrong value at index k, an error of size k, k
wrong counts) and require the very same feedback for every k.

The visible check (:func:`checks.core.compare`) and the hidden judge (:func:`grader.hidden.judge.tensor`)
both decide by :func:`checks.rule.judge_values`; the tests here give both every variant of a right answer
(another kind of number, another precision, an array or a list for a tensor) and a wrong one, the hidden judge after
the kernel's plain-data round trip, and require the same verdict.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from checks.answers import count_differences, plain_counts
from checks.core import compare
from checks.rule import ATOL, RTOL
from grader import hidden, limits
from grader.hidden import a01, a02, a04, judge
from grader.kernel_side import plain

SEED = 20261125
KS = [1, 2, 3, 7, 11]


def _one_text(texts: list) -> str:
    assert all(t is not None for t in texts), texts
    assert len(set(texts)) == 1, texts
    return texts[0]


def _want():
    return torch.randn(4, 6, 8, generator=torch.Generator().manual_seed(3))


def _with_nans(want, k):
    got = want.clone().reshape(-1)
    got[:k] = float("nan")
    return got.reshape(want.shape)


def _with_wrong(want, k):
    got = want.clone().reshape(-1)
    got[:k] += 1
    return got.reshape(want.shape)


def _wrong_at(want, k):
    got = want.clone().reshape(-1)
    got[k] += 1
    return got.reshape(want.shape)


def _off_by(want, k):
    got = want.clone().reshape(-1)
    got[0] += k
    return got.reshape(want.shape)


def _with_infs(want, k):
    got = want.clone().reshape(-1)
    got[:k] = float("inf")
    return got.reshape(want.shape)


ENCODINGS = {"k NaNs": _with_nans, "k infinities": _with_infs, "k wrong values": _with_wrong,
             "a wrong value at index k": _wrong_at, "a largest error of k": _off_by}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_tensor_reply_cannot_encode_a_number(encoding):
    want = _want()
    texts = [judge.tensor(ENCODINGS[encoding](want, k), want, dims=["batch", "seq", "d_model"]) for k in KS]
    text = _one_text(texts)
    assert not any(ch.isdigit() for ch in text.replace("1e-05", "").replace("0.0001", "")), text


@pytest.mark.parametrize("encoding", ["k wrong values", "a wrong value at index k", "a largest error of k"])
def test_an_exact_or_boolean_reply_cannot_encode_a_number(encoding):
    want = torch.arange(48).reshape(6, 8)
    _one_text([judge.tensor(ENCODINGS[encoding](want, k), want) for k in KS])
    _one_text([judge.tensor(ENCODINGS[encoding](want.double(), k), want.double(), exact=True) for k in KS])
    mask = torch.rand(6, 8, generator=torch.Generator().manual_seed(1)) > 0.5
    flipped = [mask.clone().reshape(-1) for _ in KS]
    for k, f in zip(KS, flipped):
        f[:k] = ~f[:k]
    _one_text([judge.tensor(f.reshape(6, 8), mask) for f in flipped])


def test_a_shape_or_dtype_reply_cannot_encode_a_number():
    want = _want()
    shapes = [judge.tensor(torch.zeros(4, 6, k), want, dims=["batch", "seq", "d_model"]) for k in KS]
    shapes += [judge.tensor(torch.zeros([2] * k), want, dims=["batch", "seq", "d_model"]) for k in KS]
    assert _one_text(shapes) == "expected shape (batch=4, seq=6, d_model=8), got another shape"
    kinds = [judge.tensor(want > 0, want)] + [judge.tensor(want.to(torch.complex64), want)]
    _one_text(kinds)
    dtypes = [judge.tensor(want.to(d), want.double(), dtype="exact") for d in (torch.float32, torch.float16,
                                                                               torch.int64, torch.int8)]
    assert _one_text(dtypes) == "expected dtype torch.float64, got another dtype"
    _one_text([judge.describe(torch.zeros([1] * k)) for k in KS])
    _one_text([judge.shape((2,) * k, (2, 2, 6, 4)) for k in KS])


def test_a_list_of_numbers_cannot_encode_a_number():
    want = [0.5 * i for i in range(12)]
    _one_text([judge.numbers([w + (1 if i < k else 0) for i, w in enumerate(want)], want) for k in KS])
    _one_text([judge.numbers([w + (k if i == 0 else 0) for i, w in enumerate(want)], want) for k in KS])
    _one_text([judge.numbers(want[:k], want) for k in KS])


def _judge_of(module, gid, what_starts):
    case = next(c for c in getattr(module, gid)(SEED) if c.what.startswith(what_starts))
    return case


def test_a_hidden_case_of_attention_says_the_same_for_every_k():
    """Through a real case: the feedback a student reads is the case's words and the judge's, whatever k."""
    case = _judge_of(a04, "ex2_attention", "attention with q (3, 5, 8)")
    q, k_, v = case.request.inputs["args"]
    want = torch.nn.functional.scaled_dot_product_attention(q, k_, v)
    for encode in ENCODINGS.values():
        _one_text([case.judge({"out": encode(want, k), "args": [q, k_, v]}) for k in KS])


def test_counts_cannot_encode_a_number():
    case = _judge_of(a01, "ex2_count_pairs", "count_pairs on 6")
    arglists = [list(a) for a in case.request.inputs["arglists"]]
    right = [a01._pair_counts(args[0]) for args in arglists]
    texts = []
    for k in KS:
        replies = []
        for n, counts in enumerate(right):
            got = dict(counts)
            if n == k % len(right):  # which vocabulary fails is the reply's choice too
                for key in list(got)[:k]:
                    got[key] += k
                got[("z", str(k))] = k
            replies.append({"out": got, "args": []})
        texts.append(case.judge(replies))
    assert "vocabularies" in _one_text(texts)


def test_a_table_by_hand_cannot_encode_a_number():
    case = next(a02.ex1_one_hot_by_hand(SEED))
    table = [[0.0] * 3 for _ in range(4)]
    _one_text([case.judge([[k if (i, j) == (k % 4, 0) else x for j, x in enumerate(r)] for i, r in enumerate(table)])
               for k in KS])
    _one_text([case.judge([[float("nan") if i < k % 4 else x for x in r] for i, r in enumerate(table)]) for k in KS])
    _one_text([case.judge(table[: 1 + k % 3]) for k in KS])


# ------------------------------------------------------------------ one rule for the visible and the hidden check

def _round_trip(value, tmp_path):
    """``value`` as the grader reads it from the kernel: written as plain data, read back (arrays become tensors)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    tree = plain.encode(value, tmp_path, limits.REPLY_BUDGET["items"])
    return plain.decode(tree, str(tmp_path), True, plain.Budget(**limits.REPLY_BUDGET))


def _variants(ref: torch.Tensor):
    """A right answer in every form a student may give it, and wrong ones."""
    out = {"itself": ref, "numpy": ref.numpy(), "list": ref.tolist(), "wrong": ref.clone()}
    if ref.dtype == torch.bool:
        out["wrong"] = ~ref
        out.update({"as int": ref.long(), "as float": ref.float(), "as uint8": ref.to(torch.uint8)})
        return out
    out["wrong"] = ref + 1
    out.update({"float64": ref.double(), "float32": ref.float(), "int64": ref.long(), "int32": ref.int(),
                "bool": ref != 0, "numpy float32": ref.float().numpy(), "numpy int": ref.long().numpy(),
                "one element off by the tolerance": ref.double() + torch.where(
                    torch.arange(ref.numel()).reshape(ref.shape) == 0, 2 * ATOL + RTOL * ref.double().abs(), 0.0)})
    if ref.is_floating_point():
        nan = ref.clone().reshape(-1)
        nan[0] = float("nan")
        out["a NaN"] = nan.reshape(ref.shape)
        out["float16"] = ref.half()
        out["a shape of one more dimension"] = ref.unsqueeze(0)
        out["a string"] = "0.5"
        out["a list of strings"] = [str(x) for x in ref.reshape(-1).tolist()]
        out["a ragged list"] = [[1.0], [1.0, 2.0]]
    return out


def _refs():
    g = torch.Generator().manual_seed(7)
    return {"float32": torch.randn(3, 4, generator=g), "float64": torch.randn(2, 5, generator=g, dtype=torch.float64),
            "whole floats": torch.randint(-3, 4, (3, 3), generator=g).float(),
            "ids": torch.randint(0, 9, (2, 6), generator=g), "mask": torch.rand(4, 4, generator=g) > 0.5,
            "one number": torch.tensor(2.5), "softmax rows": torch.softmax(torch.randn(3, 7, generator=g), -1)}


CASES = [(r, v) for r, ref in _refs().items() for v in _variants(ref)]


@pytest.mark.parametrize("ref_name,variant", CASES, ids=[f"{r}-{v}" for r, v in CASES])
def test_the_visible_check_accepts_exactly_what_the_hidden_judge_accepts(ref_name, variant, tmp_path):
    ref = _refs()[ref_name]
    got = _variants(ref)[variant]
    visible = not compare(got, ref, ["row", "column"][: ref.dim()])
    hidden_ok = judge.tensor(_round_trip(got, tmp_path), ref) is None
    assert visible == hidden_ok, (visible, hidden_ok)
    if variant in ("itself", "numpy", "list"):
        assert visible, "a right answer, as a tensor, an array or a list, passes both"
    visible_exact = not compare(got, ref, ["row", "column"][: ref.dim()], dtype=ref.dtype)
    hidden_exact = judge.tensor(_round_trip(got, tmp_path / "exact"), ref, dtype="exact") is None
    assert visible_exact == hidden_exact, (visible_exact, hidden_exact)


def test_the_rule_accepts_numbers_where_floats_are_expected_and_keeps_ids_and_masks_of_their_kind(tmp_path):
    whole = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for got in (whole.long(), whole.long().numpy(), [[1, 2], [3, 4]], whole.double()):
        assert compare(got, whole, ["row", "column"]) == []
        assert judge.tensor(_round_trip(got, tmp_path), whole) is None
    assert compare(whole > 2, whole > 2.5, ["row", "column"]) == []
    for got, ref in [(whole, whole.long()), ((whole > 2).float(), whole > 2), (whole > 2, whole)]:
        assert compare(got, ref, ["row", "column"]), (got, ref)
        kind = {torch.long: "integer", torch.bool: "boolean"}.get(ref.dtype, "floating-point")
        assert judge.tensor(got, ref) == f"expected {kind} values ({ref.dtype}), got another kind of number"


def test_the_default_tolerance_is_stated_once():
    import inspect

    assert inspect.signature(compare).parameters["atol"].default == ATOL
    assert inspect.signature(compare).parameters["rtol"].default == RTOL
    assert inspect.signature(judge.tensor).parameters["atol"].default == ATOL
    assert inspect.signature(judge.tensor).parameters["rtol"].default == RTOL


@pytest.mark.parametrize("got", [
    {("a", "b"): 2, ("b", "c"): 1}, {("a", "b"): 2.0, ("b", "c"): np.int64(1)},
    {("a", "b"): 2, ("b", "c"): 1, ("c", "a"): 0},
    {("a", "b"): 2}, {("a", "b"): 3, ("b", "c"): 1}, {("a", "b"): 2, ("b", "c"): 1, ("c", "c"): 1},
    {("a", "b"): 2, ("b", "c"): True}, {("a", "b"): 2.5, ("b", "c"): 1}, {"ab": 2, ("b", "c"): 1},
    {("a", "b", "c"): 2}, [("a", "b")],
])
def test_the_counts_of_assignment_01_are_read_by_one_rule(got):
    """The visible check of count_pairs and the hidden test read a dict of counts alike (both call
    :func:`~checks.answers.counts_form` and :func:`~checks.answers.count_differences`)."""
    want = {("a", "b"): 2, ("b", "c"): 1}
    counts, problems = plain_counts("count_pairs", got)
    visible = not problems and count_differences(counts, want) == ([], [], [])
    hidden_ok = a01._tuple_keys(got, "pairs", 2) is None and a01._same_counts(got, want, "pair") is None
    assert visible == hidden_ok


def test_every_hidden_module_reads_the_same_for_the_same_seed():
    """(A sanity check that the modules changed here still build their cases.)"""
    import conftest

    for assignment in conftest.ASSIGNMENTS:
        assert dict(hidden.cases(assignment, SEED))
