"""Probes of assignment 11, GPT, BERT and ViT (kernel side: standard library, numpy and torch only)."""

from __future__ import annotations

import torch


def mask_tokens(user, ids, mask_id, vocab_size, special_ids, p, seed):
    """mask_tokens twice, with generators seeded alike: both results, and the ids of the first call after it."""
    given = ids.clone()
    first = user["mask_tokens"](given, mask_id, vocab_size, list(special_ids), p, torch.Generator().manual_seed(seed))
    second = user["mask_tokens"](ids.clone(), mask_id, vocab_size, list(special_ids), p,
                                 torch.Generator().manual_seed(seed))
    return {"first": list(first) if isinstance(first, tuple) else first,
            "second": list(second) if isinstance(second, tuple) else second, "args": [given]}
