"""The known mistakes of the exercises of chapter 2, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a02` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..core import Mistake

EMBED_ONE_HOT_MISTAKES = [
    Mistake("scaled", "no scaling is asked for here; return the rows of E as they are.",
            lambda ids, E: E[ids] * math.sqrt(E.shape[1])),
    Mistake("the one-hot vectors", "these are the one-hot vectors; multiply them by E.",
            lambda ids, E: torch.nn.functional.one_hot(ids, E.shape[0]).double()),
    Mistake("summed", "this sums the embeddings over the sequence; keep one vector per token.",
            lambda ids, E: E[ids].sum(-2)),
    Mistake("counted from 1", "ids count from 0: id i is row i of E.", lambda ids, E: E[(ids - 1) % E.shape[0]]),
]


class _Embedding(nn.Module):
    """The exercise's module done right: rows with std ``1/sqrt(d_model)``, the lookup times ``factor()``."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.vocab_size, self.d_model = vocab_size, d_model

    def factor(self) -> float:
        return math.sqrt(self.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.weight[ids] * self.factor()  # (batch, seq) -> (batch, seq, d_model)


class _NotScaled(_Embedding):
    def factor(self):
        return 1.0


class _DividedBySqrtD(_Embedding):
    def factor(self):
        return 1 / math.sqrt(self.d_model)


class _TimesD(_Embedding):
    def factor(self):
        return float(self.d_model)


class _TimesSqrtVocab(_Embedding):
    def factor(self):
        return math.sqrt(self.vocab_size)


EMBEDDING_MISTAKES = [
    Mistake("not scaled", "forgot to multiply the lookup by sqrt(d_model).", _NotScaled),
    Mistake("divided", "divided by sqrt(d_model); the lookup is multiplied by it.", _DividedBySqrtD),
    Mistake("times d_model", "multiplied by d_model; the factor is its square root.", _TimesD),
    Mistake("times sqrt(vocab_size)", "multiplied by sqrt(vocab_size); the factor is sqrt(d_model).", _TimesSqrtVocab),
]
