"""The position-wise feed-forward network (chapter 6).

The same two-layer network is applied to every position separately:
``FFN(x) = W_2 relu(W_1 x + b_1) + b_2``, widening ``d_model`` to ``d_ff`` and back.

:data:`ACTIVATIONS` holds the nonlinearities by name: ``"relu"`` (2017), ``"gelu"``
(the exact ``x Phi(x)``, BERT) and ``"gelu_tanh"`` (its tanh approximation
``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``, GPT-2's ``"gelu_new"``) and ``"silu"``
(``x sigmoid(x)``, also called swish).

:class:`GatedFeedForward` (chapter 12) multiplies the activated layer by a second, linear one:
``W_2 (act(W_1 x) * W_3 x)``; with ``"silu"`` it is SwiGLU (Shazeer, 2020), Llama's feed-forward.
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
    "silu": F.silu,
}
FFN_KINDS = ("mlp", "gated", "none")  # "none": attention-only blocks (chapter 13)


class PositionwiseFeedForward(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, d_model)`` through a hidden layer of size ``d_ff``."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", bias: bool = True):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("d_ff", d_ff)
        require_choice("activation", activation, ACTIVATIONS)
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


class GatedFeedForward(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, d_model)``: ``W_2 (act(W_1 x) * W_3 x)`` (chapter 12).

    The hidden layer ``act(W_1 x)`` is gated, feature by feature, by a second projection ``W_3 x``;
    ``activation="silu"`` makes it SwiGLU, as in Llama, whose projections have no bias (``bias=False``).
    The numbers are Llama's (``w1``, ``w2``, ``w3``): ``linear2`` stays the projection back to ``d_model``, as in
    :class:`FeedForward`, so a checkpoint's names map one to one. They are made in the order the data flows
    (``W_1`` and ``W_3`` read ``x``, ``W_2`` writes back); that order also fixes the seeded initial weights.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "silu", bias: bool = False):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("d_ff", d_ff)
        require_choice("activation", activation, ACTIVATIONS)
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1, activated (Llama's gate_proj)
        self.linear3 = nn.Linear(d_model, d_ff, bias=bias)  # W_3, the linear gate (Llama's up_proj)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2, back to d_model (Llama's down_proj)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = ACTIVATIONS[self.activation](self.linear1(x)) * self.linear3(x)  # (batch, seq, d_ff)
        return self.linear2(self.dropout(hidden))


def feed_forward_for(cfg) -> nn.Module | None:
    """The feed-forward of a :class:`~transformer.config.TransformerConfig`: ``cfg.ffn`` is "mlp" or "gated";
    "none" gives None, a block without one (the attention-only models of chapter 13)."""
    if cfg.ffn == "none":
        return None
    kind = GatedFeedForward if cfg.ffn == "gated" else PositionwiseFeedForward
    return kind(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation, bias=cfg.linear_bias)
