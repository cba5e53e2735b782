"""Turning logits into tokens: argmax, temperature, and the decoding loop (chapter 9)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from ._validate import require_float, require_int, require_rank
from .modes import eval_mode
from .sampling import draw_next, require_sampling_settings, sample_next, sampling_distribution


def softmax_with_temperature(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``softmax(logits / temperature)`` over the last dimension of ``logits (..., vocab)``; a small temperature
    sharpens, a large one flattens. It is :func:`~transformer.sampling.sampling_distribution` without the
    filters of chapter 11."""
    return sampling_distribution(logits, temperature)


next_token = sample_next
"""Chapter 9's name for :func:`transformer.sampling.sample_next`, the same function: ``(batch, vocab)`` logits ->
``(batch,)`` ids, the argmax when ``temperature == 0`` (the default), else a sample from
``softmax(logits / temperature)`` after the top-k and top-p filters of chapter 11 if they are given."""


@torch.no_grad()
def generate(logits_fn: Callable[[torch.Tensor], torch.Tensor], prefix: torch.Tensor, max_new_tokens: int,
             eos_id: int | None = None, temperature: float = 0.0, generator: torch.Generator | None = None,
             top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """Append one token at a time: ``logits_fn(ids (batch, seq)) -> (batch, seq, vocab)``; each token chosen
    as :func:`next_token` chooses it (greedy, or sampled with ``temperature``, ``top_k``, ``top_p``).

    Stops after ``max_new_tokens`` or when every row has produced ``eos_id``;
    a row that has finished is padded with ``eos_id`` from then on.
    """
    _require_generation(prefix, max_new_tokens, temperature, top_k, top_p)
    ids = prefix
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for step in range(max_new_tokens):
        logits = logits_fn(ids)  # (batch, seq, vocab)
        if step == 0:
            _require_step_logits(logits)  # logits_fn is the caller's: what it returns is checked once
        tok = draw_next(logits[:, -1], temperature, generator, top_k, top_p)  # (batch,): next_token's choice
        if eos_id is not None:
            tok = tok.masked_fill(done, eos_id)
            done |= tok == eos_id
        ids = torch.cat([ids, tok[:, None]], dim=1)  # (batch, seq + 1)
        if eos_id is not None and bool(done.all()):
            break
    return ids


def refuses_max_len(fn: Callable) -> Callable:
    """``max_len=`` (its old name) gets an error that names ``max_new_tokens``: ``max_len`` is the config's
    number of positions, not the number of tokens to add."""
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if "max_len" in kwargs:
            raise TypeError(f"{fn.__name__}: max_len is now called max_new_tokens (the number of tokens to add; "
                            f"max_len is the config's number of positions), got max_len={kwargs['max_len']!r}")
        return fn(*args, **kwargs)
    return checked


@refuses_max_len
def greedy_decode(model, src: torch.Tensor, max_new_tokens: int, sos_id: int, eos_id: int) -> torch.Tensor:
    """Translate with an :class:`~transformer.model.EncoderDecoder`: encode once, then argmax step by step.

    Returns ``(batch, <= max_new_tokens + 1)`` ids starting with ``sos_id``.
    """
    return sample_decode(model, src, max_new_tokens, sos_id, eos_id, temperature=0.0)


@refuses_max_len
def sample_decode(model, src: torch.Tensor, max_new_tokens: int, sos_id: int, eos_id: int, temperature: float = 1.0,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Like :func:`greedy_decode`, but each token is drawn from ``softmax(logits / temperature)``."""
    with eval_mode(model):
        memory, src_mask = model.encode(src)
        start = torch.full((src.shape[0], 1), sos_id, dtype=torch.long, device=src.device)
        return generate(lambda ids: model.decode(ids, memory, src_mask), start, max_new_tokens, eos_id, temperature,
                        generator)


@torch.no_grad()
def beam_search(logits_fn: Callable[[torch.Tensor], torch.Tensor], prefix: list[int], beam_size: int,
                max_new_tokens: int, eos_id: int, alpha: float = 1.0) -> tuple[list[int], float]:
    """The best continuation of one sequence found by keeping ``beam_size`` hypotheses at each step.

    ``logits_fn(ids (k, seq)) -> (k, seq, vocab)``. A hypothesis is scored by its summed log-probability
    divided by ``length ** alpha`` (its number of new tokens; ``alpha = 0``: no length normalisation,
    which favours short outputs). A hypothesis that emits ``eos_id`` is finished and set aside; the
    search ends when ``beam_size`` hypotheses have finished or after ``max_new_tokens`` steps.
    Returns (ids with the prefix, normalised score). ``beam_size = 1`` is greedy decoding.
    """
    _require_search(prefix, beam_size, max_new_tokens)

    def normalised(logp: float, n_new: int) -> float:
        return logp / n_new ** alpha

    beams = [(list(prefix), 0.0)]                       # (ids, summed log-probability of the new tokens)
    finished: list[tuple[list[int], float]] = []
    for _ in range(max_new_tokens):
        ids = torch.tensor([b[0] for b in beams])       # (k, seq)
        logp = logits_fn(ids)[:, -1].log_softmax(dim=-1)  # (k, vocab)
        total = logp + torch.tensor([b[1] for b in beams])[:, None]  # (k, vocab)
        best = total.flatten().topk(min(beam_size, total.numel()))
        beams = []
        for score, flat in zip(best.values.tolist(), best.indices.tolist()):
            row, tok = divmod(flat, total.shape[1])
            hyp = (ids[row].tolist() + [tok], score)
            (finished if tok == eos_id else beams).append(hyp)
        if len(finished) >= beam_size or not beams:
            break
    pool = [(ids, normalised(s, len(ids) - len(prefix))) for ids, s in finished + beams]
    return max(pool, key=lambda h: h[1])


@refuses_max_len
def beam_decode(model, src: torch.Tensor, beam_size: int, max_new_tokens: int, sos_id: int, eos_id: int,
                alpha: float = 1.0) -> list[int]:
    """Translate one sentence ``src (1, S)`` with an :class:`~transformer.model.EncoderDecoder` by beam search."""
    _require_one_sentence(src)
    with eval_mode(model):
        memory, src_mask = model.encode(src)

        def logits_fn(ids):                              # ids (k, seq): one encoding serves every beam
            k = ids.shape[0]
            return model.decode(ids, memory.expand(k, -1, -1), src_mask.expand(k, *src_mask.shape[1:]))

        ids, _ = beam_search(logits_fn, [sos_id], beam_size, max_new_tokens, eos_id, alpha)
    return ids


# ----------------------------------------------------------------------------- argument checks


def _require_generation(prefix, max_new_tokens: int, temperature, top_k, top_p) -> None:
    """The arguments of :func:`generate`, the sampling settings included, once for all its steps."""
    require_rank("prefix", prefix, (2,), "(batch, seq)")
    require_int("max_new_tokens", max_new_tokens, low=0, expected="a whole number >= 0")
    require_sampling_settings(temperature, top_k, top_p, greedy=True)


def _require_step_logits(logits) -> None:
    """What ``logits_fn`` returned on the first step: floating-point logits ``(batch, seq, vocab)``."""
    require_float("logits_fn(ids)", logits)
    require_rank("logits_fn(ids)", logits, (3,), "(batch, seq, vocab)")


def _require_search(prefix: list[int], beam_size: int, max_new_tokens: int) -> None:
    require_int("beam_size", beam_size, low=1, expected="a whole number >= 1")
    require_int("max_new_tokens", max_new_tokens, low=1, expected="a whole number >= 1")
    if len(prefix) == 0:
        raise ValueError("prefix: expected at least one token (e.g. <sos>), got an empty list")


def _require_one_sentence(src) -> None:
    require_rank("src", src, (2,), "(1, seq)")
    if src.shape[0] != 1:
        raise ValueError(f"src: expected one sentence, shape (1, seq), got {tuple(src.shape)}")
