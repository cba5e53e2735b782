"""Hidden tests of assignment 09, the output head (references: PyTorch's cross-entropy, arithmetic by hand).

Exercise 1 is worked by hand on the exercise's own four logits: its questions are fixed, not drawn from the seed.
Every other input comes from the run's seed. Scored in exercise 3 besides the ids: a second call on the very same
prefix list (a function that changed the caller's prefix answers it wrongly) and a run with a next_logits whose
logits depend on how often it was called (a loop that calls it twice per token gets other ids). The inputs after the
calls of exercises 2 and 3, which their texts say are not changed, are scored too. What else only the kernel can see
(the sequences next_logits was called with, a head's parameters and initial scale) is reported beside them.

Exercise 4 (references: the logits and one SGD step computed with autograd by its judges, in ``a09_head.py``)
scores the logits, the embedding's gradient and the matrices after one SGD step; the size of the logits of the untied
head as built (its random initial entries, about 1/sqrt(d_model), give logits of a size the grader computes from h);
the tensors of the tied head's state dict after the step (each the embedding's matrix). Reported beside them:
whether self.weight is a registered Parameter, its initial scale, and whether the tied head holds the embedding's own
Parameter and nothing else.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, generator, reads, rng
from grader.hidden.a09_head import fresh_judge, tied_judge, tied_parts_judge, untied_judge, untied_parts_judge
from grader.hidden.judge import (
    ATOL,
    RTOL,
    describe,
    entry,
    fields,
    kept,
    number,
    numbers,
    tensor,
    token_ids,
)

ASSIGNMENT = "09_output_head"
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
FIXED = {"ex1_output_by_hand"}  # worked by hand on the exercise's four logits
GREEDY = ("out", "args", "seen", "again")


# ----------------------------------------------------------------- exercise 1: by hand

WORDS = ["einen", "Brot", "gegessen", "<eos>"]


def _probs(got):
    if isinstance(got, np.ndarray) and got.ndim == 1:
        got = got.tolist()
    return got


def _four(got, want):
    """The four probabilities, each within 1e-3 (how many a wrong list holds is not told)."""
    got = _probs(got)
    if isinstance(got, (list, tuple, torch.Tensor)) and getattr(got, "ndim", 1) and len(got) != len(want):
        return f"probs: expected {len(want)} numbers"
    return numbers(got, want, 1e-3, "probs")


def _word(want):
    def check(got):
        if not isinstance(got, str):
            return f"word: expected the word itself, a string, got {describe(got)}"
        if got not in WORDS:
            return "word: expected one of the four words of the vocabulary"
        return None if got == want else "word: this is not the word that greedy decoding picks"
    return check


def ex1_output_by_hand(seed: int):
    z = [1.0, 2.0, 0.0, -0.5]
    s = sum(math.exp(x) for x in z)
    p = [math.exp(x) / s for x in z]
    word = WORDS[p.index(max(p))]
    loss = -math.log(p[WORDS.index("einen")])        # the right next word is "einen"
    yield Case("hand['probs'], the four probabilities in vocabulary order (each within 1e-3)", reads("hand"),
               entry("probs", lambda got: _four(got, p), "hand"))
    yield Case("hand['word'], the word greedy decoding picks (exact)", reads("hand"),
               entry("word", _word(word), "hand"))
    yield Case("hand['loss'], the cross-entropy loss of the right word (within 1e-3)", reads("hand"),
               entry("loss", lambda got: number(got, loss, 1e-3, "loss"), "hand"))


# ----------------------------------------------------------------- exercise 2: masked cross-entropy


def _scalar(got: torch.Tensor, want: float, name: str) -> str | None:
    """One number within atol 1e-5, rtol 1e-4, judged without telling by how much it is off (that would tell
    the expected value)."""
    value = float(got.reshape(-1)[0])
    if not math.isfinite(value):
        return f"{name} is NaN or infinite"
    if abs(value - want) > ATOL + RTOL * abs(want):
        return f"{name} is wrong (tolerance: atol=1e-5, rtol=1e-4)"
    return None


def _loss_judge(ref, grad):
    def judge(reply):
        out, got_grad, _args = fields(reply, "out", "grad", "args")
        if not isinstance(out, torch.Tensor):  # the probe sends a tensor's value with a leading dimension of 1
            return f"expected a 0-dimensional tensor, got {describe(out)}"
        if tuple(out.shape) != (1,):
            return "expected a 0-dimensional tensor (shape ()), got another shape"
        problem = _scalar(out, float(ref), "the loss")
        if problem:
            return problem
        if got_grad is None:
            return ("the value is right, but loss.backward() gives the logits no gradient: return a tensor connected "
                    "to logits (no .item(), float() or torch.tensor(...) around the result)")
        problem = tensor(got_grad, grad, dims=["batch", "T", "vocab"])
        if problem:
            return f"the gradient of the loss with respect to the logits is wrong: {problem}"
        return None
    return judge


def ex2_masked_cross_entropy(seed: int):
    g = generator(seed, "ex2_masked_cross_entropy")
    for b, t, v, pad in [(1, 1, 2, 0), (3, 6, 11, 0), (4, 9, 50, 7)]:
        logits = torch.randn(b, t, v, generator=g) * 3
        labels = torch.randint(0, v, (b, t), generator=g)
        labels[0, 0] = (pad + 1) % v                              # at least one real label
        if t > 2:
            labels[-1, -2:] = pad                                  # a padded sentence
        x = logits.clone().requires_grad_(True)
        ref = F.cross_entropy(x.flatten(0, 1), labels.flatten(), ignore_index=pad)
        ref.backward()
        request = Request("a09.loss", {"logits": logits, "labels": labels, "pad_id": pad})
        what = f"masked_cross_entropy with logits (batch {b}, T {t}, vocab {v}) and pad_id {pad}"
        yield Case(f"{what}: the loss, a 0-dimensional tensor, and its gradient through loss.backward()", request,
                   _loss_judge(ref.detach(), x.grad.clone()))
        yield Case(f"{what}: logits and labels unchanged", request,
                   kept([logits, labels], ["logits", "labels"], ("out", "grad", "args")))


# ----------------------------------------------------------------- exercise 3: greedy decoding


def _ids(out, expected):
    problem = token_ids(out, expected)
    return ("the wrong number of ids for the prefix followed by the greedy tokens (up to and including eos_id, at "
            "most max_new_tokens of them)") if problem == "the wrong number of ids" else problem


def _greedy_judge(expected):
    def judge(reply):
        out, _args, _seen, _again = fields(reply, *GREEDY)
        return _ids(out, expected)
    return judge


def _again_judge(expected):
    """The second call on the very same prefix list must give the same ids (a function that changed the caller's
    prefix starts from another one)."""
    def judge(reply):
        _out, _args, _seen, again = fields(reply, *GREEDY)
        problem = _ids(again, expected)
        return (f"a second call with the same prefix list: {problem} (does the function change the prefix it was "
                "given? copy it first: ids = list(prefix))") if problem else None
    return judge


def _calls_judge(expected, prefix):
    """The sequences next_logits was called with (only the kernel sees them: reported, not scored)."""
    new = len(expected) - len(prefix)

    def judge(reply):
        _out, _args, seen, _again = fields(reply, *GREEDY)
        if not isinstance(seen, list) or len(seen) != new:
            return "next_logits was not called once per new token: call it once per new token"
        for i, ids in enumerate(seen):
            if ids != expected[: len(prefix) + i]:  # not which call: the reply could choose it
                return "a call of next_logits was not given the whole sequence so far (prefix + new tokens)"
        return None
    return judge


def _greedy(A, B, prefix, eos, max_new, C=None, calls_per_token=1):
    """The loop, written out independently: the prefix followed by the greedy tokens. With ``C``, the logits of the
    n-th call of next_logits (from 0) have ``C[n]`` added; ``calls_per_token`` > 1 is a loop that calls it that
    many times per token and takes the last call's logits (to choose inputs that tell the two apart)."""
    ids, calls = list(prefix), 0
    while len(ids) - len(prefix) < max_new:
        calls += calls_per_token
        row = A[ids[-1]] + 0.5 * B[ids[-2] if len(ids) > 1 else 0]
        if C is not None:
            row = row + C[calls - 1]
        best = max(range(len(row)), key=lambda j: float(row[j]))
        ids.append(best)
        if best == eos:
            break
    return ids


