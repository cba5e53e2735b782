"""Masks (chapter 7) against hand computations, the lecture's tables and PyTorch's own conventions."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import transformer as T
from transformer.interop import copy_multihead
from transformer.masks import causal_padding_mask, fully_masked_rows, masked_softmax, padding_mask

ATOL = 1e-5
PAD = 0


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------- the causal mask


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_causal_mask_is_the_complement_of_pytorchs_square_subsequent_mask(n):
    # PyTorch's additive mask: 0 where allowed, -inf above the diagonal (the future).
    theirs = nn.Transformer.generate_square_subsequent_mask(n)
    assert torch.equal(T.causal_mask(n), ~torch.isinf(theirs))


def test_causal_mask_is_the_lectures_table():
    # The lecture's 5 x 5 table: q_i . k_j for j <= i, -inf above the diagonal.
    allowed = [[j <= i for j in range(5)] for i in range(5)]
    assert T.causal_mask(5).tolist() == allowed
    assert T.causal_mask(5).dtype == torch.bool


def test_softmax_of_a_masked_row_by_hand():
    # [2, 1, -inf, -inf]: e^-inf = 0, so the weights are e^2 and e^1 over e^2 + e^1, then two zeros.
    mask = T.causal_mask(4)[1]  # query 1 may see keys 0 and 1
    scores = torch.tensor([2.0, 1.0, 5.0, -3.0]).masked_fill(~mask, float("-inf"))
    e = math.e
    expected = torch.tensor([e / (e + 1), 1 / (e + 1), 0.0, 0.0])  # 0.7311, 0.2689, 0, 0
    torch.testing.assert_close(scores.softmax(dim=0), expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(expected[:2], torch.tensor([0.7311, 0.2689]), atol=1e-4, rtol=0)


def test_masked_worked_example_by_hand():
    # Chapter 4's example ("ate", "an", "apple") with the causal mask. Scaled scores QK^T / sqrt(2):
    #   [[sqrt2, 0, sqrt2], [sqrt2, sqrt2, 2 sqrt2], [0, 0, 0]]; masked: the upper triangle is -inf.
    #   row 0: only key 0 -> [1, 0, 0]; row 1: two equal scores -> [0.5, 0.5, 0]; row 2: [1/3, 1/3, 1/3].
    #   outputs: v1 = (1, 0); (v1 + v2) / 2 = (1.5, 1.5); (v1 + v2 + v3) / 3 = (1, 4/3).
    q = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]]])
    k = torch.tensor([[[1.0, 1.0], [1.0, -1.0], [2.0, 0.0]]])
    v = torch.tensor([[[1.0, 0.0], [2.0, 3.0], [0.0, 1.0]]])
    out, w = T.attention_with_weights(q, k, v, T.causal_mask(3))
    torch.testing.assert_close(w[0], torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]]),
                               atol=1e-6, rtol=0)
    torch.testing.assert_close(out[0], torch.tensor([[1.0, 0.0], [1.5, 1.5], [1.0, 4 / 3]]), atol=1e-6, rtol=0)


def test_one_masked_pass_equals_step_by_step_runs_in_pytorch():
    # Teacher forcing in one pass: with the causal mask, position t's output equals a run on the prefix 0..t.
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = randn(2, 6, 8)
    with torch.no_grad():
        full, _ = mha(x, x, x, attn_mask=~T.causal_mask(6), need_weights=False)
        for t in range(6):
            prefix = x[:, :t + 1]
            step, _ = mha(prefix, prefix, prefix, need_weights=False)
            torch.testing.assert_close(full[:, t], step[:, -1], atol=ATOL, rtol=0)


# ----------------------------------------------------------- padding masks


def test_padding_mask_shape_and_values():
    ids = torch.tensor([[1, 4, 5, 2], [1, 4, 0, 0]])
    m = padding_mask(ids, PAD)
    assert m.shape == (2, 1, 4) and m.dtype == torch.bool
    assert m.tolist() == [[[True, True, True, True]], [[True, True, False, False]]]


def test_padding_mask_is_the_complement_of_key_padding_mask():
    # nn.MultiheadAttention's key_padding_mask is (batch, seq) and True at the pads.
    ids = torch.tensor([[3, 7, 7, 9], [3, 9, 9, 9]])
    assert torch.equal(padding_mask(ids, 9)[:, 0, :], ~(ids == 9))


def test_padding_mask_with_a_nonzero_pad_id():
    ids = torch.tensor([[5, 0, 3]])
    assert padding_mask(ids, 3).tolist() == [[[True, True, False]]]


def test_padding_mask_accepts_integer_like_pad_ids():
    ids = torch.tensor([[5, 0, 3]], dtype=torch.int32)
    for pad in (np.int64(3), torch.tensor(3)):
        assert padding_mask(ids, pad).tolist() == [[[True, True, False]]]


@pytest.mark.parametrize("pad", [torch.tensor(True), np.bool_(True), 3.0])
def test_padding_mask_refuses_what_only_looks_like_an_int(pad):
    # A bool is not a token id, nor is a float: the check of config.py's pad_id, with what indexes as an int
    with pytest.raises(TypeError, match="pad_id: expected an int"):
        padding_mask(torch.tensor([[5, 0, 3]]), pad)


def test_padded_sentence_equals_the_sentence_alone():
    # With the padding mask, a sentence's outputs do not depend on the padding its batch needed.
    torch.manual_seed(1)
    theirs = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    ids = torch.tensor([[1, 4, 5, 6, 2], [1, 4, 2, 0, 0]])
    x = randn(2, 5, 8, seed=2)
    ours = T.MultiHeadAttention(8, 2).eval()
    copy_multihead(ours, theirs)
    with torch.no_grad():
        batched = ours(x, mask=padding_mask(ids, PAD))
        alone, _ = theirs(x[1:, :3], x[1:, :3], x[1:, :3], need_weights=False)
    torch.testing.assert_close(batched[1, :3], alone[0], atol=ATOL, rtol=0)


# ----------------------------------------------------------- causal & padding


def test_causal_padding_mask_by_hand():
    ids = torch.tensor([[1, 4, 0]])
    expected = [[[True, False, False], [True, True, False], [True, True, False]]]
    assert causal_padding_mask(ids, PAD).tolist() == expected


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=5, max_size=5), min_size=1, max_size=4), st.integers(0, 4))
def test_causal_padding_mask_definition(rows, pad_id):
    ids = torch.tensor(rows)
    m = causal_padding_mask(ids, pad_id)
    assert m.shape == (len(rows), 5, 5)
    for b, row in enumerate(rows):
        for t in range(5):
            for j in range(5):
                assert bool(m[b, t, j]) == (j <= t and row[j] != pad_id)


def test_causal_padding_mask_matches_torch_with_both_masks():
    torch.manual_seed(3)
    theirs = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    ours = T.MultiHeadAttention(8, 2).eval()
    copy_multihead(ours, theirs)
    ids = torch.tensor([[1, 4, 5, 6, 2], [1, 4, 2, 0, 0]])
    x = randn(2, 5, 8, seed=4)
    with torch.no_grad():
        ref, _ = theirs(x, x, x, attn_mask=~T.causal_mask(5), key_padding_mask=ids == PAD, need_weights=False)
        out = ours(x, mask=causal_padding_mask(ids, PAD))
    torch.testing.assert_close(out, ref, atol=ATOL, rtol=0)
    q, k, v = randn(2, 5, 4, seed=5), randn(2, 5, 4, seed=6), randn(2, 5, 3, seed=7)
    torch.testing.assert_close(T.scaled_dot_product_attention(q, k, v, causal_padding_mask(ids, PAD)),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=causal_padding_mask(ids, PAD)),
                               atol=ATOL, rtol=0)


# ----------------------------------------------------------- rows with nothing to attend to


def test_left_padding_under_a_causal_mask_empties_the_first_rows():
    ids = torch.tensor([[1, 4, 5, 8], [0, 0, 1, 4]])
    empty = fully_masked_rows(causal_padding_mask(ids, PAD))
    assert empty.tolist() == [[False, False, False, False], [True, True, False, False]]


def test_fully_masked_rows_zero_output_and_softmax_nan():
    ids = torch.tensor([[0, 0, 1, 4]])
    mask = causal_padding_mask(ids, PAD)
    q, k, v = randn(1, 4, 4, seed=8), randn(1, 4, 4, seed=9), randn(1, 4, 2, seed=10)
    scores = (q @ k.transpose(-2, -1) / 2).masked_fill(~mask, float("-inf"))
    assert scores.softmax(-1)[0, :2].isnan().all()  # what a plain softmax does: 0/0
    out = T.scaled_dot_product_attention(q, k, v, mask)
    assert (out[0, :2] == 0).all()
    # The rows with keys: PyTorch on those rows alone.
    ref = F.scaled_dot_product_attention(q[:, 2:], k, v, attn_mask=mask[:, 2:])
    torch.testing.assert_close(out[:, 2:], ref, atol=ATOL, rtol=0)


# ----------------------------------------------------------- the masked softmax


def _torch_weights(q, k, mask):
    """PyTorch's attention weights for the scores ``q k^T``: its attention with the identity as values."""
    eye = torch.eye(k.shape[-2]).expand(*k.shape[:-2], -1, -1)  # (..., T_k, T_k): row j of the values is e_j
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask, scale=1.0)


