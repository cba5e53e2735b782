"""Masks (chapter 7). Convention everywhere in this package: ``True`` means "may attend".

PyTorch's ``nn.MultiheadAttention`` uses the opposite convention for boolean
masks (``True`` = blocked); ``F.scaled_dot_product_attention`` uses ours.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_rank


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    """Lower triangle including the diagonal, ``(seq_len, seq_len)`` bool.

    Query ``t`` may attend to keys ``0 .. t``; the upper triangle is the part
    whose scores become ``-inf`` before the softmax.
    """
    require_positive_int("seq_len", seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are real tokens: ``ids (batch, seq)`` -> ``(batch, 1, seq)`` bool.

    The middle 1 broadcasts over the queries, so every query skips the padding.
    """
    require_rank("ids", ids, (2,), "(batch, seq)")
    return (ids != pad_id)[:, None, :]  # (batch, 1, seq)


def fully_masked_rows(mask: torch.Tensor) -> torch.Tensor:
    """Which query rows have no key they may attend to: ``(..., T_q, T_k) -> (..., T_q)``."""
    return ~mask.any(dim=-1)
