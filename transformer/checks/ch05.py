"""Checks for the exercises of chapter 5: multi-head attention."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ..multihead import merge_heads, split_heads
from .core import call, compare, fail, report, require_keys

__all__ = ["check_head_arithmetic", "check_split_heads", "check_merge_heads", "check_multihead_attention"]

# Exercise 1: BERT-base sizes, a batch of 4 sentences of 9 tokens.
_D_MODEL, _HEADS, _BATCH, _SEQ = 768, 12, 4, 9
HEAD_ARITHMETIC_KEYS = ("d_h", "n_params", "Q", "Q_heads", "weights", "head_outputs", "concat", "output")


def _head_arithmetic() -> dict:
    d, h, b, t = _D_MODEL, _HEADS, _BATCH, _SEQ
    d_h = d // h
    return {"d_h": d_h, "n_params": 4 * d * d + 4 * d, "Q": (b, t, d), "Q_heads": (b, h, t, d_h),
            "weights": (b, h, t, t), "head_outputs": (b, h, t, d_h), "concat": (b, t, d), "output": (b, t, d)}


def _shape_mistakes(key: str) -> dict[tuple, str]:
    d, h, b, t = _D_MODEL, _HEADS, _BATCH, _SEQ
    d_h = d // h
    before_transpose = "this is the layout after .view, before .transpose(1, 2) moves the heads in front of seq."
    return {
        "Q": {(b, t, d_h): "W^Q is one d_model x d_model matrix for all heads; the split into heads comes after it.",
              (b, h, t, d_h): "Q is computed before the split into heads: one d_model-wide vector per token."},
        "Q_heads": {(b, t, h, d_h): before_transpose,
                    (b, h, t, d): "each head sees d_h = d_model / h features of a token, not all d_model of them."},
        "weights": {(b, h, t, d_h): "the weights compare every query with every key: the last two sizes are "
                                    "(T_q, T_k), here both the sequence length.",
                    (b, t, t): "every head has its own attention weights, so there is a heads dimension.",
                    (b, t, h, t): "the heads dimension comes right after batch."},
        "head_outputs": {(b, h, t, t): "these are the weights; each head's output is weights @ V, one d_h-vector "
                                       "per token.",
                         (b, t, h, d_h): before_transpose},
        "concat": {(b, t, h, d_h): "concatenating glues each token's h vectors of size d_h into one vector of "
                                   "size h * d_h.",
                   (b, h, t, d_h): "these are still the separate heads; concatenate them.",
                   (b, t, d_h): "concatenate the heads, don't average them."},
        "output": {(b, t, d_h): "W^O maps the concatenation (h * d_h = d_model) back to d_model.",
                   (b, h, t, d_h): "the output is one d_model vector per token, after concatenation and W^O."},
    }[key]


def check_head_arithmetic(answer) -> None:
    """A dict with ``d_h``, ``n_params`` and the shape of every step (exercise 1 of chapter 5)."""
    __tracebackhide__ = True
    require_keys("head arithmetic", answer, HEAD_ARITHMETIC_KEYS)
    expected = _head_arithmetic()
    d, h = _D_MODEL, _HEADS
    problems: list[str] = []
    number_mistakes = {
        "d_h": {
            d * h: "d_h is d_model divided by the number of heads, not multiplied.",
            h: "that is the number of heads; d_h is the size of each head's vectors.",
            d // 8: "this layer has 12 heads (the 2017 base model had 8).",
        },
        "n_params": {
            4 * d * d: "you left out the biases: each of the four nn.Linear layers also has d_model biases.",
            3 * d * d + 3 * d: "you left out the output projection W^O.",
            h * (4 * d * d + 4 * d): "the heads do not add parameters: they split the same four matrices "
                                     "between them.",
            4 * d * (d // h) + 4 * (d // h): "W^Q, W^K, W^V and W^O are each d_model x d_model in total: "
                                              "h heads of d_h columns each.",
            4 * d * d + d: "each of the four linear layers has its own bias vector of size d_model.",
        },
    }
    for key in ("d_h", "n_params"):
        got = answer[key]
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            problems.append(f"answer['{key}']: expected a number, got {type(got).__name__}")
        elif got != expected[key]:
            problems.append(f"answer['{key}'] is wrong")
            if got in number_mistakes[key]:
                problems.append(f"Hint: {number_mistakes[key][got]}")
    for key in HEAD_ARITHMETIC_KEYS[2:]:
        got, want = answer[key], expected[key]
        try:
            got_t = tuple(int(s) for s in got)
        except (TypeError, ValueError):
            problems.append(f"answer['{key}']: expected a shape as a tuple of ints, e.g. (2, 3), "
                            f"got {type(got).__name__}")
            continue
        if got_t == want:
            continue
        if len(got_t) != len(want):
            problems.append(f"answer['{key}']: expected {len(want)} dimensions, got {len(got_t)}")
        else:
            wrong = [str(i) for i, (a, b) in enumerate(zip(got_t, want)) if a != b]
            problems.append(f"answer['{key}']: the size of dimension {', '.join(wrong)} is wrong")
        hint = _shape_mistakes(key).get(got_t)
        if hint:
            problems.append(f"Hint: {hint}")
    report("head arithmetic", problems)


# --------------------------------------------------------------------------- split and merge

def _split_mistakes(x: torch.Tensor, n_heads: int) -> dict[str, torch.Tensor]:
    b, t, d = x.shape
    d_h = d // n_heads
    return {
        "this is (batch, seq, heads, d_h): move the heads in front of seq with .transpose(1, 2).":
            x.reshape(b, t, n_heads, d_h),
        "reshaping straight to (batch, heads, seq, d_h) cuts the sequence into pieces instead of each token's "
        "features: reshape to (batch, seq, heads, d_h) first, then transpose.": x.reshape(b, n_heads, t, d_h),
        "head i must take the neighbouring features i*d_h ... (i+1)*d_h - 1 of each token, not every h-th "
        "feature: reshape to (batch, seq, heads, d_h), not (batch, seq, d_h, heads).":
            x.reshape(b, t, d_h, n_heads).permute(0, 3, 1, 2),
        "heads and d_h are swapped: the last dimension holds the d_h features of one head.":
            x.reshape(b, t, d_h, n_heads).transpose(1, 2),
    }


def check_split_heads(fn: Callable) -> None:
    """``fn(x, n_heads)``: ``(batch, seq, d_model) -> (batch, heads, seq, d_h)``, head i = features i*d_h:(i+1)*d_h."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 12, generator=g)
    for n_heads in (3, 4, 1):
        name = f"split_heads(x, n_heads={n_heads})"
        got = call(fn, (x.clone(), n_heads), name)
        problems = compare(got, split_heads(x, n_heads), ("batch", "heads", "seq", "d_h"), atol=0.0, rtol=0.0,
                           mistakes=_split_mistakes(x, n_heads), what=f"{name} with x of shape (2, 5, 12)")
        if problems:
            report(name, problems)
    report("split_heads", [])


