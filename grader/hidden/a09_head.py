"""Hidden tests of assignment 09, exercise 4: the output head, untied and tied to the embedding
(references: the logits and one SGD step computed here with PyTorch's autograd).

Scored: the logits, the embedding's gradient and the matrices after one SGD step, all compared with the grader's
own; the size of the logits of the untied head as built (its random initial entries, about 1/sqrt(d_model), give
logits of a size the grader computes from h); the tensors of the tied head's state dict after the step (each the
embedding's matrix: no matrix of its own). Reported by the kernel (no points) beside them: whether self.weight is a
registered Parameter, its initial scale, and whether the tied head holds the embedding's own Parameter and nothing
else.
"""

from __future__ import annotations

import math

import torch

from grader.hidden import Case, Request, generator, rng
from grader.hidden.judge import describe, fields, named_shape, tensor

TOL = {"atol": 1e-5, "rtol": 1e-4}
UNTIED = ("parameter", "registered", "init", "fresh", "logits", "after")
TIED = ("logits", "grad", "after", "state", "same", "own", "count")


def _one_step(h, W):
    """The gradient of mean logsumexp(h W^T) with respect to W, and W after one SGD step (lr 0.1)."""
    w = W.clone().requires_grad_(True)
    (h @ w.T).logsumexp(dim=-1).mean().backward()
    return w.grad.clone(), (W - 0.1 * w.grad).detach()


def _untied_judge(h, W):
    logits = h @ W.T
    _, after = _one_step(h, W)

    def judge(reply):
        *_, got_logits, got_after = fields(reply, *UNTIED)
        if got_logits is None:
            return ("expected the output matrix in self.weight, a (vocab_size, d_model) tensor of an nn.Module, "
                    "to copy a matrix into")
        problem = tensor(got_logits, logits, dims=["batch", "seq", "vocab_size"], **TOL)
        if problem:
            return f"the logits h W^T, with a matrix copied into self.weight: {problem}"
        problem = tensor(got_after, after, dims=["vocab_size", "d_model"], **TOL)
        if problem:
            return f"one SGD step on head.parameters() did not train self.weight as it should: {problem}"
        return None
    return judge


def _fresh_judge(h, v):
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


def _untied_parts_judge(d, v):
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


def _tied_judge(h, E):
    logits = h @ E.T
    grad, after = _one_step(h, E)
    dims = ["vocab_size", "d_model"]

    def judge(reply):
        got_logits, got_grad, got_after, state, *_ = fields(reply, *TIED)
        if got_logits is None:
            return "OutputHead(d_model, vocab_size, embedding) should be an nn.Module"
        problem = tensor(got_logits, logits, dims=["batch", "seq", "vocab_size"], **TOL)
        if problem:
            return f"the logits h E^T: {problem}"
        if got_grad is None:
            return "a backward pass through the tied head gives the embedding's matrix no gradient"
        problem = tensor(got_grad, grad, dims=dims, **TOL)
        if problem:
            return f"the gradient of the embedding's matrix through the head: {problem}"
        problem = tensor(got_after, after, dims=dims, **TOL)
        if problem:
            return f"one SGD step through the tied head did not move the embedding as it should: {problem}"
        if not isinstance(state, list) or not state:
            return "the tied head's state dict should hold the embedding's matrix, and it holds no tensor"
        if any(tensor(t, after, dims=dims, **TOL) for t in state):
            return ("after the step, the tied head's state dict holds a tensor that is not the embedding's matrix: "
                    "a tied head keeps no parameters of its own")
        return None
    return judge


def _tied_parts_judge(d, v):
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


def ex4_tied_output_head(seed: int):
    g, r = generator(seed, "ex4_tied_output_head"), rng(seed, "ex4_tied_output_head")
    for d, v in [(8, 8), (32, 100), (64, 1000)]:
        h = torch.randn(3, 5, d, generator=g)
        W = torch.randn(v, d, generator=g) / math.sqrt(d)
        E = torch.randn(v, d, generator=g)
        untied = Request("a09.untied_head", {"d_model": d, "vocab_size": v, "h": h, "W": W,
                                             "seed": r.randrange(2**31)})
        tied = Request("a09.tied_head", {"d_model": d, "vocab_size": v, "h": h, "E": E})
        yield Case(f"OutputHead({d}, {v}) untied: logits h W^T for a matrix W copied into self.weight "
                   f"(vocab_size, d_model), and one SGD step on head.parameters() trains it", untied,
                   _untied_judge(h, W))
        if d >= 32:
            yield Case(f"OutputHead({d}, {v}) untied, as built: its logits on random h of shape (3, 5, {d}) of the "
                       f"size that random entries of about 1/sqrt(d_model) give (root mean square between 0.4 and 2.5 "
                       f"times that)", untied, _fresh_judge(h, v))
        yield Case(f"OutputHead({d}, {v}) untied: self.weight a registered Parameter of random entries of size about "
                   f"1/sqrt(d_model)", untied, _untied_parts_judge(d, v), scored=False)
        yield Case(f"OutputHead({d}, {v}, embedding) tied: logits h E^T, and one SGD step on head.parameters() "
                   f"moves the embedding by its gradient; after it, every tensor of the head's state dict is the "
                   f"embedding's matrix (no matrix of its own)", tied, _tied_judge(h, E))
        yield Case(f"OutputHead({d}, {v}, embedding) tied: self.weight is embedding.weight, no parameters of its own",
                   tied, _tied_parts_judge(d, v), scored=False)
