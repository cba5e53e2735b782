"""Masks (chapter 7). Convention everywhere in this package: ``True`` means "may attend".

A causal mask hides the future from a decoder; a padding mask hides the
``<pad>`` tokens that fill up the shorter sentences of a batch; ``&`` combines
them. Attention turns every ``False`` into a score of ``-inf``, which the
softmax turns into a weight of exactly 0: :func:`masked_softmax`.

PyTorch's ``nn.MultiheadAttention`` uses the opposite convention for boolean
masks (``True`` = blocked): pass it ``~mask``. ``F.scaled_dot_product_attention``
uses ours.
"""

from __future__ import annotations

import torch

from ._validate import (
    require_float,
    require_index,
    require_int,
    require_mask,
    require_min_rank,
    require_positive_int,
    require_token_ids,
)


def causal_mask(seq_len: int, device=None, past: int = 0) -> torch.Tensor:
    """Lower triangle including the diagonal, ``(seq_len, seq_len)`` bool.

    Query ``t`` may attend to keys ``0 .. t``; the upper triangle is the part
    whose scores become ``-inf`` before the softmax. With ``past`` positions
    before the queries (the keys a key/value cache holds, chapter 12) it is
    ``(seq_len, past + seq_len)``: query ``t`` is position ``past + t``.
    """
    require_positive_int("seq_len", seq_len)
    require_int("past", past, low=0, expected="an int >= 0 (the positions before the queries)")
    return _causal_mask(seq_len, device, past)


def _causal_mask(seq_len: int, device=None, past: int = 0) -> torch.Tensor:
    # .tril(past) keeps the diagonal and the `past` diagonals above it: query t sees keys 0 .. past + t
    return torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=device).tril(past)


def sliding_window_mask(seq_len: int, window: int, device=None, past: int = 0) -> torch.Tensor:
    """The banded causal mask of sliding-window attention (chapter 14, :mod:`transformer.sliding_window`),
    ``(seq_len, past + seq_len)`` bool: query ``t`` (position ``past + t``) may attend to keys
    ``past + t - window + 1 .. past + t``, ``window`` of them, as Hugging Face's Mistral."""
    require_positive_int("seq_len", seq_len)
    require_positive_int("window", window)
    require_int("past", past, low=0, expected="an int >= 0 (the positions before the queries)")
    return window_band(seq_len, past + seq_len, window, past, 0, device)


def window_band(t_q: int, t_k: int, window: int, first_query: int, first_key: int, device=None) -> torch.Tensor:
    """The band of :func:`sliding_window_mask` on arguments already checked, ``(T_q, T_k)``: query ``i`` is position
    ``first_query + i``, key ``j`` position ``first_key + j`` (a layer with a window and a cache calls it)."""
    t = torch.arange(t_q, device=device)[:, None] + first_query  # (T_q, 1): the queries' positions
    i = torch.arange(t_k, device=device)[None, :] + first_key  # (1, T_k): the keys' positions
    return (i <= t) & (i > t - window)  # causal, and within the window


def padding_mask(ids: torch.Tensor, pad_id: int | None) -> torch.Tensor:
    """Keys that are real tokens: ``ids (batch, seq)`` -> ``(batch, 1, seq)`` bool.

    The middle 1 broadcasts over the queries, so every query skips the padding.
    ``pad_id=None`` means there is no padding: every key is allowed.
    """
    _check_ids_and_pad(ids, pad_id)
    return real_tokens(ids, pad_id)


def real_tokens(ids: torch.Tensor, pad_id: int | None) -> torch.Tensor:
    """:func:`padding_mask` on arguments already checked (the models call it): ``(batch, 1, seq)``, True at the
    tokens that are not ``<pad>``."""
    if pad_id is None:
        return torch.ones_like(ids, dtype=torch.bool)[:, None, :]  # (batch, 1, seq)
    return (ids != pad_id)[:, None, :]  # (batch, 1, seq)


def causal_padding_mask(ids: torch.Tensor, pad_id: int | None) -> torch.Tensor:
    """The mask of a decoder's self-attention: ``ids (batch, seq)`` -> ``(batch, seq, seq)`` bool.

    Key ``j`` is allowed for query ``t`` if it is not in the future (``j <= t``)
    and it is a real token: ``causal_mask(seq) & padding_mask(ids, pad_id)``
    (with ``pad_id=None``, the causal mask for every sequence).
    """
    _check_ids_and_pad(ids, pad_id)
    return causal_real_tokens(ids, pad_id)


def causal_real_tokens(ids: torch.Tensor, pad_id: int | None) -> torch.Tensor:
    """:func:`causal_padding_mask` on arguments already checked (the models call it): key ``j`` is a real token
    at or before query ``t``."""
    # (seq, seq) & (batch, 1, seq) -> (batch, seq, seq)
    return _causal_mask(ids.shape[1], ids.device) & real_tokens(ids, pad_id)


def fully_masked_rows(mask: torch.Tensor) -> torch.Tensor:
    """Which query rows have no key they may attend to: ``(..., T_q, T_k) -> (..., T_q)``.

    The softmax of such a row is 0/0 = NaN; attention gives it zero weights
    and a zero output instead.
    """
    _check_bool_mask(mask)
    return empty_rows(mask)


def empty_rows(mask: torch.Tensor) -> torch.Tensor:
    """:func:`fully_masked_rows` on a mask already checked (the fast path of attention calls it)."""
    return ~mask.any(dim=-1)  # (..., T_q, T_k) -> (..., T_q): no True in the row


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The softmax of each query's scores over its allowed keys: ``scores (..., T_q, T_k)`` -> weights, same shape.

    ``mask`` is bool, broadcastable to ``scores``, True = may attend. A blocked key's score
    becomes ``-inf``, so its weight is exactly 0 and the allowed keys' weights still sum to 1.
    A query row with no allowed key gets all-zero weights: never NaN, in the gradients neither.
    """
    _check_scores_and_mask(scores, mask)
    return softmax_over_allowed(scores, mask)


def softmax_over_allowed(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """:func:`masked_softmax` on arguments already checked (attention calls it): each query's softmax over the
    keys it may attend to."""
    if mask is None:
        return scores.softmax(dim=-1)
    empty = empty_rows(mask)[..., None]  # (..., T_q) -> (..., T_q, 1): the query rows with no allowed key
    if not bool(empty.any()):
        return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)  # -inf, then e^-inf = 0
    # An empty row's softmax would be 0/0 = NaN. Let it see every key (finite values and gradients), then zero it.
    weights = scores.masked_fill(~(mask | empty), float("-inf")).softmax(dim=-1)
    return weights.masked_fill(empty, 0.0)


# ----------------------------------------------------------------------------- argument checks

def _check_ids_and_pad(ids, pad_id) -> None:
    require_token_ids("ids", ids, ranks=(2,))
    if pad_id is not None:  # None: no padding, every token is real
        # an int, or a scalar that stands for one (a NumPy int, a 0-d int tensor)
        require_index("pad_id", pad_id, expected="an int (the id of <pad>) or None")


def _check_bool_mask(mask) -> None:
    require_min_rank("mask", mask, 2, "(..., T_q, T_k)")
    require_mask("mask", mask, tuple(mask.shape), "(..., T_q, T_k)")  # bool; a mask broadcasts to its own shape


def _check_scores_and_mask(scores, mask) -> None:
    require_float("scores", scores)
    require_min_rank("scores", scores, 2, "(..., T_q, T_k)")
    if mask is not None:
        require_mask("mask", mask, tuple(scores.shape), "scores (..., T_q, T_k)")
