"""Probes of assignment 02, embeddings (kernel side: standard library and torch only)."""

from __future__ import annotations

import torch


def embedding(user, vocab_size, d_model, weight, ids):
    """Embedding(vocab_size, d_model): whether it is a module, the shapes of its parameters, then its output on
    ``ids`` with ``weight`` copied into its one parameter, ``weight`` (None when it has no such parameter)."""
    reply = {"module": False, "params": None, "out": None}
    module = user["Embedding"](vocab_size, d_model)
    if not isinstance(module, torch.nn.Module):
        return reply
    reply["module"] = True
    reply["params"] = [list(p.shape) for p in module.parameters()]
    own = dict(module.named_parameters())
    if reply["params"] != [[vocab_size, d_model]] or "weight" not in own:
        return reply
    with torch.no_grad():
        own["weight"].copy_(weight)
        reply["out"] = module(ids)
    return reply


def embedding_init(user, vocab_size, d_model, seed):
    """The initial weight of Embedding(vocab_size, d_model), after torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    return user["Embedding"](vocab_size, d_model).weight.detach()
