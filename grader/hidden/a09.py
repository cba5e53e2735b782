"""Hidden tests of assignment 09, the output head (references: PyTorch's cross-entropy, arithmetic by hand)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.hidden import Case, Request, probe, reads
from grader.hidden.judge import as_int, describe, entry, first, number, numbers, tensor

ASSIGNMENT = "09_output_head"
GRADED = ["ex1_output_by_hand", "ex2_masked_cross_entropy", "ex3_greedy_decoding", "ex4_tied_output_head"]
TOL = {"atol": 1e-5, "rtol": 1e-4}


# ----------------------------------------------------------------- exercise 1: by hand

WORDS = ["einen", "Brot", "gegessen", "<eos>"]


def _probs(got):
    if isinstance(got, np.ndarray) and got.ndim == 1:
        got = got.tolist()
    return got


def _word(want):
    def check(got):
        if not isinstance(got, str):
            return f"word: expected the word itself, a string, got {describe(got)}"
        if got not in WORDS:
            return "word: expected one of the four words of the vocabulary"
        return None if got == want else "word: this is not the word that greedy decoding picks"
    return check


def ex1_output_by_hand():
    z = [1.0, 2.0, 0.0, -0.5]
    s = sum(math.exp(x) for x in z)
    p = [math.exp(x) / s for x in z]
    word = WORDS[p.index(max(p))]
    loss = -math.log(p[WORDS.index("einen")])        # the right next word is "einen"
    yield Case("hand['probs'], the four probabilities in vocabulary order (each within 1e-3)", reads("hand"),
               entry("probs", lambda got: numbers(_probs(got), p, 1e-3, "probs"), "hand"))
    yield Case("hand['word'], the word greedy decoding picks (exact)", reads("hand"),
               entry("word", _word(word), "hand"))
    yield Case("hand['loss'], the cross-entropy loss of the right word (within 1e-3)", reads("hand"),
               entry("loss", lambda got: number(got, loss, 1e-3, "loss"), "hand"))


# ----------------------------------------------------------------- exercise 2: masked cross-entropy


@probe
def a09_loss(user, logits, labels, pad_id):
    """The loss of a leaf copy of ``logits``, then its gradient through ``loss.backward()``."""
    import torch
    x = logits.clone().requires_grad_(True)
    out = user["masked_cross_entropy"](x, labels, pad_id)
    reply = {"out": out, "shape": None, "grad": None, "backward": None, "labels": labels, "logits": x.detach()}
    if isinstance(out, torch.Tensor):
        reply["out"], reply["shape"] = out.detach().reshape(-1), list(out.shape)   # plain data has no 0-d arrays
        try:
            out.backward()
            reply["grad"] = None if x.grad is None else x.grad.clone()
        except Exception as exc:  # noqa: BLE001 - reported to the grader
            reply["backward"] = type(exc).__name__
    return reply


def _scalar(got: torch.Tensor, want: float, name: str) -> str | None:
    """One number within atol 1e-5, rtol 1e-4, judged without telling by how much it is off (that would tell
    the expected value)."""
    value = float(got.reshape(-1)[0])
    if not math.isfinite(value):
        return f"{name} is NaN or infinite"
    if abs(value - want) > TOL["atol"] + TOL["rtol"] * abs(want):
        return f"{name} is wrong (tolerance: atol=1e-5, rtol=1e-4)"
    return None


def _loss_judge(ref, grad, logits, labels):
    def judge(reply):
        out = reply["out"]
        if not isinstance(out, torch.Tensor):
            return f"expected a 0-dimensional tensor, got {describe(out)}"
        if reply["shape"] != []:
            return f"expected a 0-dimensional tensor (shape ()), got shape {tuple(reply['shape'])}"
        problem = _scalar(out, float(ref), "the loss")
        if problem:
            return problem
        if reply["grad"] is None:
            how = f"raised {reply['backward']}" if reply["backward"] else "gives the logits no gradient"
            return (f"the value is right, but loss.backward() {how}: return a tensor connected to logits "
                    "(no .item(), float() or torch.tensor(...) around the result)")
        problem = tensor(reply["grad"], grad, dims=["batch", "T", "vocab"], **TOL)
        if problem:
            return f"the gradient of the loss with respect to the logits is wrong: {problem}"
        return first(None if torch.equal(reply["labels"], labels) else
                     "the input labels was changed in place; return a new value instead",
                     None if torch.equal(reply["logits"], logits) else
                     "the input logits was changed in place; return a new value instead")
    return judge


def ex2_masked_cross_entropy():
    g = torch.Generator().manual_seed(909)
    for b, t, v, pad in [(1, 1, 2, 0), (3, 6, 11, 0), (4, 9, 50, 7)]:
        logits = torch.randn(b, t, v, generator=g) * 3
        labels = torch.randint(0, v, (b, t), generator=g)
        labels[0, 0] = (pad + 1) % v                              # at least one real label
        if t > 2:
            labels[-1, -2:] = pad                                  # a padded sentence
        x = logits.clone().requires_grad_(True)
        ref = F.cross_entropy(x.flatten(0, 1), labels.flatten(), ignore_index=pad)
        ref.backward()
        yield Case(f"masked_cross_entropy with logits (batch {b}, T {t}, vocab {v}) and pad_id {pad}: the loss, "
                   f"a 0-dimensional tensor, and its gradient through loss.backward()",
                   Request("a09_loss", {"logits": logits, "labels": labels, "pad_id": pad}),
                   _loss_judge(ref.detach(), x.grad.clone(), logits, labels))


# ----------------------------------------------------------------- exercise 3: greedy decoding


@probe
def a09_greedy(user, A, B, prefix, eos_id, max_new_tokens, limit):
    """greedy_decode with next-token logits ``A[last] + 0.5 B[second to last]``, every call recorded."""
    seen = []

    def next_logits(ids):
        seen.append([int(i) for i in ids])
        if len(seen) > limit:
            raise RuntimeError(f"next_logits was called more than {limit} times: does your loop stop at eos_id "
                               "and after max_new_tokens new tokens?")
        ids = seen[-1]
        return A[ids[-1]] + 0.5 * B[ids[-2] if len(ids) > 1 else 0]

    given = list(prefix)
    out = user["greedy_decode"](next_logits, given, eos_id, max_new_tokens)
    return {"out": out, "prefix": given, "seen": seen}


def _ids(got):
    """A list of token ids (whole numbers of any kind, or a 1-D tensor or array of them), or None."""
    if isinstance(got, (torch.Tensor, np.ndarray)) and got.ndim == 1:
        got = list(got)
    if not isinstance(got, (list, tuple)):
        return None
    out = []
    for i in got:
        if as_int(i) is None:
            return None
        out.append(as_int(i))
    return out


def _greedy_judge(expected, prefix):
    new = len(expected) - len(prefix)

    def judge(reply):
        got = _ids(reply["out"])
        if got is None:
            return f"expected a list of token ids (ints), got {describe(reply['out'])}"
        if reply["prefix"] != prefix:
            return "your function changed the prefix list it was given; work on a copy, e.g. ids = list(prefix)"
        if len(got) != len(expected):
            return (f"got {len(got)} ids: too {'many' if len(got) > len(expected) else 'few'} for the prefix "
                    "followed by the greedy tokens (up to and including eos_id, at most max_new_tokens of them)")
        wrong = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        if wrong:
            return f"{len(wrong)} of {len(expected)} ids are wrong (the first at position {wrong[0]})"
        seen = reply["seen"]
        if len(seen) != new:
            return (f"the ids are right, but next_logits was called {len(seen)} times for {new} new tokens: call it "
                    "once per new token")
        for i, ids in enumerate(seen):
            if ids != expected[: len(prefix) + i]:
                return f"call {i + 1} of next_logits was not given the whole sequence so far (prefix + new tokens)"
        return None
    return judge


def ex3_greedy_decoding():
    g = torch.Generator().manual_seed(3131)
    for v, prefix, eos, max_new in [(5, [0], 1, 3), (20, [0, 7], 1, 12), (9, [2, 3, 4], 8, 30), (6, [5], 0, 0)]:
        A, B = torch.randn(v, v, generator=g), torch.randn(v, v, generator=g)
        expected = list(prefix)                                   # the loop, written out independently
        while len(expected) - len(prefix) < max_new:
            row = A[expected[-1]] + 0.5 * B[expected[-2] if len(expected) > 1 else 0]
            best = max(range(v), key=lambda j: float(row[j]))
            expected.append(best)
            if best == eos:
                break
        yield Case(f"greedy_decode with a vocabulary of {v}, a prefix of {len(prefix)} token(s), "
                   f"max_new_tokens={max_new}, and next_logits depending on the last two tokens",
                   Request("a09_greedy", {"A": A, "B": B, "prefix": list(prefix), "eos_id": eos,
                                          "max_new_tokens": max_new, "limit": max_new + 50}),
                   _greedy_judge(expected, list(prefix)))


# ----------------------------------------------------------------- exercise 4: the tied output head


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
