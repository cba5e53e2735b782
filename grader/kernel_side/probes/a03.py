"""Probes of assignment 03, positional encodings (kernel side: standard library and torch only)."""

from __future__ import annotations

import torch


def rope_pairs(user, q, k, positions, offset):
    """``[rope(q, t), rope(k, t - offset)]`` for every ``t`` of ``positions``."""
    rope = user["rope"]
    return [[rope(q.clone(), t), rope(k.clone(), t - offset)] for t in positions]


def sinusoidal(user, d_model, max_len, x, weights=None, after=None):
    """SinusoidalPositionalEncoding(d_model, max_len): whether it is a module, how many trainable parameters it
    has, whether it has a buffer named table, and its output on x (None when it is not a module). With ``weights``
    and ``after``: then one SGD step (lr 1) on its parameters for the loss sum(weights * output), and its output on
    ``after`` (the output before the step when it has nothing to train)."""
    module = user["SinusoidalPositionalEncoding"](d_model, max_len)
    if not isinstance(module, torch.nn.Module):
        return {"module": False, "trainable": 0, "table_buffer": False, "out": None, "stepped": None}
    trainable = sum(1 for p in module.parameters() if p.requires_grad)
    table_buffer = "table" in dict(module.named_buffers())
    out = module(x.clone())
    stepped = None
    if weights is not None:
        params = [p for p in module.parameters() if p.requires_grad]
        if params and isinstance(out, torch.Tensor) and out.requires_grad:
            opt = torch.optim.SGD(params, lr=1.0)
            opt.zero_grad()
            (out * weights).sum().backward()
            opt.step()
        stepped = module(after.clone())
    return {"module": True, "trainable": trainable, "table_buffer": table_buffer, "out": out, "stepped": stepped}