def _counted(g, v, n_prefix, max_new, limit):
    """Inputs for a next_logits whose logits depend on how often it was called: A, B, C (one row per call), a
    prefix, an eos_id the run never reaches, where one call per token and two per token give other ids (drawn
    again, a bounded number of times, until they do)."""
    for _ in range(20):
        A, B = torch.randn(v, v, generator=g), torch.randn(v, v, generator=g)
        C = 2 * torch.randn(limit, v, generator=g)
        prefix = torch.randint(0, v, (n_prefix,), generator=g).tolist()
        new = _greedy(A, B, prefix, -1, max_new, C)[n_prefix:]
        pool = [t for t in range(v) if t not in new]
        eos = pool[int(torch.randint(0, len(pool), (), generator=g))]
        if _greedy(A, B, prefix, eos, max_new, C, calls_per_token=2) != _greedy(A, B, prefix, eos, max_new, C):
            break
    return A, B, C, prefix, eos


def ex3_greedy_decoding(seed: int):
    """Four runs: eos anywhere; eos never reached (max_new_tokens ends it); eos reached after a few tokens (the
    first time a token is drawn); no new token at all."""
    g = generator(seed, "ex3_greedy_decoding")
    for v, n_prefix, max_new, stop in [(5, 1, 3, "any"), (20, 2, 12, "never"), (9, 3, 30, "reached"),
                                       (6, 1, 0, "any")]:
        A, B = torch.randn(v, v, generator=g), torch.randn(v, v, generator=g)
        prefix = torch.randint(0, v, (n_prefix,), generator=g).tolist()
        new = _greedy(A, B, prefix, -1, max_new)[n_prefix:]
        if stop == "never":                                      # a token the first max_new steps never pick
            pool = [t for t in range(v) if t not in new]
        elif stop == "reached":                                  # a token at its first appearance, not the first
            pool = [t for i, t in enumerate(new) if t not in new[:i] and i > 0] or new[:1]
        else:
            pool = list(range(v))
        eos = pool[int(torch.randint(0, len(pool), (), generator=g))]
        expected = _greedy(A, B, prefix, eos, max_new)
        what = (f"greedy_decode with a vocabulary of {v}, a prefix of {len(prefix)} token(s), "
                f"max_new_tokens={max_new}, and next_logits depending on the last two tokens")
        request = Request("a09.greedy", {"A": A, "B": B, "prefix": list(prefix), "eos_id": eos,
                                         "max_new_tokens": max_new, "limit": max_new + 50})
        yield Case(f"{what}: the prefix followed by the greedy tokens", request, _greedy_judge(expected))
        if max_new:
            yield Case(f"{what}: called a second time with the very same prefix list, the same ids", request,
                       _again_judge(expected))
        yield Case(f"{what}: the prefix list it was given unchanged", request,
                   kept([list(prefix)], ["prefix"], GREEDY))
        yield Case(f"{what}: next_logits called once per new token, with the whole sequence so far", request,
                   _calls_judge(expected, list(prefix)), scored=False)
    v, n_prefix, max_new = 12, 2, 6
    A, B, C, prefix, eos = _counted(g, v, n_prefix, max_new, max_new + 50)
    expected = _greedy(A, B, prefix, eos, max_new, C)
    what = (f"greedy_decode with a vocabulary of {v}, a prefix of {n_prefix} tokens, max_new_tokens={max_new}, and a "
            "next_logits whose logits also depend on how many times it has been called")
    request = Request("a09.greedy", {"A": A, "B": B, "C": C, "prefix": list(prefix), "eos_id": eos,
                                     "max_new_tokens": max_new, "limit": max_new + 50})
    yield Case(f"{what}: the prefix followed by the greedy tokens, next_logits called once per new token (a loop "
               "that calls it more often gets other logits)", request, _greedy_judge(expected))
    yield Case(f"{what}: next_logits called once per new token, with the whole sequence so far", request,
               _calls_judge(expected, list(prefix)), scored=False)


# ----------------------------------------------------------------- exercise 4: the output head

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
                   untied_judge(h, W))
        if d >= 32:
            yield Case(f"OutputHead({d}, {v}) untied, as built: its logits on random h of shape (3, 5, {d}) of the "
                       f"size that random entries of about 1/sqrt(d_model) give (root mean square between 0.4 and 2.5 "
                       f"times that)", untied, fresh_judge(h, v))
        yield Case(f"OutputHead({d}, {v}) untied: self.weight a registered Parameter of random entries of size about "
                   f"1/sqrt(d_model)", untied, untied_parts_judge(d, v), scored=False)
        yield Case(f"OutputHead({d}, {v}, embedding) tied: logits h E^T, and one SGD step on head.parameters() "
                   f"moves the embedding by its gradient; after it, every tensor of the head's state dict is the "
                   f"embedding's matrix (no matrix of its own)", tied, tied_judge(h, E))
        yield Case(f"OutputHead({d}, {v}, embedding) tied: self.weight is embedding.weight, no parameters of its own",
                   tied, tied_parts_judge(d, v), scored=False)
