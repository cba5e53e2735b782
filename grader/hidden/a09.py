"""Hidden tests of assignment 09, the output head (references: PyTorch's cross-entropy, arithmetic by hand)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.forbidden import Forbid
from grader.hidden import Case, Request, probe, reads
from grader.hidden.a09_head import ex4_tied_output_head  # noqa: F401 - exercise 4 lives beside this module
from grader.hidden.judge import as_int, describe, entry, first, number, numbers, tensor

ASSIGNMENT = "09_output_head"
GRADED = ["ex1_output_by_hand", "ex2_masked_cross_entropy", "ex3_greedy_decoding", "ex4_tied_output_head"]
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_output_by_hand": Forbid("hand", (
        "torch.softmax",
        "torch.nn.functional.cross_entropy",
        "torch.nn.CrossEntropyLoss",
    )),
    "ex2_masked_cross_entropy": Forbid("masked_cross_entropy", (
        "torch.nn.functional.cross_entropy",
        "torch.nn.functional.nll_loss",
        "transformer",
    )),
    "ex3_greedy_decoding": Forbid("greedy_decode", ("transformer.generate",)),
    "ex4_tied_output_head": Forbid("OutputHead", ("transformer.OutputHead",)),
}
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
