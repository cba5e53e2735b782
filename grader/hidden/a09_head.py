"""The judges of exercise 4 of assignment 09, the output head, untied and tied (references: the logits and one SGD
step computed here with autograd); its hidden test, ``ex4_tied_output_head``, is in ``a09.py``."""

from __future__ import annotations

import math

import torch

from grader.hidden.judge import describe, fields, named_shape, tensor

UNTIED = ("parameter", "registered", "init", "fresh", "logits", "after")
TIED = ("logits", "grad", "after", "state", "same", "own", "count")


def one_step(h, W):
    """The gradient of mean logsumexp(h W^T) with respect to W, and W after one SGD step (lr 0.1)."""
    w = W.clone().requires_grad_(True)
    (h @ w.T).logsumexp(dim=-1).mean().backward()
    return w.grad.clone(), (W - 0.1 * w.grad).detach()


def untied_judge(h, W):
    logits = h @ W.T
    _, after = one_step(h, W)

    def judge(reply):
        *_, got_logits, got_after = fields(reply, *UNTIED)
        if got_logits is None:
            return ("expected the output matrix in self.weight, a (vocab_size, d_model) tensor of an nn.Module, "
                    "to copy a matrix into")
        problem = tensor(got_logits, logits, dims=["batch", "seq", "vocab_size"])
        if problem:
            return f"the logits h W^T, with a matrix copied into self.weight: {problem}"
        problem = tensor(got_after, after, dims=["vocab_size", "d_model"])
        if problem:
            return f"one SGD step on head.parameters() did not train self.weight as it should: {problem}"
        return None
    return judge


def fresh_judge(h, v):
    """Scored: the head as built gives logits of the size that random entries of about 1/sqrt(d_model) give on ``h``:
    their root mean square between 0.4 and 2.5 times sqrt(mean |h_row|^2 / d_model), the grader's own number (entries
    drawn uniformly, as nn.Linear draws them, give about 0.58 times; entries of size 1, sqrt(d_model) times). Asked
    for d_model >= 32 only, where 15 rows of h measure it well."""
    d = h.shape[-1]
    want = math.sqrt(float(h.double().pow(2).sum(-1).mean()) / d)
    dims = ["batch", "seq", "vocab_size"]

    def judge(reply):
        *_, fresh, _logits, _after = fields(reply, *UNTIED)
        if fresh is None:
            return ("expected the output matrix in self.weight, a (vocab_size, d_model) tensor of an nn.Module, "
                    "to copy a matrix into")
        if not isinstance(fresh, torch.Tensor) or not fresh.is_floating_point():
            return f"the logits of the head as built: expected a float tensor, got {describe(fresh)}"
        if tuple(fresh.shape) != (*h.shape[:-1], v):
            return f"the logits of the head as built: expected shape {named_shape((*h.shape[:-1], v), dims)}"
        rms = float(fresh.double().pow(2).mean().sqrt())
        if not math.isfinite(rms):
            return "the logits of the head as built are NaN or infinite"
        if not 0.4 * want <= rms <= 2.5 * want:
            return ("the head as built gives logits of the wrong size: self.weight should start with random entries "
                    "of size about 1/sqrt(d_model)")
        return None
    return judge


def untied_parts_judge(d, v):
    """What only the kernel sees of the untied head: a registered Parameter, of size about 1/sqrt(d_model)."""
    def judge(reply):
        parameter, registered, init, *_ = fields(reply, *UNTIED)
        if init is None:
            return f"expected the output matrix in self.weight, a tensor of shape (vocab_size={v}, d_model={d})"
        if parameter is not True or registered is not True:
            return "self.weight is not a registered parameter: wrap the tensor in torch.nn.Parameter(...)"
        rms = float(init.double().pow(2).mean().sqrt()) if isinstance(init, torch.Tensor) else math.nan
        if not math.isfinite(rms) or not 0.5 / math.sqrt(d) <= rms <= 2 / math.sqrt(d):
            return "self.weight does not start with random entries of size about 1/sqrt(d_model)"
        return None
    return judge


def tied_judge(h, E):
    logits = h @ E.T
    grad, after = one_step(h, E)
    dims = ["vocab_size", "d_model"]

    def judge(reply):
        got_logits, got_grad, got_after, state, *_ = fields(reply, *TIED)
        if got_logits is None:
            return "OutputHead(d_model, vocab_size, embedding) should be an nn.Module"
        problem = tensor(got_logits, logits, dims=["batch", "seq", "vocab_size"])
        if problem:
            return f"the logits h E^T: {problem}"
        if got_grad is None:
            return "a backward pass through the tied head gives the embedding's matrix no gradient"
        problem = tensor(got_grad, grad, dims=dims)
        if problem:
            return f"the gradient of the embedding's matrix through the head: {problem}"
        problem = tensor(got_after, after, dims=dims)
        if problem:
            return f"one SGD step through the tied head did not move the embedding as it should: {problem}"
        if not isinstance(state, list) or not state:
            return "the tied head's state dict should hold the embedding's matrix, and it holds no tensor"
        if any(tensor(t, after, dims=dims) for t in state):
            return ("after the step, the tied head's state dict holds a tensor that is not the embedding's matrix: "
                    "a tied head keeps no parameters of its own")
        return None
    return judge


def tied_parts_judge(d, v):
    """What only the kernel sees of the tied head: the embedding's own Parameter, and no parameters besides."""
    def judge(reply):
        *_, same, own, count = fields(reply, *TIED)
        if same is not True:
            return ("self.weight is not the embedding's own Parameter: a tied head must use embedding.weight "
                    "itself, not a copy, a transpose or a new Parameter")
        if own != 0:
            return "the tied head has parameters of its own; it needs none"
        if count != v * d:
            return "the embedding and the tied head together should hold one (vocab_size, d_model) matrix"
        return None
    return judge
