"""Probes of assignment 05, multi-head attention (kernel side: standard library and torch only)."""

from __future__ import annotations

import torch


def multihead(user, d_model, n_heads, weights, x, memory=None):
    """MultiHeadAttention(d_model, n_heads): the shapes of its parameters by name, how many numbers they hold, and,
    with ``weights`` copied in, its output on ``x`` (and ``memory``); the output is None when they do not fit."""
    module = user["MultiHeadAttention"](d_model, n_heads)
    params = {name: [int(s) for s in p.shape] for name, p in module.named_parameters()}
    reply = {"params": params, "n_params": sum(int(p.numel()) for p in module.parameters()), "out": None}
    if any(params.get(name) != [int(s) for s in w.shape] for name, w in weights.items()):
        return reply
    with torch.no_grad():
        for name, w in weights.items():
            module.get_parameter(name).copy_(w)
        reply["out"] = module(x) if memory is None else module(x, memory)
    return reply
