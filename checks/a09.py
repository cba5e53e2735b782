"""Checks for the exercises of chapter 9: the output head."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import references
from .answers import CountedCalls, as_ids
from .core import Mistake, call, call_keeping, compare, fail, outputs, report, require_unchanged, values_of
from .mistakes.a09 import GREEDY_MISTAKES, MASKED_CROSS_ENTROPY_MISTAKES, OUTPUT_HEAD_MISTAKES, Greedy

__all__ = ["check_output_by_hand", "check_masked_cross_entropy", "check_greedy_decoding",
           "check_tied_output_head", "by_hand_inputs"]

BY_HAND_TOLERANCE = 1e-3


def by_hand_inputs() -> tuple[list[str], torch.Tensor, str]:
    """Exercise 1: the four-word vocabulary, its logits after "<sos> Ich habe", and the right next word."""
    return ["einen", "Brot", "gegessen", "<eos>"], torch.tensor([1.0, 2.0, 0.0, -0.5]), "einen"


# ----------------------------------------------------------------- exercise 1


def _by_hand_mistakes() -> list[Mistake]:
    words, z, right = by_hand_inputs()
    z = z.double()
    p = z.softmax(dim=-1)
    y, top = words.index(right), int(z.argmax())
    return [
        Mistake("not normalised", "these are the exponentials e^z; divide each by their sum, so that the "
                "probabilities add up to 1.", z.exp(), "probs"),
        Mistake("logits over their sum", "these are the logits divided by their sum; the softmax exponentiates "
                "first: p_j = e^(z_j) / sum e^(z_j').", z / z.sum(), "probs"),
        Mistake("log-probabilities", "these are log-probabilities; probs asks for the probabilities themselves.",
                z.log_softmax(dim=-1), "probs"),
        Mistake("sorted", "the probabilities must stay in vocabulary order (einen, Brot, gegessen, <eos>), not "
                "sorted.", p.sort(descending=True).values, "probs"),
        Mistake("the picked word", f"this is -log p of {words[top]!r}, the word the model picks; the loss is about "
                f"the right word, {right!r}.", -p[top].log(), "loss"),
        Mistake("no minus", "the minus sign is missing: log p is negative, and the loss is -log p.", p[y].log(),
                "loss"),
        Mistake("log base 10", "this uses log base 10; the loss uses the natural logarithm (math.log).",
                -p[y].log10(), "loss"),
        Mistake("minus the logit", "this is -z_y, minus the logit; the log-probability also subtracts log(sum of "
                "e^z).", -z[y], "loss"),
        Mistake("1 - p", "this is 1 - p; the cross-entropy is -log p.", 1 - p[y], "loss"),
        Mistake("the probability", "this is the probability of the right word; the loss is minus its logarithm.",
                p[y], "loss"),
    ]


BY_HAND_MISTAKES = _by_hand_mistakes()


def check_output_by_hand(answer) -> None:
    """``answer = {"probs": 4 numbers, "word": str, "loss": number}`` for the logits of :func:`by_hand_inputs`."""
    __tracebackhide__ = True
    words, z, right = by_hand_inputs()
    if not isinstance(answer, dict) or not {"probs", "word", "loss"} <= set(answer):
        fail("✗ output by hand", [f"expected a dict with the keys 'probs', 'word' and 'loss', got "
                                  f"{type(answer).__name__}; keep the last line of the answer cell"])
    z = z.double()
    p = z.softmax(dim=-1)
    y = words.index(right)
    top = int(z.argmax())
    problems = compare(answer["probs"], p, ("vocab",), atol=BY_HAND_TOLERANCE, rtol=0.0, what="probs",
                       mistakes=values_of(BY_HAND_MISTAKES, "probs"))
    word = answer["word"]
    if isinstance(word, str):
        if word not in words:
            problems.append(f"word: expected one of the four words {words}, got {word!r}")
        elif word != words[top]:
            problems.append("word: this is not the word that greedy decoding picks")
            if word == right:
                problems.append(f"Hint: {right!r} is the right next word of the sentence, but the model does not "
                                "know that; greedy decoding picks the word with the highest probability.")
    elif isinstance(word, (int, float, torch.Tensor)) and not isinstance(word, bool):
        problems.append(f"word: expected the word itself, a string, got a number ({type(word).__name__})")
        problems.append("Hint: an index is only half the answer: ask the vocabulary which word has that index.")
    else:
        problems.append(f"word: expected a string, got {type(word).__name__}")
    problems += compare(answer["loss"], -p[y].log(), (), atol=BY_HAND_TOLERANCE, rtol=0.0, what="loss",
                        mistakes=values_of(BY_HAND_MISTAKES, "loss"))
    report("output by hand", problems)


# ----------------------------------------------------------------- exercise 2


def _loss_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 5, 7, generator=g) * 2
    labels = torch.randint(1, 7, (2, 5), generator=g)
    labels[1, 3:] = 0  # the second sentence is shorter: two pad labels
    other = torch.randint(0, 7, (3, 4), generator=g)
    other[other == 3] = 4
    other[0, 2:], other[2, 1:] = 3, 3  # pad_id 3 this time
    return [("pad_id=0", logits, labels, 0),
            ("no padding", logits[:1, :4], labels[:1, :4], 0),
            ("pad_id=3", torch.randn(3, 4, 7, generator=g) * 2, other, 3)]


def check_masked_cross_entropy(fn: Callable) -> None:
    """``fn(logits (batch, seq, vocab), labels (batch, seq), pad_id)``: mean ``-log p(label)`` over non-pad labels."""
    __tracebackhide__ = True
    for case, logits, labels, pad_id in _loss_cases(0):
        x = logits.clone().requires_grad_(True)
        got = call_keeping(fn, (x, labels, pad_id), f"masked_cross_entropy ({case})", (None, "labels"), [
            "the labels of a batch come back in the next epoch, so {what} must stay as it was given",
            "Hint: read the labels, don't write into them: a boolean mask labels != pad_id selects the real ones."])
        expected = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=pad_id)
        problems = compare(got, expected, (),
                           mistakes=outputs(MASKED_CROSS_ENTROPY_MISTAKES, logits, labels, pad_id),
                           what=f"loss ({case})")
        if problems:
            report(f"masked_cross_entropy ({case})", problems)
        if not isinstance(got, torch.Tensor) or not got.requires_grad:
            report(f"masked_cross_entropy ({case})", [
                "the value is right, but the result is not a tensor connected to the logits (no .item() or "
                "float(), and no torch.tensor(...) around the result): training needs loss.backward()"])
    report("masked_cross_entropy", [])


# ----------------------------------------------------------------- exercise 3

def check_greedy_decoding(fn: Callable) -> None:
    """``fn(next_logits, prefix, eos_id, max_new_tokens)`` -> the prefix followed by the greedy tokens."""
    __tracebackhide__ = True
    table = references.german_table()
    cases = [
        ("the chapter's bigram toy", lambda ids: table[ids[-1]], [1], 2, 10),
        ("a prefix of three tokens", lambda ids: table[ids[-1]], [1, 4, 5], 2, 10),
        ("a longer prefix, and eos never comes", references.history_model(2), [1, 5, 7, 3], 2, 4),
        ("a model that never says eos", references.history_model(1), [1], 2, 6),
        ("eos at once", lambda ids: table[ids[-1]], [1, 4, 5, 6, 7, 8], 2, 5),
        ("max_new_tokens=0", lambda ids: table[ids[-1]], [1, 4], 2, 0),
    ]
    for case, model, prefix, eos_id, max_new in cases:
        counted = CountedCalls(model)
        given = list(prefix)
        got = call(fn, (counted, given, eos_id, max_new), f"greedy_decode ({case})")
        require_unchanged(f"greedy_decode ({case})", {"prefix": (given, prefix)},
                          ["work on a copy of the list, e.g. ids = list(prefix)"])
        expected = torch.tensor(Greedy()(model, prefix, eos_id, max_new), dtype=torch.float64)
        new_tokens = len(expected) - len(prefix)
        wrong_ids = outputs(GREEDY_MISTAKES, model, prefix, eos_id, max_new)
        mistakes = {hint: torch.tensor(ids, dtype=torch.float64) for hint, ids in wrong_ids.items()}
        mistakes = {hint: value for hint, value in mistakes.items()
                    if value.shape != expected.shape or not torch.equal(value, expected)}
        problems = compare(as_ids(got), expected, ("position",), atol=0.0, rtol=0.0, mistakes=mistakes,
                           what=f"ids ({case})")
        if problems:
            report(f"greedy_decode ({case})", problems)
        if counted.calls != new_tokens:
            report(f"greedy_decode ({case})", [
                f"the ids are right, but next_logits was called {counted.calls} times for {new_tokens} new "
                "tokens: call it once per new token (each call stands for a whole pass of the decoder)"])
    report("greedy_decode", [])


# ----------------------------------------------------------------- exercise 4


def _run_head(cls, d_model: int, vocab_size: int, embedding, weight: torch.Tensor, h: torch.Tensor):
    """Build ``cls`` (tied to ``embedding`` if given, else with ``weight`` copied in) and call it on ``h``."""
    if embedding is not None:
        return cls(d_model, vocab_size, embedding)(h)
    head = cls(d_model, vocab_size)
    head.weight.copy_(weight)
    return head(h)


def _check_untied(cls: Callable, d: int, v: int, h: torch.Tensor) -> None:
    """The head without an embedding: its own registered ``(vocab, d_model)`` matrix, RMS ``1/sqrt(d_model)``."""
    __tracebackhide__ = True
    head = call(cls, (d, v), f"OutputHead({d}, {v})")
    if not isinstance(head, nn.Module):
        fail(f"✗ OutputHead({d}, {v})", [f"expected an nn.Module, got {type(head).__name__}"])
    w = getattr(head, "weight", None)
    if not isinstance(w, torch.Tensor):
        fail(f"✗ OutputHead({d}, {v})", ["store the output matrix as self.weight"])
    if not isinstance(w, nn.Parameter) or not any(p is w for p in head.parameters()):
        fail(f"✗ OutputHead({d}, {v})", ["self.weight is not a registered parameter: wrap the tensor in "
                                         "torch.nn.Parameter(...), so that training updates it"])
    if tuple(w.shape) != (v, d):
        lines = [f"self.weight: expected shape (vocab_size={v}, d_model={d}), got {tuple(w.shape)}"]
        if tuple(w.shape) == (d, v):
            lines.append("Hint: transposed: store W as (vocab_size, d_model), like nn.Embedding and nn.Linear, "
                         "and compute h W^T")
        fail(f"✗ OutputHead({d}, {v})", lines)
    rms = float(w.detach().double().pow(2).mean().sqrt())
    if not 0.5 / math.sqrt(d) <= rms <= 2 / math.sqrt(d):
        fail(f"✗ OutputHead({d}, {v})", [
            f"self.weight starts with entries of RMS {rms:.3g}; expected about 1/sqrt(d_model) = "
            f"{1 / math.sqrt(d):.3g}, so that the logits start with a spread of about 1"])
    got = call(head, (h,), f"OutputHead({d}, {v}).forward")
    with torch.no_grad():
        problems = compare(got, F.linear(h, w), ("batch", "seq", "vocab"),
                           mistakes=outputs(OUTPUT_HEAD_MISTAKES, d, v, None, w, h, run=_run_head),
                           what="logits (untied)")
    if problems:
        report(f"OutputHead({d}, {v})", problems)


def _check_tied(cls: Callable, d: int, v: int, h: torch.Tensor) -> None:
    """The head given an embedding: that embedding's own Parameter, nothing of its own, at every call."""
    __tracebackhide__ = True
    emb = references.tied_embedding(v, d, 1)
    head = call(cls, (d, v, emb), f"OutputHead({d}, {v}, embedding)")
    w = getattr(head, "weight", None)
    if w is not emb.weight:
        lines = ["self.weight is not the embedding's weight: a tied head must use embedding.weight itself"]
        if isinstance(w, torch.Tensor) and w.shape == emb.weight.shape and torch.equal(w.detach(), emb.weight.detach()):
            lines.append("Hint: this is a copy (same numbers, another object): assign the Parameter itself, "
                         "self.weight = embedding.weight, so that both uses share one matrix and its gradients")
        elif isinstance(w, torch.Tensor) and w.shape == (d, v) and torch.equal(w.detach(), emb.weight.detach().T):
            lines.append("Hint: this is E^T, a new tensor; keep the embedding's (vocab_size, d_model) matrix "
                         "and compute h W^T in forward")
        fail(f"✗ OutputHead({d}, {v}, embedding)", lines)
    extra = sum(p.numel() for p in head.parameters() if p is not emb.weight)
    if extra:
        fail(f"✗ OutputHead({d}, {v}, embedding)", [
            f"the tied head has {extra} parameters of its own besides the embedding's matrix; a tied head "
            "creates no matrix (and no bias) of its own"])
    got = call(head, (h,), f"OutputHead({d}, {v}, embedding).forward")
    with torch.no_grad():
        problems = compare(got, F.linear(h, emb.weight), ("batch", "seq", "vocab"),
                           mistakes=outputs(OUTPUT_HEAD_MISTAKES, d, v, emb, emb.weight, h, run=_run_head),
                           what="logits (tied)")
    if problems:
        report(f"OutputHead({d}, {v}, embedding)", problems)
    with torch.no_grad():
        emb.weight[3] += 1.0
        got = call(head, (h,), f"OutputHead({d}, {v}, embedding).forward")
        if not isinstance(got, torch.Tensor) or not torch.allclose(got, F.linear(h, emb.weight), atol=1e-5):
            report(f"OutputHead({d}, {v}, embedding)", [
                "after a change to the embedding, the head's logits did not follow: forward must use "
                "self.weight, the embedding's own matrix, at every call"])


def check_tied_output_head(cls: Callable, d_model: int = 16, vocab_size: int = 40) -> None:
    """``cls(d_model, vocab_size, embedding=None)``: an ``nn.Module`` with ``self.weight`` (vocab, d_model),
    tied to ``embedding.weight`` when an embedding is given, and ``forward(h) = h W^T``."""
    __tracebackhide__ = True
    h = torch.randn(2, 3, d_model, generator=torch.Generator().manual_seed(0))
    _check_untied(cls, d_model, vocab_size, h)
    _check_tied(cls, d_model, vocab_size, h)
    report("OutputHead", [])


MISTAKES = {
    "check_output_by_hand": BY_HAND_MISTAKES,
    "check_masked_cross_entropy": MASKED_CROSS_ENTROPY_MISTAKES,
    "check_greedy_decoding": GREEDY_MISTAKES,
    "check_tied_output_head": OUTPUT_HEAD_MISTAKES,
}
