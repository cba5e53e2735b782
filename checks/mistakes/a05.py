"""The known mistakes of the exercises of chapter 5, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a05` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..core import Mistake


def _strided_split(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, d // n_heads, n_heads).permute(0, 3, 1, 2)


SPLIT_HEADS_MISTAKES = [
    Mistake("no transpose", "this is (batch, seq, heads, d_h): move the heads in front of seq with .transpose(1, 2).",
            lambda x, n_heads: x.reshape(x.shape[0], x.shape[1], n_heads, x.shape[2] // n_heads)),
    Mistake("reshaped straight", "reshaping straight to (batch, heads, seq, d_h) cuts the sequence into pieces "
            "instead of each token's features: reshape to (batch, seq, heads, d_h) first, then transpose.",
            lambda x, n_heads: x.reshape(x.shape[0], n_heads, x.shape[1], x.shape[2] // n_heads)),
    Mistake("strided", "head i must take the neighbouring features i*d_h ... (i+1)*d_h - 1 of each token, not every "
            "h-th feature: reshape to (batch, seq, heads, d_h), not (batch, seq, d_h, heads).", _strided_split),
    Mistake("heads and d_h swapped", "heads and d_h are swapped: the last dimension holds the d_h features of one "
            "head.", lambda x, n_heads: x.reshape(*x.shape[:2], x.shape[2] // n_heads, n_heads).transpose(1, 2)),
]


MERGE_HEADS_MISTAKES = [
    Mistake("no transpose", "reshaping without first moving the heads back behind seq mixes different tokens: "
            "use .transpose(1, 2) before the reshape.",
            lambda x: x.reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
    Mistake("interleaved", "the features of head i must stay together at positions i*d_h ... (i+1)*d_h - 1: "
            "concatenate the heads, don't interleave them.",
            lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
    Mistake("not glued", "this is (batch, seq, heads, d_h): glue each token's heads into one vector of size heads * "
            "d_h.", lambda x: x.transpose(1, 2)),
    Mistake("averaged", "averaging the heads throws their differences away: concatenate them.",
            lambda x: x.mean(dim=1)),
    Mistake("added", "adding the heads throws their differences away: concatenate them.", lambda x: x.sum(dim=1)),
]


class _MultiHeadAttention(nn.Module):
    """The exercise's module done right, each step a method, so that each known mistake below changes one."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def heads(self, z: torch.Tensor) -> torch.Tensor:
        b, t, d = z.shape
        return z.reshape(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)  # (batch, heads, seq, d_h)

    def merge(self, z: torch.Tensor) -> torch.Tensor:
        b, h, t, d_h = z.shape
        return z.transpose(1, 2).reshape(b, t, h * d_h)  # (batch, T_q, d_model)

    def divisor(self, d_h: int, d_model: int) -> float:
        return math.sqrt(d_h)

    def weights(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.softmax(dim=-1)  # over the keys

    def projections(self, x: torch.Tensor, source: torch.Tensor):
        return self.w_q(x), self.w_k(source), self.w_v(source)

    def output(self, z: torch.Tensor) -> torch.Tensor:
        return self.w_o(z)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self.projections(x, x if memory is None else memory)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)  # (batch, heads, seq, d_h) each
        scores = q @ k.transpose(-2, -1) / self.divisor(q.shape[-1], x.shape[-1])  # (batch, heads, T_q, T_k)
        return self.output(self.merge(self.weights(scores) @ v))  # (batch, T_q, d_model)


class _Unscaled(_MultiHeadAttention):
    def divisor(self, d_h, d_model):
        return 1.0


class _ScaledByDModel(_MultiHeadAttention):
    def divisor(self, d_h, d_model):
        return math.sqrt(d_model)


class _OneHead(_MultiHeadAttention):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, 1)


class _NoOutputProjection(_MultiHeadAttention):
    def output(self, z):
        return z


class _MergedWithoutTranspose(_MultiHeadAttention):
    def merge(self, z):
        b, h, t, d_h = z.shape
        return z.reshape(b, t, h * d_h)


class _StridedHeads(_MultiHeadAttention):
    def heads(self, z):
        b, t, d = z.shape
        return z.reshape(b, t, d // self.n_heads, self.n_heads).permute(0, 3, 1, 2)


class _SoftmaxOverQueries(_MultiHeadAttention):
    def weights(self, scores):
        return scores.softmax(dim=-2)


class _QueriesAndKeysSwapped(_MultiHeadAttention):
    def projections(self, x, source):
        q, k, v = super().projections(x, source)
        return k, q, v


class _CrossFromX(_MultiHeadAttention):
    def projections(self, x, source):
        return super().projections(x, x)


class _WeightsTransposed(_MultiHeadAttention):
    """Each projection written out as ``z @ w.weight + w.bias``, without the transpose."""

    def projections(self, x, source):
        return (x @ self.w_q.weight + self.w_q.bias, source @ self.w_k.weight + self.w_k.bias,
                source @ self.w_v.weight + self.w_v.bias)

    def output(self, z):
        return z @ self.w_o.weight + self.w_o.bias


MHA_MISTAKES = [
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_h).", _Unscaled),
    Mistake("scaled by d_model", "divided by sqrt(d_model); each head's scores are dot products of d_h numbers, so "
            "divide by sqrt(d_h).", _ScaledByDModel),
    Mistake("one head", "this is one head of width d_model: split the projected queries, keys and values into "
            "n_heads heads.", _OneHead),
    Mistake("no W^O", "the output projection W^O (self.w_o) is missing after the concatenation.",
            _NoOutputProjection),
    Mistake("merged without transpose", "the heads were merged without moving them back behind seq "
            "(.transpose(1, 2) before the reshape).", _MergedWithoutTranspose),
    Mistake("strided heads", "head i must take the neighbouring features i*d_h ... (i+1)*d_h - 1 (view as (batch, "
            "seq, heads, d_h)).", _StridedHeads),
    Mistake("softmax over the queries", "the softmax runs over the wrong axis: each query's weights over the keys "
            "(the last axis) sum to 1.", _SoftmaxOverQueries),
    Mistake("queries and keys swapped", "queries and keys are swapped: scores = Q K^T with queries from w_q.",
            _QueriesAndKeysSwapped),
    Mistake("cross-attention from x", "in cross-attention the keys and values come from memory, not from x.",
            _CrossFromX),
    Mistake("weights transposed", "nn.Linear keeps its weight as (out_features, in_features) and computes "
            "x @ weight.T + bias, so x @ weight uses the matrix transposed. The shapes fit only because the matrix is "
            "square. Calling the layer, self.w_q(x), applies it the way it was meant.", _WeightsTransposed),
]
