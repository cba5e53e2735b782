"""Hidden tests of assignment 09, exercise 4: the output head, untied and tied to the embedding
(references: the logits and one SGD step computed here with PyTorch's autograd)."""

from __future__ import annotations

import math

import torch

from grader.hidden import Case, Request, probe
from grader.hidden.judge import tensor

TOL = {"atol": 1e-5, "rtol": 1e-4}


@probe
def a09_untied_head(user, d_model, vocab_size, h, W, seed):
    """An untied OutputHead: its own matrix as built, then with ``W`` copied in, its logits and one SGD step."""
    import torch
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        head = user["OutputHead"](d_model, vocab_size)
    if not isinstance(head, torch.nn.Module):
        return {"module": False, "kind": type(head).__name__}
    w = getattr(head, "weight", None)
    reply = {"module": True, "kind": type(w).__name__, "tensor": isinstance(w, torch.Tensor),
             "parameter": isinstance(w, torch.nn.Parameter),
             "registered": any(p is w for p in head.parameters())}
    if not reply["tensor"]:
        return reply
    reply["init"] = w.detach().clone()
    if tuple(w.shape) != tuple(W.shape):
        return reply
    with torch.no_grad():
        w.copy_(W)
    out = head(h.clone())   # each call its own copy: forward may change h in place
    reply["logits"] = out.detach() if isinstance(out, torch.Tensor) else out
    params = list(head.parameters())
    loss = head(h.clone()).logsumexp(dim=-1).mean()
    if params and loss.requires_grad:
        opt = torch.optim.SGD(params, lr=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    reply["after"] = w.detach().clone()
    return reply


@probe
def a09_tied_head(user, d_model, vocab_size, h, E):
    """A head tied to an ``nn.Embedding`` holding ``E``: identity, own parameters, logits, one SGD step."""
    import torch
    emb = torch.nn.Embedding(vocab_size, d_model)
    with torch.no_grad():
        emb.weight.copy_(E)
    head = user["OutputHead"](d_model, vocab_size, emb)
    if not isinstance(head, torch.nn.Module):
        return {"module": False, "kind": type(head).__name__}
    reply = {"module": True, "same": getattr(head, "weight", None) is emb.weight,
             "own": [name for name, p in head.named_parameters() if p is not emb.weight],
             "count": sum(p.numel() for p in torch.nn.ModuleList([emb, head]).parameters())}
    out = head(h.clone())   # each call its own copy: forward may change h in place
    reply["logits"] = out.detach() if isinstance(out, torch.Tensor) else out
    params = list(head.parameters())
    loss = head(h.clone()).logsumexp(dim=-1).mean()
    if params and loss.requires_grad:
        opt = torch.optim.SGD(params, lr=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    reply["grad"] = None if emb.weight.grad is None else emb.weight.grad.clone()
    reply["after"] = emb.weight.detach().clone()
    return reply


def _one_step(h, W):
    """The gradient of mean logsumexp(h W^T) with respect to W, and W after one SGD step (lr 0.1)."""
    w = W.clone().requires_grad_(True)
    (h @ w.T).logsumexp(dim=-1).mean().backward()
    return w.grad.clone(), (W - 0.1 * w.grad).detach()


def _untied_judge(d, v, h, W):
    logits = h @ W.T
    _, after = _one_step(h, W)
    dims = ["vocab_size", "d_model"]

    def judge(reply):
        if not reply["module"]:
            return f"OutputHead(d_model, vocab_size) should be an nn.Module, got a {reply['kind']}"
        if not reply["tensor"]:
            if reply["kind"] == "NoneType":
                return "expected the output matrix in self.weight, found no self.weight"
            return f"expected the output matrix in self.weight, got a {reply['kind']}"
        if not reply["parameter"] or not reply["registered"]:
            return "self.weight is not a registered parameter: wrap the tensor in torch.nn.Parameter(...)"
        init = reply["init"]
        if tuple(init.shape) != (v, d):
            return f"self.weight: expected shape (vocab_size={v}, d_model={d}), got {tuple(init.shape)}"
        rms = float(init.double().pow(2).mean().sqrt())
        if not math.isfinite(rms) or not 0.5 / math.sqrt(d) <= rms <= 2 / math.sqrt(d):
            return "self.weight does not start with random entries of size about 1/sqrt(d_model)"
        problem = tensor(reply["logits"], logits, dims=["batch", "seq", "vocab_size"], **TOL)
        if problem:
            return f"the logits h W^T, with a matrix copied into self.weight: {problem}"
        problem = tensor(reply["after"], after, dims=dims, **TOL)
        if problem:
            return f"one SGD step on head.parameters() did not train self.weight as it should: {problem}"
        return None
    return judge


def _tied_judge(d, v, h, E):
    logits = h @ E.T
    grad, after = _one_step(h, E)
    dims = ["vocab_size", "d_model"]

    def judge(reply):
        if not reply["module"]:
            return f"OutputHead(d_model, vocab_size, embedding) should be an nn.Module, got a {reply['kind']}"
        if not reply["same"]:
            return ("self.weight is not the embedding's own Parameter: a tied head must use embedding.weight "
                    "itself, not a copy, a transpose or a new Parameter")
        if reply["own"]:
            return f"the tied head has parameters of its own ({', '.join(reply['own'][:4])}); it needs none"
        if reply["count"] != v * d:
            return "the embedding and the tied head together should hold one (vocab_size, d_model) matrix"
        problem = tensor(reply["logits"], logits, dims=["batch", "seq", "vocab_size"], **TOL)
        if problem:
            return f"the logits h E^T: {problem}"
        if reply["grad"] is None:
            return "a backward pass through the tied head gives the embedding's matrix no gradient"
        problem = tensor(reply["grad"], grad, dims=dims, **TOL)
        if problem:
            return f"the gradient of the embedding's matrix through the head: {problem}"
        problem = tensor(reply["after"], after, dims=dims, **TOL)
        if problem:
            return f"one SGD step through the tied head did not move the embedding as it should: {problem}"
        return None
    return judge


def ex4_tied_output_head():
    g = torch.Generator().manual_seed(4242)
    for d, v in [(8, 8), (32, 100), (64, 1000)]:
        h = torch.randn(3, 5, d, generator=g)
        W = torch.randn(v, d, generator=g) / math.sqrt(d)
        E = torch.randn(v, d, generator=g)
        yield Case(f"OutputHead({d}, {v}) untied: a registered Parameter self.weight (vocab_size, d_model) of size "
                   f"about 1/sqrt(d_model), logits h W^T for a matrix W copied into it, one SGD step trains it",
                   Request("a09_untied_head", {"d_model": d, "vocab_size": v, "h": h, "W": W, "seed": d}),
                   _untied_judge(d, v, h, W))
        yield Case(f"OutputHead({d}, {v}, embedding) tied: self.weight is embedding.weight, no parameters of its "
                   f"own, logits h E^T, and one SGD step through the head moves the embedding",
                   Request("a09_tied_head", {"d_model": d, "vocab_size": v, "h": h, "E": E}),
                   _tied_judge(d, v, h, E))
