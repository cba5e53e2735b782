"""Hidden tests of assignment 02, embeddings (references: torch.nn.functional.embedding and arithmetic by hand).

Exercises 1 and 2 are worked by hand on the exercise's own matrix and the lectures' sizes (32,000 tokens,
d_model = 1000): their questions are fixed, not drawn from the seed. Every other input comes from the run's seed.
Embedding's output, with the grader's weights copied in, and the statistics of its initial weight are scored; how
many parameters it registers is only reported (the kernel alone sees it).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads, rng
from grader.hidden.judge import describe, fields, returns, tensor

ASSIGNMENT = "02_embeddings"
FIXED = {"ex1_one_hot_by_hand", "ex2_rms_scales"}  # worked by hand on the exercise's matrix and the lectures' sizes
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex4_embedding_module": Forbid("Embedding", ("transformer",)),
}
TOL = {"atol": 1e-5, "rtol": 1e-5}


def _real(x) -> float | None:
    """A plain float from an int, a float or a one-element tensor or array; None for anything else."""
    if isinstance(x, (torch.Tensor, np.ndarray)):
        kind = str(x.dtype)
        if x.size == 1 if isinstance(x, np.ndarray) else x.numel() == 1:
            x = x.item() if "bool" not in kind and "complex" not in kind else None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def _listed(x):
    """A tensor or array as nested lists; a tuple as a list; anything else as it is."""
    if isinstance(x, (torch.Tensor, np.ndarray)):
        return x.tolist()
    return list(x) if isinstance(x, tuple) else x


def _rows_judge(want: list[list[float]], tol: float):
    """``got`` must be ``len(want)`` rows of ``len(want[0])`` numbers, each within ``tol`` of ``want``."""
    def judge(got):
        rows = _listed(got)
        if not isinstance(rows, list):
            return f"X: expected a list of rows, got {describe(got)}"
        if len(rows) != len(want):
            return f"X: expected {len(want)} rows (one per token), got another number of rows"
        wrong = False
        for row, ref in zip(rows, want, strict=True):
            row = _listed(row)
            if not isinstance(row, list):
                return f"X: each row should be a list of {len(ref)} numbers; a row is {describe(row)}"
            if len(row) != len(ref):
                return f"X: expected {len(ref)} numbers in each row (one per column of E); a row has another number"
            for a, b in zip(row, ref, strict=True):
                a = _real(a)
                if a is None:
                    return "X: a row holds something that is not a number"
                if not math.isfinite(a) or abs(a - b) > tol:
                    wrong = True
        if wrong:
            return f"X: values are wrong (each within {tol:g})"
        return None
    return judge


def ex1_one_hot_by_hand(seed: int):
    E = [[1, 0, 2], [0, 3, 1], [2, 2, 0], [1, -1, 4], [0, 1, -2]]
    w = [3, 1, 4, 3]
    one_hot = [[1 if v == t else 0 for v in range(5)] for t in w]
    ref = [[sum(one_hot[t][v] * E[v][j] for v in range(5)) for j in range(3)] for t in range(4)]
    yield Case("X, the one-hot matrix of 'the cat saw the' times E (4 rows of 3 numbers, each within 1e-6)",
               reads("X"), _rows_judge(ref, 1e-6))


def _scales_judge(want: list[float], rtol: float):
    names = ["a (the RMS of a one-hot vector)", "b (the size of an output-matrix entry)",
             "c (the factor of the tied lookup)"]

    def judge(got):
        values = _listed(got)
        if not isinstance(values, list):
            return f"scales: expected a list of {len(want)} numbers, got {describe(got)}"
        if len(values) != len(want):
            return f"scales: expected {len(want)} numbers [a, b, c], got another number of them"
        for name, a, b in zip(names, values, want, strict=True):
            a = _real(a)
            if a is None:
                return f"scales: {name} is not a number"
            if not math.isfinite(a) or abs(a - b) > rtol * b:
                return f"scales: {name} is wrong (more than a relative {rtol:g} off)"
        return None
    return judge


def ex2_rms_scales(seed: int):
    one_hot = [0.0] * 32000
    one_hot[17] = 1.0
    a = (sum(x * x for x in one_hot) / len(one_hot)) ** 0.5
    b = (1 / 1000) ** 0.5
    c = 1 / b
    yield Case("scales = [a, b, c] for 32,000 tokens and d_model = 1000 (each within a relative 1e-3)",
               reads("scales"), _scales_judge([a, b, c], 1e-3))


def ex3_embed_one_hot(seed: int):
    g = generator(seed, "ex3_embed_one_hot")
    seq_dims = {1: ["seq"], 2: ["batch", "seq"], 3: ["batch", "block", "seq"]}
    for shape, V, d in [((1,), 3, 2), ((3, 7), 50, 8), ((2, 2, 5), 1000, 16)]:
        E = torch.randn(V, d, generator=g)
        ids = torch.randint(0, V, shape, generator=g)
        yield Case(f"embed_one_hot with random ids of shape {shape} and a random E ({V}, {d})",
                   calls("embed_one_hot", ids, E),
                   returns(F.embedding(ids, E), seq_dims[len(shape)] + ["d"], promised="E", **TOL))
    E64 = torch.randn(6, 4, generator=g, dtype=torch.float64)
    ids = torch.randint(0, 6, (2,), generator=g)
    yield Case("embed_one_hot with a float64 E (6, 4) returns float64", calls("embed_one_hot", ids, E64),
               returns(F.embedding(ids, E64), ["seq", "d"], promised="E", **TOL))


def _module_judge(ref):
    """Scored: the output with the grader's weight copied in."""
    def judge(reply):
        _module, _params, out = fields(reply, "module", "params", "out")
        if out is None:
            return ("no output: Embedding(vocab_size, d_model) must be an nn.Module with one parameter, weight, of "
                    "shape (vocab_size, d_model), wrapped in torch.nn.Parameter(...) (the test copies its own in)")
        problem = tensor(out, ref, dims=["batch", "seq", "d_model"], **TOL)
        return f"the output: {problem}" if problem else None
    return judge


