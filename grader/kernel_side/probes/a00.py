"""Probes of assignment 00, why Transformers (kernel side: standard library and torch only)."""

from __future__ import annotations

import torch


def elman_rnn(user, input_size, hidden_size, state, x, weight):
    """ElmanRNN(input_size, hidden_size) with the weights ``state``: whether it is a module, the shapes of its
    parameters, its output on ``x``, and the gradients of the parameters of ``state`` for the loss
    ``(output * weight).sum()``. ``out`` and ``grads`` are None when they cannot be computed."""
    reply = {"module": False, "params": None, "out": None, "grads": None}
    model = user["ElmanRNN"](input_size, hidden_size)
    if not isinstance(model, torch.nn.Module):
        return reply
    registered = dict(model.named_parameters())
    reply["module"] = True
    reply["params"] = {n: list(p.shape) for n, p in registered.items()}
    if any(n not in registered or list(registered[n].shape) != list(v.shape) for n, v in state.items()):
        return reply
    with torch.no_grad():
        for n, v in state.items():
            registered[n].copy_(v)
    out = model(x)
    reply["out"] = out
    if isinstance(out, torch.Tensor) and out.requires_grad and tuple(out.shape) == tuple(weight.shape):
        model.zero_grad()
        (out * weight).sum().backward()
        reply["grads"] = {n: (None if registered[n].grad is None else registered[n].grad.detach().clone())
                          for n in state}
    return reply
