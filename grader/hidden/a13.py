"""Hidden tests of assignment 13, looking inside (references written out here: the scores as means of the weights
the chapter names, over Python loops; direct logit attribution as the chapter's formula in float64, and its sum
through PyTorch's F.layer_norm; the restored fraction of the batch means).

Exercise 1 is the exercise's own pattern (``<bos> A B C A B C``): its answer is fixed by the exercise's text, not
drawn from the seed (``FIXED``). Every other input comes from the run's seed. Exercise 4 hands the student's sweep a
``patched_metric`` whose value changes each time the same head is asked again: a sweep that asks a head twice and
uses the later answer gets other fractions (scored); how often each head was asked is only the kernel's to see
(reported). What the texts promise besides the values is scored too: the dtype of ``pattern`` and of ``clean`` in
exercises 2 and 4 (float64 cases among them), exercise 3's inputs unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import describe, fields, first, kept, number, returns, tensor

ASSIGNMENT = "13_looking_inside"
FIXED = {"ex1_scores_by_hand"}  # the exercise's own pattern: the same question in every run
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_scores_by_hand": Forbid("scores", ("transformer",)),
    "ex2_induction_score": Forbid("induction_score", ("transformer",)),
    "ex3_direct_logit_attribution": Forbid("direct_logit_attribution", ("transformer",)),
    "ex4_restored_fractions": Forbid("restored_fractions", ("transformer",)),
}
# exercise 1: one head on <bos> A B C A B C; row t holds the weights of query t on keys 0 .. t
PATTERN = [[1.0], [0.5, 0.5], [0.2, 0.6, 0.2], [0.1, 0.2, 0.6, 0.1], [0.0, 0.1, 0.7, 0.2, 0.0],
           [0.0, 0.0, 0.1, 0.8, 0.1, 0.0], [0.1, 0.0, 0.0, 0.1, 0.5, 0.3, 0.0]]
HALF = 3


# ----------------------------------------------------------------- exercise 1: by hand


def _by_hand_judge(got):
    if not isinstance(got, dict):
        return f"scores: expected a dict, got {describe(got)}"
    for key in ("previous", "induction"):
        if key not in got:
            return f"scores is missing the key {key!r}"
    previous = sum(PATTERN[t][t - 1] for t in range(1, len(PATTERN))) / (len(PATTERN) - 1)
    repeat = range(HALF + 1, 2 * HALF + 1)  # the queries of the repeat; the key after the earlier copy: t - HALF + 1
    induction = sum(PATTERN[t][t - HALF + 1] for t in repeat) / HALF
    return first(number(got["previous"], previous, 1e-3, "scores['previous']"),
                 number(got["induction"], induction, 1e-3, "scores['induction']"))


def ex1_scores_by_hand(seed: int):
    yield Case("scores = {'previous', 'induction'}: the two scores of the exercise's pattern (each within 1e-3)",
               reads("scores"), _by_hand_judge)


# ----------------------------------------------------------------- exercise 2: induction scores


def _causal(g, batch, heads, seq, dtype=torch.float32):
    scores = 2 * torch.randn(batch, heads, seq, seq, generator=g, dtype=dtype)
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)  # (seq, seq): True above the diagonal
    return scores.masked_fill(future, float("-inf")).softmax(dim=-1)  # (batch, heads, seq, seq)


def _two_heads(half: int) -> torch.Tensor:
    """``(2, seq, seq)``, made by hand: head 0 an induction head (all of a repeat query's weight on the token after the
    earlier copy), head 1 a previous-token head; every other row of both uniform over its keys."""
    seq = 1 + 2 * half
    w = torch.tril(torch.ones(seq, seq)) / torch.arange(1, seq + 1)[:, None]  # (seq, seq): uniform causal rows
    w = w[None].repeat(2, 1, 1)  # (2, seq, seq)
    for t in range(half + 1, seq):
        w[0, t] = 0.0
        w[0, t, t - half + 1] = 1.0
    for t in range(1, seq):
        w[1, t] = 0.0
        w[1, t, t - 1] = 1.0
    return w


def _induction_reference(pattern: torch.Tensor, half: int) -> torch.Tensor:
    """The mean, over the batch and the repeat's queries ``t = half + 1 .. 2 half``, of the weight on ``t - half + 1``,
    one head at a time."""
    batch, heads = pattern.shape[:2]
    out = []
    for h in range(heads):
        total = 0.0
        for b in range(batch):
            for t in range(half + 1, 2 * half + 1):
                total += float(pattern[b, h, t, t - half + 1])
        out.append(total / (batch * half))
    return torch.tensor(out, dtype=torch.float64)


def ex2_induction_score(seed: int):
    g = generator(seed, "ex2_induction_score")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    for batch, heads, half, dtype in [(draw(1, 4), draw(2, 5), draw(2, 8), torch.float32),
                                      (draw(2, 5), 1, draw(3, 9), torch.float32),
                                      (draw(1, 3), draw(2, 4), 1, torch.float32),  # half 1: one query in the repeat
                                      (draw(1, 4), draw(1, 4), draw(2, 7), torch.float64)]:
        pattern = _causal(g, batch, heads, 1 + 2 * half, dtype)
        yield Case(f"induction_score on causal patterns of shape {tuple(pattern.shape)} (half {half}), "
                   f"{str(dtype)[6:]}", calls("induction_score", pattern, half),
                   returns(_induction_reference(pattern, half).to(dtype), ["heads"], promised="pattern"))
    half = draw(3, 9)
    pattern = (_two_heads(half) + _causal(g, 3, 2, 1 + 2 * half)) / 2  # (3, 2, seq, seq): rows still sum to 1
    yield Case(f"induction_score on an induction head and a previous-token head made by hand, each averaged with "
               f"a causal pattern (half {half})",
               calls("induction_score", pattern, half),
               returns(_induction_reference(pattern, half).float(), ["heads"], promised="pattern"))


# ----------------------------------------------------------------- exercise 3: direct logit attribution


def _dla_reference(parts, gamma, w_u, answer, other, eps) -> torch.Tensor:
    """Written out in float64: sigma of the whole stream (the sum of the parts), frozen; each part centred on its own
    mean, times gamma, divided by sigma, dotted with W_U[answer] - W_U[other]."""
    p, gm, w = parts.double(), gamma.double(), w_u.double()
    d = p.shape[1]
    x = p.sum(dim=0)  # (d_model,)
    mean = x.sum() / d
    sigma = math.sqrt(float(((x - mean) ** 2).sum()) / d + eps)
    u = w[answer] - w[other]  # (d_model,)
    return torch.stack([(gm * (row - row.sum() / d) / sigma * u).sum() for row in p])  # (parts,)


def _sum_judge(parts, gamma, w_u, answer, other, eps):
    """The contributions add up to the logit difference through PyTorch's LayerNorm (with beta = 0)."""
    x = parts.sum(dim=0).double()  # (d_model,)
    whole = F.layer_norm(x, (x.shape[0],), gamma.double(), None, eps) @ (w_u[answer] - w_u[other]).double()

    def judge(reply):
        out, _args = fields(reply, "out", "args")
        found = _vector(out, parts.shape[0])
        if found is None:  # not n numbers: said in the words of the per-part comparison
            return tensor(out, torch.zeros(parts.shape[0], dtype=torch.float64), dims=["parts"])
        return tensor(found.sum()[None], whole[None], atol=1e-4, rtol=1e-4, dims=["1"])
    return judge


