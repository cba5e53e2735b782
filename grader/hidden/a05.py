"""Hidden tests of assignment 05, multi-head attention (references: PyTorch's nn.MultiheadAttention and slicing).

Exercise 1 works out BERT-base's sizes by hand (d_model 768, 12 heads, a (4, 9, 768) batch): its questions are
fixed, not drawn from the seed. Every other input, PyTorch's weights included, comes from the run's seed. The layer's
outputs with those weights copied in are scored; the names and sizes of its parameters are only reported (the
kernel alone sees them).
"""

from __future__ import annotations

import torch

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import as_int, describe, entry, fields, returns, shape, tensor

ASSIGNMENT = "05_multi_head_attention"
FIXED = {"ex1_head_arithmetic"}  # BERT-base's sizes, worked by hand
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_split_heads": Forbid("split_heads", ("transformer",)),
    "ex3_merge_heads": Forbid("merge_heads", ("transformer",)),
    "ex4_multihead_attention": Forbid("MultiHeadAttention", (
        "torch.nn.MultiheadAttention",
        "torch.nn.functional.scaled_dot_product_attention",
        "transformer",
    )),
}
PROJECTIONS = ("w_q", "w_k", "w_v", "w_o")


# --------------------------------------------------------------------------- exercise 1

def _size(value, want) -> str | None:
    """``value`` must be the whole number ``want`` (an int) or the shape ``want``, a tuple of ints."""
    if not isinstance(want, int):
        return shape(value, want)
    n = as_int(value)
    if n is None:
        return f"expected a whole number, got {describe(value)}"
    return None if n == want else "the number is wrong"


def ex1_head_arithmetic(seed: int):
    d, h, b, t = 768, 12, 4, 9
    d_h = d // h
    with torch.device("meta"):  # count the parameters of PyTorch's own layer, without allocating it
        n_params = sum(p.numel() for p in torch.nn.MultiheadAttention(d, h, batch_first=True).parameters())
    want = {"d_h": (d_h, "the size of each head's queries, keys and values"),
            "n_params": (n_params, "the number of parameters (weights and biases of W^Q, W^K, W^V and W^O)"),
            "Q": ((b, t, d), "the shape of Q = x W^Q, before the split into heads"),
            "Q_heads": ((b, h, t, d_h), "the shape of Q after the split into heads"),
            "weights": ((b, h, t, t), "the shape of the attention weights of all heads"),
            "head_outputs": ((b, h, t, d_h), "the shape of the heads' outputs before the merge"),
            "concat": ((b, t, d), "the shape after concatenating the heads"),
            "output": ((b, t, d), "the shape of the layer's output, after W^O")}
    for key, (ref, text) in want.items():
        yield Case(f"sizes[{key!r}], {text}, for BERT-base (d_model 768, 12 heads) on a (4, 9, 768) batch",
                   reads("sizes"), entry(key, lambda got, ref=ref: _size(got, ref), "sizes"))


# --------------------------------------------------------------------------- exercises 2 and 3

