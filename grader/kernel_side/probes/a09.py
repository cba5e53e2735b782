"""Probes of assignment 09, the output head (kernel side: standard library, numpy and torch only)."""

from __future__ import annotations

import torch


def loss(user, logits, labels, pad_id):
    """The loss of a leaf copy of ``logits`` (with a leading dimension of 1 added, so that a 0-d tensor travels as
    plain data and a loss of another shape keeps its own), its gradient through ``loss.backward()`` (None if it
    has none), and the inputs after the call."""
    x = logits.clone().requires_grad_(True)
    given = labels.clone()
    out = user["masked_cross_entropy"](x, given, pad_id)
    grad = None
    if isinstance(out, torch.Tensor) and out.requires_grad:
        try:
            out.backward()
            grad = x.grad
        except RuntimeError:  # not a scalar, or no graph: no gradient
            grad = None
    value = out.detach()[None] if isinstance(out, torch.Tensor) else out
    return {"out": value, "grad": grad, "args": [x.detach(), given]}


def greedy(user, A, B, prefix, eos_id, max_new_tokens, limit, C=None):
    """greedy_decode with next-token logits ``A[last] + 0.5 B[second to last]`` (plus ``C[n]`` at the n-th call, when
    ``C`` is given): the ids, the prefix list after the call, the sequences next_logits was called with, and the ids
    of a second call on the very same prefix list (with a next_logits of its own)."""
    def decode(given, seen):
        def next_logits(ids):
            seen.append([int(i) for i in ids])
            if len(seen) > limit:
                raise RuntimeError(f"next_logits was called more than {limit} times: does your loop stop at eos_id "
                                   "and after max_new_tokens new tokens?")
            ids = seen[-1]
            logits = A[ids[-1]] + 0.5 * B[ids[-2] if len(ids) > 1 else 0]
            return logits if C is None else logits + C[len(seen) - 1]

        out = user["greedy_decode"](next_logits, given, eos_id, max_new_tokens)
        return list(out) if isinstance(out, list) else out   # a copy: a later call may change a list it returned

    given, seen = list(prefix), []
    out = decode(given, seen)
    again = decode(given, [])
    return {"out": out, "args": [given], "seen": seen, "again": again}


def _sgd_step(head, h):
    """One SGD step (lr 0.1) on the head's parameters, for the loss mean(logsumexp(head(h)))."""
    params = list(head.parameters())
    out = head(h.clone())
    if params and isinstance(out, torch.Tensor) and out.requires_grad:
        opt = torch.optim.SGD(params, lr=0.1)
        opt.zero_grad()
        out.logsumexp(dim=-1).mean().backward()
        opt.step()


def untied_head(user, d_model, vocab_size, h, W, seed):
    """An untied OutputHead: its matrix as built and its logits on ``h`` as built, then with ``W`` copied in its
    logits and the matrix after one SGD step (None where there is no (vocab_size, d_model) tensor self.weight to copy
    into)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        head = user["OutputHead"](d_model, vocab_size)
    w = getattr(head, "weight", None) if isinstance(head, torch.nn.Module) else None
    reply = {"parameter": isinstance(w, torch.nn.Parameter), "registered": any(p is w for p in head.parameters())
             if isinstance(head, torch.nn.Module) else False, "init": None, "fresh": None, "logits": None,
             "after": None}
    if not isinstance(w, torch.Tensor) or tuple(w.shape) != tuple(W.shape):
        return reply
    reply["init"] = w.detach().clone()
    with torch.no_grad():
        fresh = head(h.clone())   # the head as built, before W is copied in
    reply["fresh"] = fresh.detach() if isinstance(fresh, torch.Tensor) else fresh
    with torch.no_grad():
        w.copy_(W)
    out = head(h.clone())   # each call its own copy: forward may change h in place
    reply["logits"] = out.detach() if isinstance(out, torch.Tensor) else out
    _sgd_step(head, h)
    reply["after"] = w.detach().clone()
    return reply


def tied_head(user, d_model, vocab_size, h, E):
    """A head tied to an ``nn.Embedding`` holding ``E``: its logits, the embedding's gradient and matrix after one
    SGD step on the head's parameters, the tensors of the head's state dict after it; and what the kernel sees of
    the tying (identity, parameters)."""
    emb = torch.nn.Embedding(vocab_size, d_model)
    with torch.no_grad():
        emb.weight.copy_(E)
    head = user["OutputHead"](d_model, vocab_size, emb)
    if not isinstance(head, torch.nn.Module):
        return {"logits": None, "grad": None, "after": None, "state": None, "same": False, "own": 0, "count": 0}
    reply = {"same": getattr(head, "weight", None) is emb.weight,
             "own": sum(1 for p in head.parameters() if p is not emb.weight),
             "count": sum(p.numel() for p in torch.nn.ModuleList([emb, head]).parameters())}
    out = head(h.clone())   # each call its own copy: forward may change h in place
    reply["logits"] = out.detach() if isinstance(out, torch.Tensor) else out
    _sgd_step(head, h)
    reply["grad"] = emb.weight.grad
    reply["after"] = emb.weight.detach().clone()
    reply["state"] = [t.detach().clone() for t in head.state_dict().values()]
    return reply
