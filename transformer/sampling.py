"""Sampling the next token: temperature, top-k and top-p (nucleus) filters (chapter 11).

A language model gives one score (logit) per word of the vocabulary. Greedy
decoding takes the best; plain sampling draws from ``softmax(logits / T)``
(chapter 9). Both filters below first cut the unlikely tail, and the draw is
made among the words that are left, their probabilities renormalised:

- :func:`top_k_filter` keeps the ``k`` most likely words (Fan et al., 2018);
- :func:`top_p_filter` keeps the fewest most likely words whose probabilities
  add up to at least ``p``: the *nucleus* (Holtzman et al., 2020).

A filtered word gets the logit ``-inf``, so the softmax gives it probability 0
and spreads its share over the words that are kept. **Ties.** Both filters
keep every word at least as likely as the last word they need, so words with
equal logits are kept or cut together and the result does not depend on the
order of the vocabulary; without ties, top-k keeps exactly ``k`` words.

:func:`sample_next` applies, in this order, the temperature, top-k and top-p
(the order of Hugging Face's ``generate``), then draws.
"""

from __future__ import annotations

import torch

from ._validate import require_float, require_rank


def _require_logits(logits) -> None:
    require_float("logits", logits)
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits: expected at least 1 dimension (..., vocab) with vocab >= 1, "
                         f"got shape {tuple(logits.shape)}")


def _require_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k: expected a whole number >= 1, got {type(k).__name__} {k!r}")
    if k < 1:
        raise ValueError(f"k: expected a whole number >= 1, got {k}")


def _require_p(p) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"p: expected a number in (0, 1], got {type(p).__name__} {p!r}")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p: expected a number in (0, 1], got {p}")


def _keep_at_least(logits: torch.Tensor, cutoff: torch.Tensor) -> torch.Tensor:
    """``-inf`` wherever ``logits < cutoff``; ``cutoff (..., 1)`` is the logit of the last word kept."""
    return logits.masked_fill(logits < cutoff, float("-inf"))


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """``logits (..., vocab)`` -> the same shape, with ``-inf`` everywhere but at the ``k`` largest logits.

    ``k >= vocab`` keeps every word. Ties with the k-th largest logit are kept too.
    """
    _require_logits(logits)
    _require_k(k)
    if k >= logits.shape[-1]:
        return logits.clone()
    cutoff = logits.topk(k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
    return _keep_at_least(logits, cutoff)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """``logits (..., vocab)`` -> the same shape, ``-inf`` outside the nucleus of probability ``p``.

    The nucleus is the smallest set of most likely words whose probabilities
    (``softmax(logits)``) sum to at least ``p``: going down the sorted list, a
    word is kept if the words before it hold less than ``p``, so the word that
    crosses ``p`` is kept. The most likely word is always kept; ``p = 1`` keeps all.
    """
    _require_logits(logits)
    _require_p(p)
    if p >= 1.0:
        return logits.clone()
    sorted_logits = logits.sort(dim=-1, descending=True).values  # (..., vocab), largest first
    mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (..., vocab): the mass down to each word
    before = torch.cat([torch.zeros_like(mass[..., :1]), mass[..., :-1]], dim=-1)  # the mass above each word
    n_keep = (before < p).sum(dim=-1, keepdim=True).clamp(min=1)  # (..., 1)
    cutoff = sorted_logits.gather(-1, n_keep - 1)  # (..., 1): the logit of the last word kept
    return _keep_at_least(logits, cutoff)


def sampling_distribution(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                          top_p: float | None = None) -> torch.Tensor:
    """The distribution :func:`sample_next` draws from: ``logits (..., vocab)`` -> probabilities, same shape.

    ``softmax`` of the logits divided by ``temperature``, then filtered by
    top-k, then by top-p (``None``: no filter); what is left is renormalised.
    """
    _require_logits(logits)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature <= 0:
        raise ValueError(f"temperature: expected a number > 0, got {temperature!r}")
    z = logits / temperature
    if top_k is not None:
        z = top_k_filter(z, top_k)
    if top_p is not None:
        z = top_p_filter(z, top_p)
    return z.softmax(dim=-1)


def sample_next(logits: torch.Tensor, temperature: float = 1.0, generator: torch.Generator | None = None,
                top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """``logits (batch, vocab)`` -> ``(batch,)`` ids drawn from :func:`sampling_distribution`.

    ``temperature = 0`` is greedy decoding: the argmax, whatever the filters. Chapter 9's
    :func:`~transformer.decoding.next_token` is this function, greedy unless told otherwise.
    """
    require_rank("logits", logits, (2,), "(batch, vocab)")
    if temperature == 0:
        _require_logits(logits)
        return logits.argmax(dim=-1)
    probs = sampling_distribution(logits, temperature, top_k, top_p)  # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (batch, 1) -> (batch,)
