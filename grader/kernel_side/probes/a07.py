"""Probes of assignment 07, masking (kernel side: standard library, numpy and torch only)."""

from __future__ import annotations

import torch


def masked_attention(user, q, k, v, mask, grad_weights):
    """masked_attention on leaves q, k, v: the output, and the gradients of sum(out * grad_weights) (None where
    the output cannot be differentiated, or no gradient reached a leaf)."""
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = user["masked_attention"](*leaves, mask.clone())
    grads = None
    if isinstance(out, torch.Tensor) and out.requires_grad and tuple(out.shape) == tuple(grad_weights.shape):
        (out * grad_weights).sum().backward()
        grads = [t.grad for t in leaves]
    return {"out": out, "grads": grads}
