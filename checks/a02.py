"""Checks for the exercises of chapter 2: embeddings."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from . import references
from .core import Mistake, as_tensor, call, compare, fail, outputs, report, values_of
from .mistakes.a02 import EMBED_ONE_HOT_MISTAKES, EMBEDDING_MISTAKES

__all__ = ["check_one_hot_by_hand", "check_rms_scales", "check_embed_one_hot", "check_embedding_module",
           "one_hot_exercise_inputs"]

HAND_TOLERANCE = 1e-6
SCALES_RTOL = 1e-3


def one_hot_exercise_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The by-hand exercise: ``E`` of shape ``(vocab=5, d=3)`` and the ids of a four-token sentence."""
    E = torch.tensor([[1.0, 0.0, 2.0],
                      [0.0, 3.0, 1.0],
                      [2.0, 2.0, 0.0],
                      [1.0, -1.0, 4.0],
                      [0.0, 1.0, -2.0]])
    ids = torch.tensor([3, 1, 4, 3])  # "the cat saw the"
    return E, ids


def _one_hot_mistakes() -> list[Mistake]:
    E, ids = one_hot_exercise_inputs()
    right = E[ids]
    return [
        Mistake("tokens as columns", "the rows are tokens: row t of the answer is the embedding of token t (you wrote "
                "them as columns).", right.T),
        Mistake("counted from 1", "ids count from 0: id 0 picks the first row of E, so id 3 picks the fourth row (you "
                "counted from 1).", E[ids - 1]),
        Mistake("one vector", "there is one row per token in the sentence, not one vector for the whole sentence.",
                right.sum(0)),
    ]


ONE_HOT_MISTAKES = _one_hot_mistakes()


def check_one_hot_by_hand(answer) -> None:
    """``one_hot(ids) @ E`` for the exercise's ``E`` and ids, as a ``(seq=4, d=3)`` list of rows."""
    __tracebackhide__ = True
    E, ids = one_hot_exercise_inputs()
    problems = compare(answer, E[ids], ("seq", "d"), atol=HAND_TOLERANCE, rtol=0.0,
                       mistakes=values_of(ONE_HOT_MISTAKES), what="one_hot(ids) @ E")
    report("one-hot times E", problems)


_VOCAB, _D = 32000, 1000  # the sizes of the exercise

RMS_SCALES_MISTAKES = [
    Mistake("no square roots", "every square root is missing: the RMS is the square root of the mean of the squares.",
            torch.tensor([1 / _VOCAB, 1 / _D, float(_D)], dtype=torch.float64)),
    Mistake("length, not RMS", "scales[0]: that is the length (L2 norm) of the one-hot vector; the RMS divides the "
            "sum of squares by the number of entries before the square root.", 1.0, 0),
    Mistake("no square root", "scales[0]: the RMS is the square root of the mean of the squares; you left out the "
            "square root.", 1 / _VOCAB, 0),
    Mistake("d_model, not the vocabulary", "scales[0]: a one-hot vector lives in the vocabulary's space, of size "
            "32,000.", 1 / math.sqrt(_D), 0),
    Mistake("no square root", "scales[1]: d q^2 = 1 gives q^2 = 1/d; q is its square root.", 1 / _D, 1),
    Mistake("the vocabulary, not d_model", "scales[1]: each logit is a sum over the d = 1000 entries of the input "
            "vector, so the size of the entries depends on d, not on the vocabulary.", 1 / math.sqrt(_VOCAB), 1),
    Mistake("one over the vocabulary", "scales[1]: each logit sums d = 1000 products; the vocabulary size does not "
            "enter.", 1 / _VOCAB, 1),
    Mistake("divided", "scales[2]: the rows of E have RMS 1/sqrt(d); the lookup must multiply by the number that "
            "brings them to RMS 1, not divide.", 1 / math.sqrt(_D), 2),
    Mistake("squared", "scales[2]: the RMS of a row grows with the factor itself, not with its square.", float(_D), 2),
    Mistake("the vocabulary, not d_model", "scales[2]: the factor depends on d_model, not on the vocabulary.",
            math.sqrt(_VOCAB), 2),
]


def check_rms_scales(answer) -> None:
    """``[RMS of a one-hot vector of size 32,000, entry size of the output matrix for d = 1000,
    factor of the tied lookup]`` within a relative 1e-3."""
    __tracebackhide__ = True
    expected = torch.tensor([1 / math.sqrt(_VOCAB), 1 / math.sqrt(_D), math.sqrt(_D)], dtype=torch.float64)
    problems = compare(answer, expected, ("number",), atol=0.0, rtol=SCALES_RTOL,
                       mistakes=values_of(RMS_SCALES_MISTAKES), what="scales")
    got = as_tensor(answer)
    if problems and got is not None and tuple(got.shape) == (3,) and not any("Hint" in p for p in problems):
        for mistake in RMS_SCALES_MISTAKES:
            if mistake.part is not None and math.isclose(float(got[mistake.part]), mistake.wrong, rel_tol=SCALES_RTOL):
                problems.append("Hint: " + mistake.hint)
    report("RMS scales", problems)


def _embed_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(10, 6, generator=g)
    return [("ids of shape (batch=2, seq=4)", torch.randint(0, 10, (2, 4), generator=g), E),
            ("ids of shape (seq=5,)", torch.tensor([6, 0, 3, 3, 7]), E),
            ("a float64 E", torch.tensor([[2, 9], [0, 0]]), E.double())]


