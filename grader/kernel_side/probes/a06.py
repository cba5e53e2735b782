"""Probes of assignment 06, add & norm and the feed-forward network (kernel side: standard library and torch only)."""

from __future__ import annotations

import torch


def encoder_block(user, d_model, n_heads, d_ff, norm_first, state, x):
    """EncoderBlock(d_model, n_heads, d_ff, norm_first), each sub-module's state loaded, in eval mode, on x."""
    block = user["EncoderBlock"](d_model, n_heads, d_ff, norm_first=norm_first)
    for part, part_state in state.items():
        getattr(block, part).load_state_dict(part_state)
    block.eval()
    with torch.no_grad():
        return block(x)
