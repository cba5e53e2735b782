"""Layer normalisation and RMS normalisation (chapter 6).

LayerNorm turns each token vector into a z-score over its features,
``(x - mean) / sqrt(var + eps)``, then scales by ``gamma`` and shifts by ``beta``.
RMSNorm drops the centring: ``x / sqrt(mean(x**2) + eps) * gamma``.
Both act on the last dimension only, token by token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import require_float, require_last_dim, require_positive_int


class LayerNorm(nn.Module):
    """``(..., d_model) -> (..., d_model)``: a z-score per token, then ``gamma * z + beta``.

    ``fast=True`` computes the same with PyTorch's fused ``F.layer_norm``. The parameters keep the names of chapter 6's
    equation, ``gamma`` and ``beta`` (the names batch normalisation gave them, Ioffe and Szegedy 2015), where
    ``nn.LayerNorm`` says ``weight`` and ``bias``; :mod:`transformer.interop` maps one to the other.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, fast: bool = False):
        super().__init__()
        require_positive_int("d_model", d_model)
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.d_model, self.eps, self.fast = d_model, eps, fast

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check("x", x, self.d_model)
        if not self.fast:
            mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
            var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1): divide by d_model, not d_model - 1
            return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta
        return F.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)  # the fast path, fused

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


class RMSNorm(nn.Module):
    """``(..., d_model) -> (..., d_model)``: divide by the root mean square, then scale by ``gamma``."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        require_positive_int("d_model", d_model)
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.d_model, self.eps = d_model, eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check("x", x, self.d_model)
        return self.normalize(x)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:  # forward on x already checked (Qwen3's q/k norm)
        return self.gamma * x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


def make_norm(kind: str, d_model: int, eps: float = 1e-5, fast: bool = False) -> nn.Module:
    """``"layer"`` -> :class:`LayerNorm`, ``"rms"`` -> :class:`RMSNorm`."""
    if kind == "layer":
        return LayerNorm(d_model, eps, fast)
    if kind == "rms":
        return RMSNorm(d_model, eps)
    raise ValueError(f"norm: expected 'layer' or 'rms', got {kind!r}")


# ----------------------------------------------------------------------------- argument checks


def _check(name: str, x: torch.Tensor, d_model: int) -> None:
    """A floating-point ``x (..., d_model)``."""
    require_float(name, x)
    require_last_dim(name, x, d_model)
