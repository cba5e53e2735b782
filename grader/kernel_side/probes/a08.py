"""Probes of assignment 08, cross-attention (kernel side: standard library, numpy and torch only)."""

from __future__ import annotations

import torch


def block(user, d_model, n_heads, d_ff, state, x, memory, self_mask=None, memory_mask=None):
    """The student's DecoderBlock with the given weights (``state``, strictly), in eval mode without gradients: its
    output (``loaded`` False and no output when the block is not a module the weights fit)."""
    made = user["DecoderBlock"](d_model, n_heads, d_ff)
    if not isinstance(made, torch.nn.Module):
        return {"loaded": False, "out": None}
    try:
        made.load_state_dict(state)
    except RuntimeError:  # missing, unexpected or misshapen weights
        return {"loaded": False, "out": None}
    made.eval()
    with torch.no_grad():
        out = made(x, memory) if self_mask is None and memory_mask is None else made(x, memory, self_mask,
                                                                                       memory_mask)
    return {"loaded": True, "out": out}  # x may have been changed in place
