"""The known mistakes of the exercises of chapter 6, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a06` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..core import Mistake


def _normalised(x, eps, dim=-1, unbiased=False, eps_outside=False):
    """``(x - mean) / sqrt(var + eps)`` over ``dim`` (all dimensions if None)."""
    keep = {} if dim is None else {"dim": dim, "keepdim": True}
    mean, var = x.mean(**keep), x.var(unbiased=unbiased, **keep)
    return (x - mean) / (var.sqrt() + eps if eps_outside else torch.sqrt(var + eps))


LAYER_NORM_MISTAKES = [
    Mistake("unbiased", "used the unbiased variance (divide by d - 1); LayerNorm divides by d: var(..., "
            "unbiased=False).", lambda x, gamma, beta, eps: gamma * _normalised(x, eps, unbiased=True) + beta),
    Mistake("eps outside the root", "eps goes inside the square root: sqrt(var + eps), not sqrt(var) + eps.",
            lambda x, gamma, beta, eps: gamma * _normalised(x, eps, eps_outside=True) + beta),
    Mistake("no eps", "eps is missing: divide by sqrt(var + eps).",
            lambda x, gamma, beta, eps: gamma * _normalised(x, 0.0) + beta),
    Mistake("no gamma and beta", "forgot gamma and beta: return gamma * z + beta.",
            lambda x, gamma, beta, eps: _normalised(x, eps)),
    Mistake("gamma and beta swapped", "gamma scales and beta shifts: gamma * z + beta.",
            lambda x, gamma, beta, eps: beta * _normalised(x, eps) + gamma),
    Mistake("RMSNorm", "this is RMSNorm: LayerNorm subtracts the mean first.",
            lambda x, gamma, beta, eps: gamma * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) + beta),
    Mistake("over the first dimension", "the statistics must be taken over the features of each token (the last "
            "dimension, dim=-1), not over the first dimension.",
            lambda x, gamma, beta, eps: gamma * _normalised(x, eps, dim=0) + beta),
    Mistake("over the whole tensor", "the statistics must be taken over the features of each token (dim=-1, "
            "keepdim=True), not over the whole tensor.",
            lambda x, gamma, beta, eps: gamma * _normalised(x, eps, dim=None) + beta),
]


class _EncoderBlock(nn.Module):
    """The exercise's block done right, with PyTorch's sublayers; each known mistake below changes one method."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, norm_first: bool):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.norm_first = norm_first

    def attention(self, z):
        return self.self_attn(z, z, z, need_weights=False)[0]

    def feed_forward(self, z):
        return self.linear2(self.activation(self.linear1(z)))

    def activation(self, h):
        return F.relu(h)

    def second_norm(self, z):
        return self.norm2(z)

    def kept(self, x, normed):
        """What the residual connection adds back: the sublayer's input ``x``."""
        return x

    def forward(self, x):
        if self.norm_first:  # x = x + Sublayer(Norm(x))
            n = self.norm1(x)
            x = self.kept(x, n) + self.attention(n)
            n = self.second_norm(x)
            return self.kept(x, n) + self.feed_forward(n)
        x = self.norm1(self.kept(x, x) + self.attention(x))  # x = Norm(x + Sublayer(x))
        return self.second_norm(self.kept(x, x) + self.feed_forward(x))


class _AlwaysPreNorm(_EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, norm_first):
        super().__init__(d_model, n_heads, d_ff, True)


class _AlwaysPostNorm(_EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, norm_first):
        super().__init__(d_model, n_heads, d_ff, False)


class _NoResidual(_EncoderBlock):
    def kept(self, x, normed):
        return 0.0 * x


class _NoReLU(_EncoderBlock):
    def activation(self, h):
        return h


class _OneNorm(_EncoderBlock):
    def second_norm(self, z):
        return self.norm1(z)


class _NoFeedForward(_EncoderBlock):
    def forward(self, x):
        if self.norm_first:
            return x + self.attention(self.norm1(x))
        return self.norm1(x + self.attention(x))


class _NormOnTheSublayer(_EncoderBlock):
    def forward(self, x):
        if self.norm_first:
            return super().forward(x)
        x = x + self.norm1(self.attention(x))
        return x + self.norm2(self.feed_forward(x))


class _NoAttentionResidual(_EncoderBlock):
    def forward(self, x):
        if self.norm_first:
            x = self.attention(self.norm1(x))
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(self.attention(x))
        return self.norm2(x + self.feed_forward(x))


class _ResidualOfTheNormed(_EncoderBlock):
    def kept(self, x, normed):
        return normed


ENCODER_BLOCK_MISTAKES = [
    Mistake("pre-norm wiring", "this is the pre-norm wiring; norm_first=False means x = Norm(x + Sublayer(x)).",
            _AlwaysPreNorm),
    Mistake("post-norm wiring", "this is the post-norm wiring; norm_first=True means x = x + Sublayer(Norm(x)).",
            _AlwaysPostNorm),
    Mistake("no residual", "the residual is missing: add each sublayer's input back to its output.", _NoResidual),
    Mistake("no residual around attention", "the feed-forward sublayer adds its input back, but the attention "
            "sublayer does not. Both sublayers are wrapped the same way: what goes into a sublayer is added to what "
            "comes out of it.", _NoAttentionResidual),
    Mistake("no ReLU", "the feed-forward network needs its ReLU between linear1 and linear2.", _NoReLU),
    Mistake("one norm", "each sublayer has its own norm: norm1 for attention, norm2 for the feed-forward network.",
            _OneNorm),
    Mistake("no feed-forward", "the feed-forward sublayer is missing: after attention comes linear1, ReLU, linear2.",
            _NoFeedForward),
    Mistake("norm on the sublayer", "post-norm normalises the sum: x = Norm(x + Sublayer(x)), not x + "
            "Norm(Sublayer(x)).", _NormOnTheSublayer),
    Mistake("residual of the normed", "in pre-norm the residual adds the un-normalised x: x = x + Sublayer(Norm(x)), "
            "not Norm(x) + Sublayer(Norm(x)).", _ResidualOfTheNormed),
]