def _split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Head i holds the neighbouring features i*d_h ... (i+1)*d_h - 1: written out with slices."""
    d_h = x.shape[-1] // n_heads
    return torch.stack([x[:, :, i * d_h:(i + 1) * d_h] for i in range(n_heads)], dim=1)


def ex2_split_heads(seed: int):
    g = generator(seed, "ex2_split_heads")
    for b, t, h, d_h in [(1, 1, 1, 1), (2, 7, 4, 3), (3, 5, 8, 2), (1, 4, 2, 6)]:
        x = torch.randn(b, t, h * d_h, generator=g)
        yield Case(f"split_heads(x, {h}) with x of shape {tuple(x.shape)}: head i holds features "
                   f"i*d_h ... (i+1)*d_h - 1 (exact)", calls("split_heads", x, h),
                   returns(_split(x, h), ["batch", "heads", "seq", "d_h"], exact=True))


def ex3_merge_heads(seed: int):
    g = generator(seed, "ex3_merge_heads")
    for b, h, t, d_h in [(1, 1, 1, 1), (2, 4, 7, 3), (3, 8, 5, 2), (1, 2, 4, 6)]:
        x = torch.randn(b, h, t, d_h, generator=g)
        ref = torch.cat([x[:, i] for i in range(h)], dim=-1)
        dims = ["batch", "seq", "d_model"]
        yield Case(f"merge_heads(x) with x of shape {tuple(x.shape)}: the heads concatenated in head order (exact)",
                   calls("merge_heads", x), returns(ref, dims, exact=True))
        y = torch.randn(b, t, h * d_h, generator=g)
        split = _split(y, h)
        yield Case(f"merge_heads(split_heads(y, {h})) with y of shape {tuple(y.shape)} gives y back (exact)",
                   calls("merge_heads", split), returns(y, dims, exact=True))


# --------------------------------------------------------------------------- exercise 4

def _structure(reply, d: int, n_ref: int) -> str | None:
    """Unscored: the four projections nn.Linear(d_model, d_model) with a bias, and no other parameters."""
    params, n_params, _out = fields(reply, "params", "n_params", "out")
    if not isinstance(params, dict):
        return f"expected the parameters' shapes by name, got {describe(params)}"
    for lin in PROJECTIONS:
        if f"{lin}.weight" not in params:
            return (f"self.{lin} is missing: expected four nn.Linear(d_model, d_model) with a bias, named "
                    f"w_q, w_k, w_v and w_o")
        if params[f"{lin}.weight"] != [d, d]:
            return f"self.{lin}: expected nn.Linear({d}, {d}); its weight has another shape"
        if f"{lin}.bias" not in params:
            return f"self.{lin} has no bias: each projection is an nn.Linear with a bias"
        if params[f"{lin}.bias"] != [d]:
            return f"self.{lin}.bias: expected shape ({d},); it has another shape"
    if n_params != n_ref:
        return ("expected only the parameters of four nn.Linear(d_model, d_model) layers with biases (as many as "
                "nn.MultiheadAttention(d_model, n_heads) has)")
    return None


def _mha_judge(ref: torch.Tensor):
    """Scored: the output with PyTorch's weights copied in."""
    def judge(reply):
        _params, _n, out = fields(reply, "params", "n_params", "out")
        if out is None:
            return ("no output: expected w_q, w_k, w_v and w_o, four nn.Linear(d_model, d_model) with a bias (the "
                    "test copies PyTorch's weights into them)")
        return tensor(out, ref, dims=["batch", "T_q", "d_model"])
    return judge


def _pytorch_layer(g, d: int, h: int) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention(d, h) with weights and biases drawn from ``g``."""
    with torch.random.fork_rng(devices=[]):  # building it draws PyTorch's own initial weights: leave no trace
        theirs = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        for p in (theirs.in_proj_weight, theirs.out_proj.weight):
            p.copy_((2 * torch.rand(p.shape, generator=g) - 1) / d ** 0.5)
        for p in (theirs.in_proj_bias, theirs.out_proj.bias):
            p.copy_(torch.randn(p.shape, generator=g))
    return theirs


def ex4_multihead_attention(seed: int):
    g = generator(seed, "ex4_multihead_attention")
    for d, h, t_q, t_k in [(8, 1, 3, 3), (24, 6, 4, 9), (32, 8, 6, 2)]:
        theirs = _pytorch_layer(g, d, h)
        x = torch.randn(2, t_q, d, generator=g)
        memory = torch.randn(2, t_k, d, generator=g)
        ws, bs = theirs.in_proj_weight.detach().chunk(3), theirs.in_proj_bias.detach().chunk(3)
        weights = {}
        for lin, w, b in zip(PROJECTIONS, (*ws, theirs.out_proj.weight.detach()),
                             (*bs, theirs.out_proj.bias.detach()), strict=True):
            weights[f"{lin}.weight"], weights[f"{lin}.bias"] = w.clone(), b.clone()
        n_ref = sum(p.numel() for p in theirs.parameters())
        with torch.no_grad():
            ref_self = theirs(x, x, x, need_weights=False)[0]
            ref_cross = theirs(x, memory, memory, need_weights=False)[0]
        request = Request("a05.multihead", {"d_model": d, "n_heads": h, "weights": weights, "x": x})
        yield Case(f"MultiHeadAttention({d}, {h}) with random weights of PyTorch's layer, self-attention on x of "
                   f"shape {tuple(x.shape)}", request, _mha_judge(ref_self))
        yield Case(f"MultiHeadAttention({d}, {h}) with random weights of PyTorch's layer, cross-attention from x of "
                   f"shape {tuple(x.shape)} to memory of shape {tuple(memory.shape)}",
                   Request("a05.multihead", {"d_model": d, "n_heads": h, "weights": weights, "x": x,
                                             "memory": memory}),
                   _mha_judge(ref_cross))
        yield Case(f"MultiHeadAttention({d}, {h}) has four nn.Linear({d}, {d}) with biases, w_q, w_k, w_v and w_o, "
                   "and no other parameters", request, lambda reply, d=d, n=n_ref: _structure(reply, d, n),
                   scored=False)