def _merge_mistakes(x: torch.Tensor) -> dict[str, torch.Tensor]:
    b, h, t, d_h = x.shape
    return {
        "reshaping without first moving the heads back behind seq mixes different tokens: "
        "use .transpose(1, 2) before the reshape.": x.reshape(b, t, h * d_h),
        "the features of head i must stay together at positions i*d_h ... (i+1)*d_h - 1: concatenate the "
        "heads, don't interleave them.": x.permute(0, 2, 3, 1).reshape(b, t, h * d_h),
        "this is (batch, seq, heads, d_h): glue each token's heads into one vector of size heads * d_h.":
            x.transpose(1, 2),
        "averaging the heads throws their differences away: concatenate them.": x.mean(dim=1),
        "adding the heads throws their differences away: concatenate them.": x.sum(dim=1),
    }


def check_merge_heads(fn: Callable) -> None:
    """``fn(x)``: ``(batch, heads, seq, d_h) -> (batch, seq, heads * d_h)``, the inverse of ``split_heads``."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 4, generator=g)  # (batch, heads, seq, d_h)
    got = call(fn, (x.clone(),), "merge_heads(x)")
    problems = compare(got, merge_heads(x), ("batch", "seq", "d_model"), atol=0.0, rtol=0.0,
                       mistakes=_merge_mistakes(x), what="merge_heads(x) with x of shape (2, 3, 5, 4)")
    if problems:
        report("merge_heads", problems)
    # Layout: head h filled with the number h must land in features h*d_h:(h+1)*d_h.
    labelled = torch.arange(4.0)[None, :, None, None].expand(1, 4, 3, 2).contiguous()  # (1, 4, 3, 2)
    got = call(fn, (labelled,), "merge_heads(x)")
    problems = compare(got, merge_heads(labelled), ("batch", "seq", "d_model"), atol=0.0, rtol=0.0,
                       mistakes=_merge_mistakes(labelled),
                       what="merge_heads of 4 heads, head i filled with the number i")
    if problems:
        report("merge_heads", problems)
    # Round trip: merging what split_heads produced gives back the input.
    y = torch.randn(3, 6, 12, generator=g)
    got = call(fn, (split_heads(y, 4),), "merge_heads(split_heads(x, 4))")
    problems = compare(got, y, ("batch", "seq", "d_model"), atol=0.0, rtol=0.0,
                       what="merge_heads(split_heads(x, 4)), which should give x back")
    report("merge_heads", problems)


# --------------------------------------------------------------------------- the module

def _torch_weights(theirs: nn.MultiheadAttention):
    """``(W, b)`` for Q, K, V and O in nn.Linear layout ``(out, in)``."""
    ws = theirs.in_proj_weight.detach().chunk(3)
    bs = theirs.in_proj_bias.detach().chunk(3)
    return [*zip(ws, bs), (theirs.out_proj.weight.detach(), theirs.out_proj.bias.detach())]


def _mha_variant(theirs: nn.MultiheadAttention, x: torch.Tensor, memory: torch.Tensor | None = None, *,
                 n_heads: int | None = None, scale: str = "d_h", split: str = "contiguous", merge: str = "concat",
                 softmax_dim: int = -1, out_proj: bool = True, kv_source: str = "memory",
                 swap_qk: bool = False) -> torch.Tensor:
    """Multi-head attention written out, with switches that reproduce common mistakes."""
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = _torch_weights(theirs)
    h = theirs.num_heads if n_heads is None else n_heads
    src = x if (memory is None or kv_source == "x") else memory
    q, k, v = x @ wq.T + bq, src @ wk.T + bk, src @ wv.T + bv
    if swap_qk:
        q, k = k, q
    b, t_q, d = q.shape
    d_h = d // h

    def heads(z):
        if split == "strided":
            return z.reshape(z.shape[0], z.shape[1], d_h, h).permute(0, 3, 1, 2)
        return z.reshape(z.shape[0], z.shape[1], h, d_h).transpose(1, 2)  # (batch, heads, seq, d_h)

    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(-2, -1)
    scores = scores / {"d_h": math.sqrt(d_h), "d_model": math.sqrt(d), "none": 1.0}[scale]
    out = scores.softmax(dim=softmax_dim) @ v  # (batch, heads, T_q, d_h)
    if merge == "no_transpose":
        out = out.reshape(b, t_q, d)
    elif merge == "strided":
        out = out.permute(0, 2, 3, 1).reshape(b, t_q, d)
    else:
        out = out.transpose(1, 2).reshape(b, t_q, d)
    return out @ wo.T + bo if out_proj else out


def _mha_mistakes(theirs, x, memory=None) -> dict[str, torch.Tensor]:
    variants = {
        "forgot to divide the scores by sqrt(d_h).": dict(scale="none"),
        "divided by sqrt(d_model); each head's scores are dot products of d_h numbers, so divide by sqrt(d_h).":
            dict(scale="d_model"),
        "this is one head of width d_model: split the projected queries, keys and values into n_heads heads.":
            dict(n_heads=1),
        "the output projection W^O (self.w_o) is missing after the concatenation.": dict(out_proj=False),
        "the heads were merged without moving them back behind seq (.transpose(1, 2) before the reshape).":
            dict(merge="no_transpose"),
        "head i must take the neighbouring features i*d_h ... (i+1)*d_h - 1 (view as (batch, seq, heads, d_h)).":
            dict(split="strided"),
        "the softmax runs over the wrong axis: each query's weights over the keys (the last axis) sum to 1.":
            dict(softmax_dim=-2),
        "queries and keys are swapped: scores = Q K^T with queries from w_q.": dict(swap_qk=True),
    }
    if memory is not None:
        variants["in cross-attention the keys and values come from memory, not from x."] = dict(kv_source="x")
    out = {}
    for text, kw in variants.items():
        try:
            out[text] = _mha_variant(theirs, x, memory, **kw)
        except RuntimeError:  # a mistake that cannot even run on these shapes needs no hint
            pass
    return out


def _module_parts(module, d_model: int) -> list[str]:
    problems = []
    for name in ("w_q", "w_k", "w_v", "w_o"):
        lin = getattr(module, name, None)
        if lin is None:
            problems.append(f"self.{name} is missing: expected an nn.Linear(d_model, d_model) of that name")
        elif not isinstance(lin, nn.Linear):
            problems.append(f"self.{name}: expected an nn.Linear(d_model, d_model), got {type(lin).__name__}")
        elif tuple(lin.weight.shape) != (d_model, d_model) or lin.bias is None:
            problems.append(f"self.{name}: expected nn.Linear({d_model}, {d_model}) with a bias, got weight "
                            f"{tuple(lin.weight.shape)}{' without a bias' if lin.bias is None else ''}")
    return problems


def _copy_from_torch(module, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        for name, (w, b) in zip(("w_q", "w_k", "w_v", "w_o"), _torch_weights(theirs)):
            getattr(module, name).weight.copy_(w)
            getattr(module, name).bias.copy_(b)


def torch_reference(d_model: int, n_heads: int, seed: int) -> nn.MultiheadAttention:
    """A seeded ``nn.MultiheadAttention(batch_first=True)`` with random (non-zero) biases."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        theirs.in_proj_bias.copy_(0.5 * torch.randn(3 * d_model, generator=g))
        theirs.out_proj.bias.copy_(0.5 * torch.randn(d_model, generator=g))
    return theirs.eval()


