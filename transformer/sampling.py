"""Sampling the next token: temperature, top-k and top-p (nucleus) filters (chapter 11).

A language model gives one score (logit) per word of the vocabulary. Greedy
decoding takes the best; plain sampling draws from ``softmax(logits / temperature)``
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

from ._validate import require_float, require_int, require_number, require_rank


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """``logits (..., vocab)`` -> the same shape, with ``-inf`` everywhere but at the ``k`` largest logits.

    ``k >= vocab`` keeps every word. Ties with the k-th largest logit are kept too.
    """
    _require_logits(logits)
    _require_k(k)
    return _top_k(logits, k)


def _top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    """:func:`top_k_filter` on arguments already checked."""
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
    return _top_p(logits, p)


def _top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    """:func:`top_p_filter` on arguments already checked: ``logits (..., vocab)``, ``p`` in (0, 1]."""
    if p >= 1.0:
        return logits.clone()
    sorted_logits = logits.sort(dim=-1, descending=True).values  # (..., vocab), largest first
    mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (..., vocab): the mass down to each word
    before = torch.cat([torch.zeros_like(mass[..., :1]), mass[..., :-1]], dim=-1)  # the mass above each word
    n_keep = (before < p).sum(dim=-1, keepdim=True).clamp(min=1)  # (..., 1)
    cutoff = sorted_logits.gather(-1, n_keep - 1)  # (..., 1): the logit of the last word kept
    return _keep_at_least(logits, cutoff)


def _keep_at_least(logits: torch.Tensor, cutoff: torch.Tensor) -> torch.Tensor:
    """``-inf`` wherever ``logits < cutoff``; ``cutoff (..., 1)`` is the logit of the last word kept."""
    return logits.masked_fill(logits < cutoff, float("-inf"))


def sampling_distribution(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                          top_p: float | None = None) -> torch.Tensor:
    """The distribution :func:`sample_next` draws from: ``logits (..., vocab)`` -> probabilities, same shape.

    ``softmax`` of the logits divided by ``temperature``, then filtered by
    top-k, then by top-p (``None``: no filter); what is left is renormalised.
    """
    _require_sampling(logits, temperature, top_k, top_p)
    return _distribution(logits, temperature, top_k, top_p)


def _distribution(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """:func:`sampling_distribution` on arguments already checked."""
    z = logits / temperature
    if top_k is not None:
        z = _top_k(z, top_k)
    if top_p is not None:
        z = _top_p(z, top_p)
    return z.softmax(dim=-1)


def sample_next(logits: torch.Tensor, temperature: float = 0.0, generator: torch.Generator | None = None,
                top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """``logits (batch, vocab)`` -> ``(batch,)`` ids drawn from :func:`sampling_distribution`.

    ``temperature = 0``, the default, is greedy decoding: the argmax, whatever the filters. Chapter 9 calls this
    function :func:`~transformer.decoding.next_token`.
    """
    _require_sampling(logits, temperature, top_k, top_p, batch_of_rows=True)
    return draw_next(logits, temperature, generator, top_k, top_p)


def draw_next(logits: torch.Tensor, temperature: float, generator: torch.Generator | None, top_k: int | None,
                 top_p: float | None) -> torch.Tensor:
    """:func:`sample_next` on arguments already checked (the loop of :func:`~transformer.decoding.generate`)."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = _distribution(logits, temperature, top_k, top_p)  # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (batch, 1) -> (batch,)


# ----------------------------------------------------------------------------- argument checks


def _require_sampling(logits, temperature, top_k, top_p, batch_of_rows: bool = False) -> None:
    """The arguments of :func:`sampling_distribution`, or with ``batch_of_rows`` those of :func:`sample_next`:
    logits ``(batch, vocab)``, and a temperature of 0 allowed (greedy)."""
    if batch_of_rows:
        require_rank("logits", logits, (2,), "(batch, vocab)")
    _require_logits(logits)
    require_sampling_settings(temperature, top_k, top_p, greedy=batch_of_rows)


def require_sampling_settings(temperature, top_k, top_p, greedy: bool) -> None:
    """A temperature > 0 (or 0 if ``greedy`` decoding is allowed), and the filters ``top_k``, ``top_p`` if given:
    the settings of :func:`sample_next`, which :func:`~transformer.decoding.generate` checks once for every step."""
    if not (greedy and temperature == 0):
        require_number("temperature", temperature, low=0, open_low=True)
    if top_k is not None:
        _require_k(top_k, "top_k")
    if top_p is not None:
        _require_p(top_p, "top_p")


def _require_logits(logits) -> None:
    require_float("logits", logits)
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits: expected at least 1 dimension (..., vocab) with vocab >= 1, "
                         f"got shape {tuple(logits.shape)}")


def _require_k(k, name: str = "k") -> None:
    """``name``: the argument as the caller named it (``k`` of :func:`top_k_filter`, ``top_k`` of the others)."""
    require_int(name, k, low=1, expected="a whole number >= 1")


def _require_p(p, name: str = "p") -> None:
    require_number(name, p, 0, 1, open_low=True)
