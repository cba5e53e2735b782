"""The output head: final linear to vocabulary logits (chapter 9).

The decoder's last vectors ``(batch, T_d, d_model)`` become one score per
vocabulary entry, ``(batch, T_d, vocab_size)``: ``logits = h W^T`` with
``W`` of shape ``(vocab_size, d_model)``, like ``nn.Linear``.

With weight tying the output matrix *is* the embedding matrix ``E``:
``logits = h E^T``, so a token scores high when the decoder's vector points
the way its embedding does. Untied, the matrix gets entries of about
``1 / sqrt(d_model)``, so logits start with a spread of about 1.

BERT's masked-language-model head first passes ``h`` through a
:class:`HeadTransform` (dense, activation, norm) and adds a bias per
vocabulary entry: ``TransformerConfig(head_transform=True, head_bias=True)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import require_choice, require_float, require_last_dim, require_positive_int
from .embedding import TokenEmbedding
from .feedforward import ACTIVATIONS
from .norm import make_norm


class HeadTransform(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, d_model)``: ``Norm(activation(h W^T + b))``, BERT's head transform."""

    def __init__(self, d_model: int, activation: str = "gelu", norm: str = "layer", eps: float = 1e-5,
                 fast: bool = False):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_choice("activation", activation, ACTIVATIONS)
        self.dense = nn.Linear(d_model, d_model)
        self.norm = make_norm(norm, d_model, eps, fast)
        self.activation = activation

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(ACTIVATIONS[self.activation](self.dense(h)))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"


class OutputHead(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, vocab_size)`` logits (chapter 9).

    ``tie_to`` (a :class:`~transformer.embedding.TokenEmbedding` or an
    ``nn.Embedding`` of shape ``(vocab_size, d_model)``) makes ``weight`` the
    embedding's own Parameter: one matrix, two uses, one set of gradients.
    ``bias=True`` adds a bias per vocabulary entry; ``transform`` (e.g. a
    :class:`HeadTransform`) is applied to ``h`` first.
    """

    def __init__(self, d_model: int, vocab_size: int, tie_to: TokenEmbedding | nn.Embedding | None = None,
                 bias: bool = False, transform: nn.Module | None = None):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("vocab_size", vocab_size)
        if tie_to is not None:
            self.weight = _require_tie(tie_to, vocab_size, d_model)  # the same Parameter: one matrix, two uses
        else:
            self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.transform = transform
        self.tied = tie_to is not None
        self.d_model, self.vocab_size = d_model, vocab_size

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        require_float("h", h)
        require_last_dim("h", h, self.d_model)
        if self.transform is not None:
            h = self.transform(h)  # (batch, seq, d_model)
        return F.linear(h, self.weight, self.bias)  # (batch, seq, d_model) @ W^T -> (batch, seq, vocab)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, vocab_size={self.vocab_size}, tied={self.tied}, bias={self.bias is not None}"


def head_for(cfg, embedding: TokenEmbedding) -> OutputHead:
    """The output head of a :class:`~transformer.config.TransformerConfig`: tied to ``embedding`` if
    ``cfg.tie_weights``, with a bias if ``cfg.head_bias`` and a :class:`HeadTransform` if ``cfg.head_transform``."""
    transform = None
    if cfg.head_transform:
        transform = HeadTransform(cfg.d_model, cfg.activation, cfg.norm, cfg.norm_eps, cfg.fast)
    tie_to = embedding if cfg.tie_weights else None
    return OutputHead(cfg.d_model, cfg.vocab_size, tie_to, bias=cfg.head_bias, transform=transform)


# ----------------------------------------------------------------------------- argument checks


def _require_tie(tie_to, vocab_size: int, d_model: int) -> nn.Parameter:
    """The ``weight`` Parameter of ``tie_to``, an embedding of shape ``(vocab_size, d_model)``."""
    weight = getattr(tie_to, "weight", None)
    if not isinstance(weight, nn.Parameter):
        raise TypeError(f"tie_to: expected an embedding module with a `weight` Parameter, got {type(tie_to).__name__}")
    if tuple(weight.shape) != (vocab_size, d_model):
        raise ValueError(f"tie_to: expected an embedding of shape (vocab_size={vocab_size}, d_model={d_model}), "
                         f"got {tuple(weight.shape)}")
    return weight
