"""The position-wise feed-forward network (chapter 6).

The same two-layer network is applied to every position separately:
``FFN(x) = W_2 relu(W_1 x + b_1) + b_2``, widening ``d_model`` to ``d_ff`` and back.

:data:`ACTIVATIONS` holds the nonlinearities by name: ``"relu"`` (2017), ``"gelu"``
(the exact ``x Phi(x)``, BERT) and ``"gelu_tanh"`` (its tanh approximation
``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``, GPT-2's ``"gelu_new"``).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import require_choice, require_positive_int

ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
}


class PositionwiseFeedForward(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, d_model)`` through a hidden layer of size ``d_ff``."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("d_ff", d_ff)
        require_choice("activation", activation, ACTIVATIONS)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))
