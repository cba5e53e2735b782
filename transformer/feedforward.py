"""The position-wise feed-forward network (chapter 6).

The same two-layer network is applied to every position separately:
``FFN(x) = W_2 relu(W_1 x + b_1) + b_2``, widening ``d_model`` to ``d_ff`` and back.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import require_choice, require_positive_int

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


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