def _vector(out, n: int) -> torch.Tensor | None:
    """``out`` as a float64 vector of ``n`` real numbers (a tensor, an array or a list), or None."""
    if isinstance(out, torch.Tensor):
        if out.dtype.is_complex:
            return None
        out = out.detach().double().numpy()
    try:
        found = torch.as_tensor(np.asarray(out, dtype=np.float64))
    except (TypeError, ValueError, RuntimeError):
        return None
    return found if tuple(found.shape) == (n,) else None


def _dla_inputs(g, n, d, vocab, dtype):
    r = lambda *shape: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    parts = r(n, d) + 2 * r(n, 1)  # (parts, d_model), each with a mean of its own
    answer, other = torch.randperm(vocab, generator=g)[:2].tolist()
    return parts, 1 + 0.3 * r(d), r(vocab, d), answer, other


def ex3_direct_logit_attribution(seed: int):
    g = generator(seed, "ex3_direct_logit_attribution")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    large = 0.25 + torch.rand((), generator=g).item()  # an eps that the variance does not drown
    for eps, dtype in [(1e-5, torch.float32), (1e-5, torch.float32), (large, torch.float32), (1e-5, torch.float64)]:
        n, d, vocab = draw(2, 12), draw(3, 17), draw(4, 30)
        parts, gamma, w_u, answer, other = _dla_inputs(g, n, d, vocab, dtype)
        args = (parts, gamma, w_u, answer, other, eps)
        what = f"direct_logit_attribution of {n} parts, d_model {d}, eps {eps:.3g}, {str(dtype)[6:]}"
        yield Case(f"{what}: each part's contribution", calls("direct_logit_attribution", *args),
                   returns(_dla_reference(*args), ["parts"]))
        yield Case(f"{what}: parts, gamma and W_U unchanged", calls("direct_logit_attribution", *args),
                   kept(list(args), ["parts", "gamma", "W_U", "answer", "other", "eps"], ("out", "args")))
        yield Case(f"{what}: the contributions add up to logit[answer] - logit[other] through LayerNorm (beta = 0)",
                   calls("direct_logit_attribution", *args), _sum_judge(*args))