@pytest.mark.parametrize("layout", ["full", "keys only", "heads"])
def test_masked_softmax_matches_torch_with_empty_rows(layout):
    g = torch.Generator().manual_seed(11)
    q, k = torch.randn(2, 3, 5, 4, generator=g), torch.randn(2, 3, 6, 4, generator=g)  # (batch, heads, T, d)
    shape = {"full": (2, 3, 5, 6), "keys only": (2, 1, 1, 6), "heads": (3, 5, 6)}[layout]
    mask = torch.rand(shape, generator=g) > 0.5
    mask[..., 0] = True  # every query may see key 0 ...
    mask[0, ..., 0, :] = False  # ... except query 0 of the first entry (for "keys only": every query of sentence 0)
    weights = masked_softmax(q @ k.transpose(-2, -1), mask)
    torch.testing.assert_close(weights, _torch_weights(q, k, mask), atol=ATOL, rtol=0)
    empty = ~mask.any(-1).expand(2, 3, 5)  # (batch, heads, T_q)
    assert bool(empty.any()) and not bool(empty.all())
    assert (weights[empty] == 0).all()  # exactly zero, not a uniform average
    torch.testing.assert_close(weights[~empty].sum(-1), torch.ones(int((~empty).sum())))


def test_masked_softmax_by_hand():
    # Scores [2, 1, 0] with the last key blocked: e^2 / (e^2 + e), e / (e^2 + e), 0; a row with no key: zeros.
    scores = torch.tensor([[2.0, 1.0, 0.0], [5.0, -1.0, 3.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    e = math.e
    torch.testing.assert_close(masked_softmax(scores, mask),
                               torch.tensor([[e**2 / (e**2 + e), e / (e**2 + e), 0.0], [0.0, 0.0, 0.0]]))
    assert torch.equal(masked_softmax(scores), scores.softmax(-1))  # no mask: the plain softmax


def test_masked_softmax_gradients_are_finite_and_zero_for_empty_rows():
    scores = randn(2, 4, 4, seed=12).requires_grad_()
    mask = causal_padding_mask(torch.tensor([[1, 4, 5, 8], [0, 0, 1, 4]]), PAD)  # rows 0, 1 of sentence 2: no key
    (masked_softmax(scores, mask) * randn(2, 4, 4, seed=13)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[1, :2] == 0).all() and (scores.grad[~mask.expand(2, 4, 4)] == 0).all()


def test_attention_weights_are_the_masked_softmax():
    q, k, v = randn(2, 4, 4, seed=14), randn(2, 4, 4, seed=15), randn(2, 4, 3, seed=16)
    mask = causal_padding_mask(torch.tensor([[1, 4, 5, 8], [0, 0, 1, 4]]), PAD)
    out, weights = T.attention_with_weights(q, k, v, mask)
    torch.testing.assert_close(weights, _torch_weights(q / 2, k, mask), atol=ATOL, rtol=0)  # scale 1/sqrt(4)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)


# ----------------------------------------------------------- teacher forcing on the lecture's sentence


def test_teacher_forcing_on_the_lectures_sentence():
    tok = T.WordTokenizer.fit(["Ich habe einen Apfel gegessen"])
    tgt = torch.tensor([tok.encode("Ich habe einen Apfel gegessen")])
    dec_in, labels = T.teacher_forcing(tgt)
    words = lambda ids: [tok.vocab.token_of(i) for i in ids[0]]  # noqa: E731
    assert words(dec_in) == ["<sos>", "Ich", "habe", "einen", "Apfel", "gegessen"]
    assert words(labels) == ["Ich", "habe", "einen", "Apfel", "gegessen", "<eos>"]


# ----------------------------------------------------------- invalid input


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: padding_mask(torch.tensor([[1.0, 0.0]]), 0), TypeError,
     r"ids: expected an integer tensor .* got dtype torch.float32"),
    (lambda: padding_mask(torch.tensor([[True, False]]), 0), TypeError,
     r"ids: expected an integer tensor .* got dtype torch.bool"),
    (lambda: padding_mask(torch.tensor([[1, 0]]), 0.0), TypeError, r"pad_id: expected an int .* got float 0.0"),
    (lambda: padding_mask(torch.tensor([[1, 0]]), True), TypeError, r"pad_id: expected an int .* got bool True"),
    (lambda: causal_padding_mask(torch.tensor([1, 0]), 0), ValueError,
     r"ids: expected 2 dimensions \(batch, seq\), got 1 with shape \(2\)"),
    (lambda: causal_padding_mask([[1, 0]], 0), TypeError, r"ids: expected a torch.Tensor, got list"),
    (lambda: fully_masked_rows(torch.ones(2, 2)), TypeError, r"mask: expected dtype torch.bool .* got torch.float32"),
    (lambda: fully_masked_rows(torch.ones(3, dtype=torch.bool)), ValueError,
     r"mask: expected at least 2 dimensions \(..., T_q, T_k\), got shape \(3\)"),
    (lambda: masked_softmax(torch.ones(2, 3), torch.ones(2, 3)), TypeError,
     r"mask: expected dtype torch.bool \(True = may attend\), got torch.float32"),
    (lambda: masked_softmax(torch.ones(2, 3), torch.ones(2, 4, dtype=torch.bool)), ValueError,
     r"mask: expected a shape broadcastable to scores \(..., T_q, T_k\) = \(2, 3\), got \(2, 4\)"),
    (lambda: masked_softmax(torch.ones(2, 3, dtype=torch.long)), TypeError,
     r"scores: expected a floating-point tensor, got dtype torch.int64"),
    (lambda: masked_softmax(torch.ones(3)), ValueError,
     r"scores: expected at least 2 dimensions \(..., T_q, T_k\), got shape \(3\)"),
], ids=["float ids", "bool ids", "float pad_id", "bool pad_id", "rank-1 ids", "list ids", "float mask", "1-d mask",
        "float mask to masked_softmax", "mask of the wrong size", "int scores", "1-d scores"])
def test_invalid_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
