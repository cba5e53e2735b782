"""Token embeddings (chapter 2).

An embedding is a linear map applied to one-hot vectors: ``one_hot(ids) @ E``
selects rows of ``E``. A lookup does the same without building the one-hot.

Initialisation follows the RMS-norm argument: entries of ``E`` are drawn with
standard deviation ``1 / sqrt(d_model)``, so ``E`` can also serve as the
(tied) output layer, and the lookup is multiplied by ``sqrt(d_model)`` so the
vectors entering the first block have an RMS of about 1.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import require_float, require_positive_int, require_token_ids


def rms(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Root mean square along ``dim``: ``sqrt(mean(x**2))``."""
    require_float("x", x)
    return x.pow(2).mean(dim).sqrt()


class TokenEmbedding(nn.Module):
    """Ids ``(batch, seq)`` -> vectors ``(batch, seq, d_model)`` (chapter 2).

    ``scale=True`` multiplies by ``sqrt(d_model)``, as in the 2017 paper.
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True):
        super().__init__()
        require_positive_int("vocab_size", vocab_size)
        require_positive_int("d_model", d_model)
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.vocab_size, self.d_model, self.scale = vocab_size, d_model, scale

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        require_token_ids("ids", ids, self.vocab_size)
        return self.lookup(ids)

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` on ids already checked (a model that has checked its ids calls it)."""
        x = self.weight[ids]  # (batch, seq) -> (batch, seq, d_model)
        return x * math.sqrt(self.d_model) if self.scale else x

    def extra_repr(self) -> str:
        return f"{self.vocab_size}, {self.d_model}, scale={self.scale}"
