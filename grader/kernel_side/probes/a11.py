"""Probes of assignment 11, GPT, BERT and ViT (kernel side: standard library, numpy and torch only)."""

from __future__ import annotations

import torch


def mask_tokens(user, ids, mask_id, vocab_size, special_ids, p, seed):
    """mask_tokens twice on the very same ids tensor, with generators seeded alike: both results, and those ids
    after the calls."""
    given = ids.clone()
    first = user["mask_tokens"](given, mask_id, vocab_size, list(special_ids), p, torch.Generator().manual_seed(seed))
    first = [t.clone() if isinstance(t, torch.Tensor) else t for t in first] if isinstance(first, tuple) else first
    second = user["mask_tokens"](given, mask_id, vocab_size, list(special_ids), p,
                                 torch.Generator().manual_seed(seed))
    return {"first": first, "second": list(second) if isinstance(second, tuple) else second, "args": [given]}
