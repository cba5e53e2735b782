"""Turning logits into tokens: argmax, temperature, and the decoding loop (chapter 9)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._validate import require_rank, require_tensor


def softmax_with_temperature(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``softmax(logits / T)`` over the last dimension; small ``T`` sharpens, large ``T`` flattens."""
    require_tensor("logits", logits)
    if temperature <= 0:
        raise ValueError(f"temperature: expected a number > 0, got {temperature}")
    return (logits / temperature).softmax(dim=-1)


def next_token(logits: torch.Tensor, temperature: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """``(batch, vocab)`` logits -> ``(batch,)`` ids: argmax when ``temperature == 0``, else a sample."""
    require_rank("logits", logits, (2,), "(batch, vocab)")
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    probs = softmax_with_temperature(logits, temperature)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(logits_fn: Callable[[torch.Tensor], torch.Tensor], prefix: torch.Tensor, max_new_tokens: int,
             eos_id: int | None = None, temperature: float = 0.0,
             generator: torch.Generator | None = None) -> torch.Tensor:
    """Append one token at a time: ``logits_fn(ids (batch, T)) -> (batch, T, vocab)``.

    Stops after ``max_new_tokens`` or when every row has produced ``eos_id``;
    a row that has finished is padded with ``eos_id`` from then on.
    """
    require_rank("prefix", prefix, (2,), "(batch, seq)")
    ids = prefix
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for _ in range(max_new_tokens):
        tok = next_token(logits_fn(ids)[:, -1], temperature, generator)  # (batch,)
        if eos_id is not None:
            tok = tok.masked_fill(done, eos_id)
            done |= tok == eos_id
        ids = torch.cat([ids, tok[:, None]], dim=1)  # (batch, T + 1)
        if eos_id is not None and bool(done.all()):
            break
    return ids


def greedy_decode(model, src: torch.Tensor, max_len: int, sos_id: int, eos_id: int) -> torch.Tensor:
    """Translate with an :class:`~transformer.model.EncoderDecoder`: encode once, then argmax step by step.

    Returns ``(batch, <= max_len + 1)`` ids starting with ``sos_id``.
    """
    return sample_decode(model, src, max_len, sos_id, eos_id, temperature=0.0)


def sample_decode(model, src: torch.Tensor, max_len: int, sos_id: int, eos_id: int, temperature: float = 1.0,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Like :func:`greedy_decode`, but each token is drawn from ``softmax(logits / temperature)``."""
    was_training = model.training
    model.eval()
    memory, src_mask = model.encode(src)
    start = torch.full((src.shape[0], 1), sos_id, dtype=torch.long, device=src.device)
    out = generate(lambda ids: model.decode(ids, memory, src_mask), start, max_len, eos_id, temperature, generator)
    model.train(was_training)
    return out