def check_embed_one_hot(fn: Callable, seed: int = 0) -> None:
    """``fn(ids, E)`` must return ``one_hot(ids) @ E``: ids ``(...)`` -> ``(..., d)``, in the dtype of ``E``."""
    __tracebackhide__ = True
    for case, ids, E in _embed_cases(seed):
        got = call(fn, (ids.clone(), E.clone()), f"embed_one_hot ({case})")
        expected = E[ids]
        dims = ("batch", "seq", "d") if ids.dim() == 2 else ("seq", "d")
        mistakes = outputs(EMBED_ONE_HOT_MISTAKES, ids, E)
        problems = compare(got, expected, dims, atol=1e-5, rtol=1e-5, mistakes=mistakes,
                           what=f"embeddings ({case})", promised=("E", E.dtype))
        if problems:
            report(f"embed_one_hot ({case})", problems)
    report("embed_one_hot", [])


def _loaded(module: nn.Module, theirs: nn.Embedding) -> nn.Module:
    with torch.no_grad():
        module.weight.copy_(theirs.weight)
    return module


def _check_parameter(module, vocab: int, d: int) -> None:
    """A registered ``weight`` Parameter of shape ``(vocab_size, d_model)``."""
    __tracebackhide__ = True
    if not isinstance(module, nn.Module):
        fail("✗ Embedding", [f"expected an instance of torch.nn.Module, got {type(module).__name__}",
                             "write `class Embedding(torch.nn.Module)` and call super().__init__() first"])
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor):
        fail("✗ Embedding", ["expected an attribute `weight` holding the embedding matrix, "
                             f"got {type(weight).__name__}"])
    if tuple(weight.shape) != (vocab, d):
        lines = [f"weight: expected shape (vocab_size={vocab}, d_model={d}), got {tuple(weight.shape)}"]
        if tuple(weight.shape) == (d, vocab):
            lines.append("Hint: one row per token: the matrix is (vocab_size, d_model), like nn.Embedding's.")
        fail("✗ Embedding", lines)
    if not isinstance(weight, nn.Parameter) or not any(p is weight for p in module.parameters()):
        fail("✗ Embedding", ["weight: expected a torch.nn.Parameter registered on the module, so that training "
                             "can update it; wrap the tensor in torch.nn.Parameter(...)"])


def _check_initialisation(cls: Callable) -> None:
    """Entries with mean about 0 and std about ``1/sqrt(d_model)``, measured on a big module."""
    __tracebackhide__ = True
    big_vocab, big_d = 2000, 64  # big, so that the sample standard deviation is close to the true one
    big = call(cls, (big_vocab, big_d), f"Embedding({big_vocab}, {big_d})")
    w = big.weight.detach().double()
    std, mean = float(w.std()), float(w.mean())
    target = 1 / math.sqrt(big_d)
    if not (abs(mean) < 0.1 * target and abs(std / target - 1) < 0.1):
        lines = [f"weight of Embedding({big_vocab}, {big_d}): its entries have mean {mean:.4f} and std {std:.4f}; "
                 "expected mean about 0 and std about 1/sqrt(d_model)"]
        if abs(mean) >= 0.1 * target:
            lines.append("Hint: the entries should be centred on 0: draw them with torch.randn, not torch.rand.")
        else:
            for value, hint in ((1.0, "this is nn.Embedding's default, N(0, 1); divide by sqrt(d_model)."),
                                (1 / big_d, "divided by d_model instead of its square root."),
                                (1 / math.sqrt(big_vocab), "the std depends on d_model, not on the vocabulary size."),
                                (0.0, "all entries are equal: draw them at random with torch.randn.")):
                if abs(std - value) <= 0.1 * max(value, 1e-3):
                    lines.append("Hint: " + hint)
                    break
        fail("✗ Embedding", lines)


def check_embedding_module(cls: Callable, seed: int = 0) -> None:
    """``cls(vocab_size, d_model)``: a ``nn.Module`` with a ``weight`` Parameter ``(vocab_size, d_model)``,
    initialised with std ``1/sqrt(d_model)``; ``forward(ids)`` is the lookup times ``sqrt(d_model)``."""
    __tracebackhide__ = True
    vocab, d = 11, 8
    module = call(cls, (vocab, d), f"Embedding({vocab}, {d})")
    _check_parameter(module, vocab, d)
    _check_initialisation(cls)

    # forward: the weights of a seeded nn.Embedding, copied into the module
    g = torch.Generator().manual_seed(seed)
    theirs = references.embedding(vocab, d, g)
    ids = torch.randint(0, vocab, (2, 5), generator=g)
    got = call(_loaded(module, theirs), (ids,), "Embedding.forward")
    if isinstance(got, torch.Tensor):
        got = got.detach()
    with torch.no_grad():
        expected = theirs(ids) * math.sqrt(d)
        mistakes = outputs(EMBEDDING_MISTAKES, ids, run=lambda wrong, ids: _loaded(wrong(vocab, d), theirs)(ids))
    report("Embedding", compare(got, expected, ("batch", "seq", "d_model"), atol=1e-5, rtol=1e-5,
                                mistakes=mistakes, what="Embedding output"))


MISTAKES = {
    "check_one_hot_by_hand": ONE_HOT_MISTAKES,
    "check_rms_scales": RMS_SCALES_MISTAKES,
    "check_embed_one_hot": EMBED_ONE_HOT_MISTAKES,
    "check_embedding_module": EMBEDDING_MISTAKES,
}
