"""The known mistakes of the exercises of chapter 4, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a04` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

from transformer.attention import scaled_dot_product_attention
from transformer.masks import masked_softmax

from ..core import Mistake


def _masked_scores(q, k, mask, divide_by: float = 1.0):
    """``q k^T / divide_by`` with the blocked keys at -inf: ``(batch, T_q, T_k)``."""
    scores = q @ k.transpose(-2, -1) / divide_by  # (batch, T_q, d) @ (batch, d, T_k) -> (batch, T_q, T_k)
    return scores if mask is None else scores.masked_fill(~mask, float("-inf"))


def _unscaled(q, k, v, mask=None):
    return _masked_scores(q, k, mask).softmax(-1) @ v


def _softmax_over_queries(q, k, v, mask=None):
    return _masked_scores(q, k, mask, math.sqrt(q.shape[-1])).softmax(-2).nan_to_num(0.0) @ v


def _divided_by_d_k(q, k, v, mask=None):
    return _masked_scores(q, k, mask, q.shape[-1]).softmax(-1) @ v


def _masked_after_softmax(q, k, v, mask=None):
    w = _masked_scores(q, k, None, math.sqrt(q.shape[-1])).softmax(-1)
    return (w if mask is None else w * mask) @ v


def _inverted_mask(q, k, v, mask=None):
    return _masked_scores(q, k, None if mask is None else ~mask, math.sqrt(q.shape[-1])).softmax(-1).nan_to_num(0.0) @ v


def _the_weights(q, k, v, mask=None):
    return masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), mask)


ATTENTION_MISTAKES = [
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_k).", _unscaled),
    Mistake("softmax over the queries", "the softmax runs over the wrong axis: each query's weights (one row, over "
            "the keys) must sum to 1.", _softmax_over_queries),
    Mistake("divided by d_k", "divided by d_k instead of sqrt(d_k).", _divided_by_d_k),
    Mistake("masked after the softmax", "the mask was applied after the softmax: blocked keys must get -inf "
            "*before* it, so the remaining weights still sum to 1.", _masked_after_softmax),
    Mistake("inverted mask", "the mask is inverted: True means 'may attend'.", _inverted_mask),
    Mistake("the weights", "you returned the attention weights; return weights @ v.", _the_weights),
]


def _scores(x, x_train):
    """The Gaussian kernel's scores ``-(x - x_i)^2 / 2``: ``(m,)`` queries, ``(n,)`` samples -> ``(m, n)``."""
    return -(x[:, None] - x_train[None, :]) ** 2 / 2  # (m, 1) - (1, n) -> (m, n)


KERNEL_REGRESSION_MISTAKES = [
    Mistake("not normalised", "the kernel values were not divided by their sum: each query's weights must sum to 1.",
            lambda x, x_train, y_train: _scores(x, x_train).exp() @ y_train),
    Mistake("normalised over the queries", "the weights were normalised over the queries; each query's weights, one "
            "row over the samples, must sum to 1.",
            lambda x, x_train, y_train: _scores(x, x_train).softmax(dim=0) @ y_train),
    Mistake("no 1/2", "the kernel is exp(-u^2 / 2): the square of the distance is halved.",
            lambda x, x_train, y_train: (2 * _scores(x, x_train)).softmax(dim=-1) @ y_train),
    Mistake("softmax of the kernel", "the softmax takes the scores -(x - x_i)^2 / 2, not the kernel values "
            "exp(-(x - x_i)^2 / 2): softmax(s) already exponentiates.",
            lambda x, x_train, y_train: _scores(x, x_train).exp().softmax(dim=-1) @ y_train),
    Mistake("the weights", "you returned the weights; the estimate is their weighted sum of y_train.",
            lambda x, x_train, y_train: _scores(x, x_train).softmax(dim=-1)),
]


SELF_ATTENTION_MISTAKES = [
    Mistake("transposed weights", "transposed weights: in this book q = x W^Q, i.e. x @ W_q, not x @ W_q.T.",
            lambda x, w_q, w_k, w_v: scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T)),
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_k).",
            lambda x, w_q, w_k, w_v: ((x @ w_q) @ (x @ w_k).transpose(-2, -1)).softmax(dim=-1) @ (x @ w_v)),
    Mistake("queries and keys swapped", "queries and keys are swapped: the scores are Q K^T, row = query.",
            lambda x, w_q, w_k, w_v: scaled_dot_product_attention(x @ w_k, x @ w_q, x @ w_v)),
]
