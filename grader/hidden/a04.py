"""Hidden tests of assignment 04, queries, keys and values (references: PyTorch and arithmetic by hand).

Exercise 1 is the lectures' flying-arrows example: its answer is fixed by the lecture, not drawn from the seed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, calls, generator, reads
from grader.hidden.judge import numbers, returns

ASSIGNMENT = "04_queries_keys_values"
FIXED = {"ex1_flying_arrows"}  # the lectures' worked example: the same question in every run
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_attention": Forbid("attention", ("torch.nn.functional.scaled_dot_product_attention", "transformer")),
}


def ex1_flying_arrows(seed: int):
    x = [[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]]
    q, keys, values = x[0][0:2], [r[2:4] for r in x], [r[4:6] for r in x]
    scores = [sum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(2) for k in keys]
    weights = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    ref = [sum(w * v[j] for w, v in zip(weights, values, strict=True)) for j in range(2)]
    yield Case("flying = [a, b], the output of the head for 'flying' (each within 1e-3)", reads("flying"),
               lambda got: numbers(got, ref, 1e-3, "flying"))


def _case(what, name, args, ref, dims, **tol):
    """``name(*args)`` must return a tensor close to ``ref``."""
    return Case(what, calls(name, *args), returns(ref, dims, **tol))


def ex2_attention(seed: int):
    g = generator(seed, "ex2_attention")
    for shape_q, shape_k, dv in [((1, 1, 3), (1, 1, 3), 2), ((3, 5, 8), (3, 7, 8), 4),
                                 ((2, 4, 6, 16), (2, 4, 9, 16), 16)]:
        q, k = torch.randn(*shape_q, generator=g), torch.randn(*shape_k, generator=g)
        v = torch.randn(*shape_k[:-1], dv, generator=g)
        dims = ["batch"] * (len(shape_q) - 2) + ["T_q", "d_v"]
        shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        yield _case(f"attention with {shapes}, no mask", "attention", [q, k, v],
                    F.scaled_dot_product_attention(q, k, v), dims)
        mask = torch.rand(*shape_q[:-1], shape_k[-2], generator=g) > 0.5
        mask[..., -1] = True
        yield _case(f"attention with {shapes} and a random boolean mask", "attention", [q, k, v, mask],
                    F.scaled_dot_product_attention(q, k, v, attn_mask=mask), dims)
    q, k, v = (torch.randn(2, 3, 4, generator=g, dtype=torch.float64) for _ in range(3))
    yield _case("attention on float64 inputs returns float64", "attention", [q, k, v],
                F.scaled_dot_product_attention(q, k, v), ["batch", "T_q", "d_v"], dtype="exact")


def _nadaraya_watson(x, x_train, y_train):
    """The estimate, worked in float64: a softmax over the samples of the scores -(x - x_i)^2 / 2."""
    scores = -(x.double()[:, None] - x_train.double()[None, :]) ** 2 / 2  # (m, 1) - (1, n) -> (m, n)
    return (scores.softmax(dim=-1) @ y_train.double()).to(x.dtype)


def ex3_kernel_regression(seed: int):
    g = generator(seed, "ex3_kernel_regression")
    yield Case("kernel_regression at x = 0 from the samples (0, 1) and (2, 3): (1 + 3 e^-2) / (1 + e^-2)",
               calls("kernel_regression", torch.tensor([0.0]), torch.tensor([0.0, 2.0]), torch.tensor([1.0, 3.0])),
               returns(torch.tensor([1 + 2 / (math.e ** 2 + 1)]), ["query"], promised="x", atol=1e-5, rtol=1e-4))
    for m, n, span in [(1, 1, 1.0), (9, 20, 10.0), (40, 3, 4.0)]:
        x_train, y_train = span * torch.rand(n, generator=g), torch.randn(n, generator=g)
        x = span * torch.rand(m, generator=g)
        yield Case(f"kernel_regression with {m} random queries and {n} random samples in [0, {span:g}]",
                   calls("kernel_regression", x, x_train, y_train),
                   returns(_nadaraya_watson(x, x_train, y_train), ["query"], promised="x", atol=1e-5, rtol=1e-4))
    x_train, y_train = 10 * torch.rand(6, generator=g), torch.randn(6, generator=g)
    far = torch.tensor([-25.0, 35.0])  # every kernel value 0 in float32; the scores still exact to its rtol
    yield Case("kernel_regression with queries far from every sample (x = -25 and x = 35)",
               calls("kernel_regression", far, x_train, y_train),
               returns(_nadaraya_watson(far, x_train, y_train), ["query"], promised="x", atol=1e-5, rtol=1e-4))
    x, x_train, y_train = (torch.rand(k, generator=g, dtype=torch.float64) for k in (4, 5, 5))
    yield Case("kernel_regression on float64 inputs returns float64", calls("kernel_regression", x, x_train, y_train),
               returns(_nadaraya_watson(x, x_train, y_train), ["query"], promised="x", atol=1e-5, rtol=1e-4))


def ex4_self_attention(seed: int):
    g = generator(seed, "ex4_self_attention")
    for b, t, d in [(1, 1, 2), (3, 5, 8), (2, 9, 12)]:
        x = torch.randn(b, t, d, generator=g)
        w = [torch.randn(d, d, generator=g) / d ** 0.5 for _ in range(3)]
        ref = F.scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2])
        yield _case(f"self_attention with x {tuple(x.shape)} and random ({d}, {d}) projections", "self_attention",
                    [x, *w], ref, ["batch", "seq", "d_model"])