# ----------------------------------------------------------------- exercise 4: the patching sweep

SWEEP = ("out", "calls")


def _fractions(table, clean, corrupted) -> torch.Tensor:
    """``(n_layers, n_heads)``: (mean patched - mean corrupted) / (mean clean - mean corrupted), over the batch."""
    mean = lambda values: sum(float(v) for v in values) / len(values)  # noqa: E731
    c, k = mean(clean), mean(corrupted)
    return torch.tensor([[(mean(row) - k) / (c - k) for row in layer] for layer in table], dtype=torch.float64)


def _sweep_judge(ref):
    def judge(reply):
        out, _calls = fields(reply, *SWEEP)
        return tensor(out, ref, dims=["n_layers", "n_heads"], promised="clean")
    return judge


def _calls_judge(n_layers, n_heads):
    """Each head asked exactly once (only the kernel sees the calls: reported, not scored)."""
    every = sorted([layer, head] for layer in range(n_layers) for head in range(n_heads))

    def judge(reply):
        _out, asked = fields(reply, *SWEEP)
        if not isinstance(asked, list) or sorted(asked, key=str) != sorted(every, key=str):
            return "patched_metric was not called exactly once per head"
        return None
    return judge


def ex4_restored_fractions(seed: int):
    g = generator(seed, "ex4_restored_fractions")
    draw = lambda lo, hi: int(torch.randint(lo, hi, (), generator=g))  # noqa: E731
    for n_layers, n_heads, batch, dtype in [(draw(2, 4), draw(2, 5), draw(2, 6), torch.float32),
                                            (draw(1, 3), draw(3, 6), 1, torch.float32),
                                            (draw(2, 5), draw(1, 3), draw(3, 8), torch.float64)]:
        r = lambda *shape, dtype=dtype: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
        clean, corrupted = 2 + 0.5 * r(batch), -2 + 0.5 * r(batch)  # (batch,) each, about 4 apart
        share = torch.rand(n_layers, n_heads, batch, generator=g, dtype=dtype)
        table = corrupted + share * (clean - corrupted) + 0.3 * r(n_layers, n_heads, batch)
        drift = 1 + r(n_layers, n_heads, batch).abs()  # added once more at every later call of the same head
        request = Request("a13.sweep", {"table": table, "drift": drift, "clean": clean, "corrupted": corrupted,
                                        "n_layers": n_layers, "n_heads": n_heads,
                                        "limit": 3 * n_layers * n_heads + 10})
        what = (f"restored_fractions over {n_layers} layer(s) of {n_heads} head(s), {batch} prompt(s), "
                f"{str(dtype)[6:]}, with a patched_metric whose value changes when a head is asked again")
        yield Case(f"{what}: the fractions of the batch means", request,
                   _sweep_judge(_fractions(table.tolist(), clean.tolist(), corrupted.tolist()).to(dtype)))
        yield Case(f"{what}: patched_metric called once per head", request, _calls_judge(n_layers, n_heads),
                   scored=False)