def check_multihead_attention(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, n_heads)`` with ``w_q, w_k, w_v, w_o``; ``forward(x, memory=None)`` equals
    ``nn.MultiheadAttention(batch_first=True)`` with the same weights (atol 1e-5)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    cases = [
        ("self-attention, d_model=16, n_heads=4", 16, 4, torch.randn(2, 5, 16, generator=g), None),
        ("cross-attention, d_model=16, n_heads=4", 16, 4, torch.randn(2, 3, 16, generator=g),
         torch.randn(2, 7, 16, generator=g)),
        ("self-attention, d_model=12, n_heads=2", 12, 2, torch.randn(3, 4, 12, generator=g), None),
    ]
    for i, (case, d_model, n_heads, x, memory) in enumerate(cases):
        module = call(cls, (d_model, n_heads), f"MultiHeadAttention({d_model}, {n_heads})")
        problems = _module_parts(module, d_model)
        if problems:
            report(f"MultiHeadAttention({d_model}, {n_heads})", problems)
        n_params = sum(p.numel() for p in module.parameters())
        if n_params != 4 * d_model**2 + 4 * d_model:
            report(f"MultiHeadAttention({d_model}, {n_heads})",
                   [f"expected 4 d_model^2 + 4 d_model parameters (four nn.Linear layers), got {n_params}"])
        theirs = torch_reference(d_model, n_heads, seed + 10 * i)
        _copy_from_torch(module, theirs)
        args = (x,) if memory is None else (x, memory)
        got = call(module, args, f"MultiHeadAttention ({case})")
        if isinstance(got, tuple):
            fail(f"✗ MultiHeadAttention ({case})", ["returned a tuple; return only the output tensor"])
        with torch.no_grad():
            expected = theirs(x, x, x, need_weights=False)[0] if memory is None else \
                theirs(x, memory, memory, need_weights=False)[0]
            mistakes = _mha_mistakes(theirs, x, memory)
        problems = compare(got, expected, ("batch", "T_q", "d_model"), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                           what=f"output ({case})")
        if problems:
            report(f"MultiHeadAttention ({case})", problems)
    report("MultiHeadAttention", [])
