"""The known mistakes of the exercises of chapter 7, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a07` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch

from transformer.masks import causal_mask, masked_softmax

from ..core import Mistake

TEACHER_FORCING_MISTAKES = [
    Mistake("swapped", "decoder input and labels are swapped: the input starts with <sos>, the labels end with <eos>.",
            lambda tgt: (tgt[:, 1:], tgt[:, :-1])),
    Mistake("not shifted", "nothing was shifted: the input drops the last token and the labels drop the first.",
            lambda tgt: (tgt, tgt)),
    Mistake("labels not shifted", "the labels are the decoder input itself, so position t would learn to copy the "
            "token it reads. Which token should position t learn to predict? The labels are shifted by one.",
            lambda tgt: (tgt[:, :-1], tgt[:, :-1])),
    Mistake("shifted along the batch", "shifted along the batch dimension; shift along the sequence (dimension 1).",
            lambda tgt: (tgt[:-1], tgt[1:])),
]


PADDING_MASK_MISTAKES = [
    Mistake("no middle dimension", "the middle dimension is missing: the mask is (batch, 1, seq), so that it "
            "broadcasts over the queries (ids[:, None, :] or .unsqueeze(1)).", lambda ids, pad_id: ids != pad_id),
    Mistake("(batch, seq, 1)", "the 1 is in the wrong place: (batch, seq, 1) would broadcast over the keys; the mask "
            "describes the keys, so it is (batch, 1, seq).", lambda ids, pad_id: (ids != pad_id)[:, :, None]),
    Mistake("inverted", "inverted: True means 'may attend', i.e. True at the real tokens (PyTorch's key_padding_mask "
            "is the opposite).", lambda ids, pad_id: (ids == pad_id)[:, None, :]),
    Mistake("pad_id 0", "pad_id is an argument: compare with pad_id, not with 0.",
            lambda ids, pad_id: (ids != 0)[:, None, :]),
]


def _causal(ids):
    batch, seq = ids.shape
    return causal_mask(seq).expand(batch, seq, seq)  # (batch, T_q, T_k)


def _real_keys(ids, pad_id):
    return (ids != pad_id)[:, None, :]  # (batch, 1, T_k)


CAUSAL_PADDING_MISTAKES = [
    Mistake("no padding", "the padding is missing: a key must be in the past AND a real token.",
            lambda ids, pad_id: _causal(ids)),
    Mistake("not causal", "the causal part is missing: a key must be in the past AND a real token.",
            lambda ids, pad_id: _real_keys(ids, pad_id).expand(*ids.shape, ids.shape[1])),
    Mistake("or", "combine the two masks with & (and), not | (or).",
            lambda ids, pad_id: _causal(ids) | _real_keys(ids, pad_id)),
    Mistake("padded queries", "the padding mask hides padded keys (columns) only, not padded queries (rows): a "
            "padded query still sees the real tokens before it, so that no row is left without a key.",
            lambda ids, pad_id: _causal(ids) & (ids != pad_id)[:, :, None]),
    Mistake("upper triangle", "this is the upper triangle: query t may see keys 0..t (the past), not the future.",
            lambda ids, pad_id: torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).triu()
            & _real_keys(ids, pad_id)),
    Mistake("inverted", "inverted: True means 'may attend' in this book.",
            lambda ids, pad_id: ~(_causal(ids) & _real_keys(ids, pad_id))),
    Mistake("no diagonal", "the diagonal is missing, so no query may attend to its own position (and the first "
            "query sees no key at all). The past of position t includes t itself: keys 0..t.",
            lambda ids, pad_id: torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).tril(-1)
            & _real_keys(ids, pad_id)),
]


def _scaled_scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)


QUERY_SOFTMAX_HINT = ("the softmax went over the queries (dim -2): each query's weights over the keys must sum to 1, "
                      "so the softmax goes over the keys, the last dimension.")

MASKED_ATTENTION_MISTAKES = [
    Mistake("large negative number", "the rows with no allowed key got an average of the values: a large negative "
            "number instead of -inf makes all their scores equal. Those rows must get zero weights and a zero output.",
            lambda q, k, v, mask: _scaled_scores(q, k).masked_fill(~mask, -1e9).softmax(-1) @ v),
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_k).", lambda q, k, v, mask: (
        (q @ k.transpose(-2, -1)).masked_fill(~mask, -math.inf).softmax(-1).nan_to_num(0.0) @ v)),
    Mistake("masked after the softmax", "the mask was applied after the softmax: blocked keys must get -inf *before* "
            "it, so that the remaining weights still sum to 1.",
            lambda q, k, v, mask: (_scaled_scores(q, k).softmax(-1) * mask) @ v),
    Mistake("inverted mask", "the mask is inverted: True means 'may attend'.", lambda q, k, v, mask: (
        _scaled_scores(q, k).masked_fill(mask, -math.inf).softmax(-1).nan_to_num(0.0) @ v)),
    Mistake("softmax over the queries", QUERY_SOFTMAX_HINT, lambda q, k, v, mask: (
        _scaled_scores(q, k).masked_fill(~mask, -math.inf).softmax(-2).nan_to_num(0.0) @ v)),
    Mistake("the weights", "you returned the attention weights; return weights @ v.",
            lambda q, k, v, mask: masked_softmax(_scaled_scores(q, k), mask)),
]
