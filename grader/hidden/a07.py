"""Hidden tests of assignment 07, masking (references: arithmetic by hand, slicing, comparisons and
``F.scaled_dot_product_attention`` with autograd).

Exercises 1 and 2 are worked by hand on the exercise's own score row and a 4 x 4 mask: their questions are
fixed, not drawn from the seed. Every other input comes from the run's seed. The gradients of exercise 6 are
values the grader compares with PyTorch's own, so a reply without them fails. What the texts promise besides the
values is scored too: the dtype of ``tgt`` in exercise 3 (int32 ids among the cases), exercise 6's inputs unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import describe, fields, first, items, kept, numbers, returns, tensor

ASSIGNMENT = "07_masking"
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_causal_by_hand": Forbid("allowed", ("torch.tril", "transformer")),
    "ex4_padding_mask": Forbid("padding_mask", ("transformer",)),
    "ex5_causal_padding_mask": Forbid("causal_padding_mask", ("transformer",)),
    "ex6_masked_attention": Forbid("masked_attention", (
        "torch.nn.functional.scaled_dot_product_attention",
        "transformer",
    )),
}
FIXED = {"ex1_masked_row", "ex2_causal_by_hand"}  # worked by hand on the exercise's own numbers
GRAD_TOL = {"atol": 1e-4, "rtol": 1e-3}  # the old hidden test only asked for finite gradients


def _named(name: str, problem: str | None) -> str | None:
    return f"{name}: {problem}" if problem else None


def _pair(out) -> str | None:
    """``out`` must be a pair (a tuple or list of two)."""
    if not isinstance(out, (tuple, list)):
        return f"expected a pair (decoder_input, labels), got {describe(out)}"
    return None if len(out) == 2 else f"expected a pair (decoder_input, labels), got {describe(out)} of another length"


# --------------------------------------------------------------------------- exercises 1 and 2 (by hand)

def ex1_masked_row(seed: int):
    allowed = [2.0, 1.0]  # the scores [2, 1, -inf, -inf]: e^-inf = 0, so only the first two share the weight
    den = sum(math.exp(s) for s in allowed)
    ref = [math.exp(s) / den for s in allowed] + [0.0, 0.0]

    def judge(got):
        if isinstance(got, np.ndarray):
            got = got.tolist()
        # how many a wrong list holds is not told
        if isinstance(got, (list, tuple, torch.Tensor)) and getattr(got, "ndim", 1) and len(got) != len(ref):
            return f"weights: expected {len(ref)} numbers"
        return numbers(got, ref, 1e-3, "weights")
    yield Case("weights, the softmax of the masked score row [2, 1, -inf, -inf] (4 numbers, each within 1e-3)",
               reads("weights"), judge)


def _flag(x):
    """An entry of a mask written by hand as a bool: True/False or 1/0, else None."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 or isinstance(x, np.ndarray) and x.size == 1:
        x = x.item()
    if isinstance(x, bool):
        return x
    if isinstance(x, (int, float)) and x in (0, 1):
        return bool(x)
    return None


def ex2_causal_by_hand(seed: int):
    n = 4
    ref = [[j <= i for j in range(n)] for i in range(n)]

    def judge(got):
        rows = got.tolist() if isinstance(got, (torch.Tensor, np.ndarray)) and got.ndim == 2 else got
        if not isinstance(rows, (list, tuple)) or not all(isinstance(r, (list, tuple)) for r in rows):
            return f"expected a nested list of {n} rows of {n} entries, got {describe(got)}"
        if len(rows) != n or any(len(r) != n for r in rows):
            return f"expected {n} rows of {n} entries each"
        flags = [[_flag(x) for x in r] for r in rows]
        if any(f is None for r in flags for f in r):
            return "write each entry as True/False (or 1/0)"
        wrong = sum(f != w for fr, wr in zip(flags, ref, strict=True) for f, w in zip(fr, wr, strict=True))
        # neither which entries are wrong nor how many: the first would give the answer away, and the reply chooses both
        return "entries are wrong (exact)" if wrong else None
    yield Case("allowed, the 4 x 4 causal mask of a decoder written by hand (True = may attend, exact)",
               reads("allowed"), judge)


# --------------------------------------------------------------------------- exercise 3

def ex3_teacher_forcing(seed: int):
    g = generator(seed, "ex3_teacher_forcing")
    for b, t, dtype in [(1, 2, torch.int64), (3, 7, torch.int32), (4, 12, torch.int64)]:
        tgt = torch.randint(0, 50, (b, t), generator=g, dtype=dtype)
        dec_in, labels = tgt[:, :-1].clone(), tgt[:, 1:].clone()

        def judge(reply, tgt=tgt, dec_in=dec_in, labels=labels):
            out, _args = fields(reply, "out", "args")
            if _pair(out):
                return _pair(out)
            dims = ["batch", "seq"]
            return first(_named("decoder input", tensor(out[0], dec_in, dims=dims, exact=True, promised="tgt")),
                         _named("labels", tensor(out[1], labels, dims=dims, exact=True, promised="tgt")))
        yield Case(f"teacher_forcing(tgt) with random token ids tgt of shape {(b, t)} and dtype {tgt.dtype}: "
                   f"(decoder_input, labels), both {(b, t - 1)} in tgt's dtype (exact)",
                   calls("teacher_forcing", tgt), judge)