def _params_judge(V, d):
    """Unscored: the kernel says which parameters the module registered."""
    def judge(reply):
        module, params, _out = fields(reply, "module", "params", "out")
        if not module:
            return "expected an instance of a torch.nn.Module subclass"
        if not isinstance(params, list):
            return f"expected the parameters' shapes, got {describe(params)}"
        if not params:
            return "the module has no parameters: wrap the weight in torch.nn.Parameter(...)"
        if params != [[V, d]]:
            return f"expected one parameter, the weight of shape (vocab_size={V}, d_model={d})"
        return None
    return judge


def _init_judge(vocab_size, d_model):
    target = 1 / math.sqrt(d_model)

    def judge(got):
        if not isinstance(got, torch.Tensor):
            return f"weight: expected a tensor, got {describe(got)}"
        if tuple(got.shape) != (vocab_size, d_model):
            return f"weight: expected shape (vocab_size={vocab_size}, d_model={d_model})"
        w = got.double()
        if not bool(torch.isfinite(w).all()):
            return "weight: some entries are NaN or infinite"
        mean, std = float(w.mean()), float(w.std())
        if abs(mean) >= 0.01:
            return "the entries of the initial weight are not centred on 0"
        if abs(std / target - 1) >= 0.05:
            return "the standard deviation of the initial weight is more than 5% off 1/sqrt(d_model)"
        z = (w - w.mean()) / w.std()
        if abs(float((z ** 4).mean()) - 3) > 0.3:   # a normal distribution's kurtosis is 3 (a uniform one's 1.8)
            return "the entries of the initial weight are not drawn from a normal distribution (torch.randn)"
        return None
    return judge


def ex4_embedding_module(seed: int):
    g = generator(seed, "ex4_embedding_module")
    for V, d in [(7, 2), (30, 16), (100, 36)]:
        weight = torch.randn(V, d, generator=g)
        ids = torch.randint(0, V, (3, 9), generator=g)
        ref = F.embedding(ids, weight) * d ** 0.5
        request = Request("a02.embedding", {"vocab_size": V, "d_model": d, "weight": weight, "ids": ids})
        yield Case(f"Embedding({V}, {d}) with random weights copied in: its output on random ids of shape (3, 9)",
                   request, _module_judge(ref))
        yield Case(f"Embedding({V}, {d}) registers one parameter, of shape (vocab_size, d_model)", request,
                   _params_judge(V, d), scored=False)
    init_seed = rng(seed, "ex4_embedding_module init").randrange(2 ** 31)
    yield Case("the initial weight of Embedding(4000, 100): mean about 0 (within 0.01), standard deviation within 5% "
               "of 1/sqrt(d_model), normally distributed",
               Request("a02.embedding_init", {"vocab_size": 4000, "d_model": 100, "seed": init_seed}),
               _init_judge(4000, 100))
