"""Training with teacher forcing (chapters 7, 9 and 10)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import require_rank


def teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``<sos> y1 .. yn <eos>`` into decoder input ``<sos> y1 .. yn`` and labels ``y1 .. yn <eos>``.

    ``tgt (batch, T)`` -> two tensors ``(batch, T - 1)``: position ``t`` reads
    tokens ``0..t`` and must predict token ``t + 1``.
    """
    require_rank("tgt", tgt, (2,), "(batch, seq)")
    if tgt.shape[1] < 2:
        raise ValueError(f"tgt: expected at least 2 tokens (<sos> and one more), got {tgt.shape[1]}")
    return tgt[:, :-1], tgt[:, 1:]


def sequence_loss(logits: torch.Tensor, labels: torch.Tensor, pad_id: int | None = 0) -> torch.Tensor:
    """Mean cross-entropy over the non-pad labels: ``logits (batch, T, V)``, ``labels (batch, T)``."""
    require_rank("logits", logits, (3,), "(batch, seq, vocab)")
    require_rank("labels", labels, (2,), "(batch, seq)")
    if logits.shape[:2] != labels.shape:
        raise ValueError(f"labels: expected shape {tuple(logits.shape[:2])} to match logits, got {tuple(labels.shape)}")
    ignore = -100 if pad_id is None else pad_id
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore)


def train_step(model, optimizer, src: torch.Tensor, tgt: torch.Tensor, pad_id: int = 0) -> float:
    """One optimizer step of an encoder-decoder with teacher forcing; returns the loss."""
    model.train()
    dec_in, labels = teacher_forcing(tgt)
    loss = sequence_loss(model(src, dec_in), labels, pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()
