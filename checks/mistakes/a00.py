"""The known mistakes of the exercises of chapter 0, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a00` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..core import Mistake


def _dot_scores(q, keys):
    return keys @ q  # (n, d) @ (d,) -> (n,)


ATTEND_MISTAKES = [
    Mistake("scaled", "in this chapter a score is the plain dot product q . k_j; the division by sqrt(d_k) comes in "
            "chapter 4.",
            lambda q, keys, values: (_dot_scores(q, keys) / math.sqrt(q.shape[0])).softmax(dim=0) @ values),
    Mistake("the weights", "you returned the weights; the output is their weighted sum of the values.",
            lambda q, keys, values: _dot_scores(q, keys).softmax(dim=0)),
    Mistake("no softmax", "the scores must go through a softmax first, so that the weights are positive and sum to 1.",
            lambda q, keys, values: _dot_scores(q, keys) @ values),
    Mistake("divided by the sum", "dividing the scores by their sum is not a softmax: exponentiate them first.",
            lambda q, keys, values: (_dot_scores(q, keys) / _dot_scores(q, keys).sum()) @ values),
    Mistake("sum of the keys", "the weighted sum runs over the values, not the keys.",
            lambda q, keys, values: _dot_scores(q, keys).softmax(dim=0) @ keys),
    Mistake("hard lookup", "that is a hard lookup (the best key only); attention mixes all the values by their "
            "weights.", lambda q, keys, values: values[int(_dot_scores(q, keys).argmax())]),
    Mistake("plain average", "the weights must depend on the query: this is the plain average of the values.",
            lambda q, keys, values: values.mean(dim=0)),
]


class _Elman(nn.Module):
    """The RNN of the exercise written out: ``h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh)``, each
    step a method, so that each known mistake below changes one of them."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.zeros(hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.zeros(hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.zeros(hidden_size))
        self.bias_hh = nn.Parameter(torch.zeros(hidden_size))

    def step(self, x_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.input(x_t) + self.recurrence(h))

    def input(self, x_t: torch.Tensor) -> torch.Tensor:
        return x_t @ self.weight_ih.T + self.bias_ih  # (batch, input) -> (batch, hidden)

    def recurrence(self, h: torch.Tensor) -> torch.Tensor:
        return h @ self.weight_hh.T + self.bias_hh  # (batch, hidden) -> (batch, hidden)

    def times(self, seq: int) -> range:
        return range(seq)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], self.weight_hh.shape[0], dtype=x.dtype)  # (batch, hidden)
        out = [None] * x.shape[1]
        for t in self.times(x.shape[1]):
            h = self.step(x[:, t], h)
            out[t] = h
        return torch.stack(out, dim=1)  # seq of (batch, hidden) -> (batch, seq, hidden)


class _NoTanh(_Elman):
    def step(self, x_t, h):
        return self.input(x_t) + self.recurrence(h)


class _NotRecurrent(_Elman):
    def recurrence(self, h):
        return self.bias_hh


class _OutputsTheStateBefore(_Elman):
    def forward(self, x):
        h = torch.zeros(x.shape[0], self.weight_hh.shape[0], dtype=x.dtype)  # (batch, hidden)
        out = []
        for t in self.times(x.shape[1]):
            out.append(h)
            h = self.step(x[:, t], h)
        return torch.stack(out, dim=1)  # (batch, seq, hidden)


class _Backwards(_Elman):
    def times(self, seq):
        return range(seq - 1, -1, -1)


class _SequenceFirst(_Elman):
    def forward(self, x):
        return super().forward(x.transpose(0, 1)).transpose(0, 1)  # x read as (seq, batch, input)


class _NoBiasHH(_Elman):
    def recurrence(self, h):
        return h @ self.weight_hh.T


class _NoBiasIH(_Elman):
    def input(self, x_t):
        return x_t @ self.weight_ih.T


class _LastStateOnly(_Elman):
    def forward(self, x):
        return super().forward(x)[:, -1]  # (batch, hidden)


ELMAN_MISTAKES = [
    Mistake("no tanh", "no tanh: each new state is squashed with torch.tanh.", _NoTanh),
    Mistake("not recurrent", "the states do not depend on each other: add h_(t-1) @ weight_hh.T at every step.",
            _NotRecurrent),
    Mistake("the state before", "the output at step t is the new state h_t, not the state h_(t-1) from before the "
            "step.", _OutputsTheStateBefore),
    Mistake("backwards", "time runs backwards: start at t = 0 and go forward.", _Backwards),
    Mistake("sequence first", "time runs along dimension 1: x is (batch, seq, input), so step t reads x[:, t].",
            _SequenceFirst),
    Mistake("no bias_hh", "bias_hh is missing: nn.RNN adds both biases, bias_ih and bias_hh.", _NoBiasHH),
    Mistake("no bias_ih", "bias_ih is missing: nn.RNN adds both biases, bias_ih and bias_hh.", _NoBiasIH),
    Mistake("last state only", "you returned only the last hidden state; return the states of every step, "
            "(batch, seq, hidden).", _LastStateOnly),
]