# --------------------------------------------------------------------------- exercises 4 and 5

def _mask_case(what, name, ids, pad, ref, dims):
    return Case(what, calls(name, ids, pad), returns(ref, dims))


def ex4_padding_mask(seed: int):
    g = generator(seed, "ex4_padding_mask")
    for b, t, pad in [(1, 1, 0), (3, 6, 0), (4, 9, 7)]:
        ids = torch.randint(0, 10, (b, t), generator=g)
        ref = (ids != pad)[:, None, :]
        yield _mask_case(f"padding_mask(ids, {pad}) with random ids of shape {(b, t)}: a ({b}, 1, {t}) bool "
                         f"tensor, True at the real tokens (exact)", "padding_mask", ids, pad, ref,
                         ["batch", "query", "key"])


def ex5_causal_padding_mask(seed: int):
    g = generator(seed, "ex5_causal_padding_mask")
    for b, t, pad in [(1, 1, 0), (2, 5, 0), (3, 8, 4)]:
        ids = torch.randint(0, 6, (b, t), generator=g)
        causal = torch.arange(t)[None, :] <= torch.arange(t)[:, None]  # [q, j]: key j not after query q
        ref = causal[None, :, :] & (ids != pad)[:, None, :]  # ... and key j not padding
        yield _mask_case(f"causal_padding_mask(ids, {pad}) with random ids of shape {(b, t)}: a ({b}, {t}, {t}) "
                         f"bool tensor, True where the key is not in the future and not padding (exact)",
                         "causal_padding_mask", ids, pad, ref, ["batch", "T_q", "T_k"])


# --------------------------------------------------------------------------- exercise 6

def ex6_masked_attention(seed: int):
    g = generator(seed, "ex6_masked_attention")
    for shape_q, shape_k, dv in [((2, 4, 8), (2, 6, 8), 5), ((2, 3, 5, 4), (2, 3, 5, 4), 4),
                                 ((1, 1, 2), (1, 1, 2), 1)]:
        q = torch.randn(*shape_q, generator=g).requires_grad_()
        k = torch.randn(*shape_k, generator=g).requires_grad_()
        v = torch.randn(*shape_k[:-1], dv, generator=g).requires_grad_()
        mask = torch.rand(*shape_q[:-1], shape_k[-2], generator=g) > 0.6
        mask[..., 0, :] = False  # the first query of every sequence sees nothing
        empty = ~mask.any(dim=-1, keepdim=True)
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | empty).masked_fill(empty, 0.0)
        weights = torch.randn(ref.shape, generator=g)
        (ref * weights).sum().backward()
        ref_grads = [t.grad.clone() for t in (q, k, v)]
        ref = ref.detach()
        inputs = [q.detach(), k.detach(), v.detach(), mask]
        dims = ["batch", "heads", "T_q", "d_v"] if len(shape_q) == 4 else ["batch", "T_q", "d_v"]
        shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} and a random mask in which the " \
                 f"first query of every sequence may attend to no key"
        request = Request("a07.masked_attention", {"q": inputs[0], "k": inputs[1], "v": inputs[2], "mask": mask,
                                                   "grad_weights": weights})

        def output(reply, ref=ref, dims=dims):
            out, _grads = fields(reply, "out", "grads")
            return tensor(out, ref, dims=dims)

        def gradients(reply, ref=ref, dims=dims, ref_grads=ref_grads):
            out, grads = fields(reply, "out", "grads")
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(ref.shape):
                return tensor(out, ref, dims=dims)  # no backward pass through an output of the wrong shape
            if grads is None:
                return "the output does not depend on q, k and v through autograd; compute it with torch operations"
            for name, got, want in zip("qkv", items(grads, 3, "the gradients"), ref_grads, strict=True):
                if got is None:
                    return f"no gradient reached {name}: compute the output from q, k and v with torch operations"
                problem = tensor(got, want, **GRAD_TOL)
                if problem:
                    return f"the gradient of {name}: {problem}"
            return None
        yield Case(f"masked_attention with {shapes}: the output (zero where a query sees no key)", request, output)
        yield Case(f"masked_attention with {shapes}: q, k, v and mask unchanged", calls("masked_attention", *inputs),
                   kept(inputs, ["q", "k", "v", "mask"], ("out", "args")))
        yield Case(f"masked_attention with {shapes}: the gradients of q, k and v in a backward pass (finite, and "
                   f"those of PyTorch's attention)", request, gradients)
