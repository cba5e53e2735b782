"""The output head: final linear to vocabulary logits (chapter 9).

With weight tying the output matrix *is* the embedding matrix ``E``:
``logits = h E^T``, so a token scores high when the decoder's vector points
the way its embedding does. Untied, the matrix gets entries of about
``1 / sqrt(d_model)``, so logits start with a spread of about 1.
"""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F

from ._validate import require_positive_int
from .embedding import TokenEmbedding


class OutputHead(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, vocab_size)`` logits; ``tie_to`` shares an embedding's matrix."""

    def __init__(self, d_model: int, vocab_size: int, tie_to: TokenEmbedding | None = None, bias: bool = False):
        super().__init__()
        require_positive_int("d_model", d_model)
        require_positive_int("vocab_size", vocab_size)
        if tie_to is not None:
            if tuple(tie_to.weight.shape) != (vocab_size, d_model):
                raise ValueError(
                    f"tie_to: expected an embedding of shape (vocab_size={vocab_size}, d_model={d_model}), "
                    f"got {tuple(tie_to.weight.shape)}"
                )
            self.weight = tie_to.weight  # the same Parameter: one matrix, two uses
        else:
            self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.tied = tie_to is not None

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(h, self.weight, self.bias)  # (batch, seq, d_model) @ E^T -> (batch, seq, vocab)
