"""BERT's masked-language-model inputs: the 15% and the 80/10/10 rule (chapter 11).

An encoder-only model sees every position, so "predict the next word" would
be no task at all: the answer is in its input. BERT (Devlin et al., 2019)
hides words instead and asks for them back. :func:`mask_tokens` chooses each
ordinary token with probability ``p = 0.15``; of the chosen ones,

- 80% are replaced by ``[MASK]``,
- 10% by a random ordinary token,
- 10% are left as they are,

and the model must predict the original token at every chosen position, and
only there: ``labels`` hold ``ignore_index`` (``-100``, the default of
``F.cross_entropy``) everywhere else. Because ``[MASK]`` never occurs when
the model is used later, the random and the unchanged 10% keep it from
learning that only ``[MASK]`` positions matter.

:func:`masked_lm_loss` is the loss of such a batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._validate import require_int, require_probability, require_token_ids
from .data import maskable
from .train import masked_token_loss

IGNORE_INDEX = -100
MASK_SHARE, RANDOM_SHARE = 0.8, 0.1  # of the chosen tokens; the remaining 10% stay unchanged


def ordinary_ids(vocab_size: int, special_ids: Sequence[int]) -> torch.Tensor:
    """The ids that may be chosen and drawn as random replacements: ``(n_ordinary,)``, in order."""
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[[i for i in special_ids if 0 <= i < vocab_size]] = False
    return keep.nonzero().squeeze(-1)  # (n_ordinary, 1) -> (n_ordinary,)


def mask_tokens(ids: torch.Tensor, mask_id: int, vocab_size: int, p: float = 0.15,
                generator: torch.Generator | None = None, special_ids: Sequence[int] = (),
                ignore_index: int = IGNORE_INDEX) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids (batch, seq)`` -> ``(inputs, labels)``, both ``(batch, seq)``: BERT's masking.

    Each token that is not special (``special_ids``, e.g. ``[PAD]``, ``[CLS]``,
    ``[SEP]``; ``mask_id`` always counts as special) is chosen with probability
    ``p``. A chosen token becomes ``mask_id`` with probability 0.8, a random
    ordinary token (uniform over the ids that are not special) with
    probability 0.1, and stays as it is otherwise. ``labels`` hold the
    original id at the chosen positions and ``ignore_index`` elsewhere.
    """
    _require_masking(ids, mask_id, vocab_size, p, special_ids)
    specials = [*special_ids, mask_id]
    ordinary = ordinary_ids(vocab_size, specials)  # (n_ordinary,)
    allowed = maskable(ids, specials)  # (batch, seq)
    chosen = (torch.rand(ids.shape, generator=generator) < p) & allowed
    action = torch.rand(ids.shape, generator=generator)  # one more draw per position: which of the three
    random_ids = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)].to(ids.dtype)
    inputs = replace_chosen(ids, chosen, action, random_ids, mask_id)
    labels = torch.where(chosen, ids, torch.full_like(ids, ignore_index))
    return inputs, labels


def replace_chosen(ids: torch.Tensor, chosen: torch.Tensor, action: torch.Tensor, random_ids: torch.Tensor,
                   mask_id: int) -> torch.Tensor:
    """The 80/10/10 rule on drawn numbers, all ``(batch, seq)``: a chosen token becomes ``mask_id`` where
    ``action < 0.8``, ``random_ids`` where ``0.8 <= action < 0.9``, and stays otherwise."""
    to_mask = chosen & (action < MASK_SHARE)
    to_random = chosen & (action >= MASK_SHARE) & (action < MASK_SHARE + RANDOM_SHARE)
    return torch.where(to_mask, torch.full_like(ids, mask_id), torch.where(to_random, random_ids, ids))


def masked_lm_loss(model, batch: tuple[torch.Tensor, torch.Tensor], ignore_index: int = IGNORE_INDEX,
                   label_smoothing: float = 0.0) -> torch.Tensor:
    """Cross-entropy of an encoder-only ``model`` on ``batch = (inputs, labels)`` from :func:`mask_tokens`.

    ``model(inputs) -> (batch, seq, vocab)``; only the chosen positions count (labels other than
    ``ignore_index``): :func:`transformer.train.masked_token_loss` with ``ignore_index`` as its ignored label.
    """
    return masked_token_loss(model, batch, ignore_index, label_smoothing)


# ----------------------------------------------------------------------------- argument checks


def _require_masking(ids, mask_id, vocab_size, p, special_ids) -> None:
    """The arguments of :func:`mask_tokens`: a vocabulary of at least 2 ids, ``mask_id`` and ``ids`` in it,
    a probability ``p``, and ``special_ids`` (token ids) that leave some ordinary token to choose."""
    require_int("vocab_size", vocab_size, low=2, expected="a whole number >= 2")
    require_int("mask_id", mask_id, 0, vocab_size - 1, expected=f"a token id in [0, {vocab_size - 1}]")
    require_probability("p", p)
    if isinstance(special_ids, str) or not isinstance(special_ids, Sequence):  # a generator would be read up here
        raise TypeError(f"special_ids: expected a list of token ids, got {special_ids!r}")
    for i in special_ids:
        require_int("special_ids", i, expected="a list of token ids, each an int")
    require_token_ids("ids", ids, vocab_size, ranks=(2,))
    if len({i for i in [*special_ids, mask_id] if 0 <= i < vocab_size}) == vocab_size:
        raise ValueError(f"special_ids: expected some ordinary tokens left to choose, got all {vocab_size} special")
