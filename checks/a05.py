"""Checks for the exercises of chapter 5: multi-head attention."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from transformer.multihead import merge_heads, split_heads

from . import references
from .answers import as_ints, require_keys
from .core import Mistake, as_number, call, compare, fail, outputs, report
from .earlier import builds_on
from .mistakes.a05 import MERGE_HEADS_MISTAKES, MHA_MISTAKES, SPLIT_HEADS_MISTAKES

__all__ = ["check_head_arithmetic", "check_split_heads", "check_merge_heads", "check_multihead_attention"]

# Exercise 1: BERT-base sizes, a batch of 4 sentences of 9 tokens.
_D_MODEL, _HEADS, _BATCH, _SEQ = 768, 12, 4, 9
HEAD_ARITHMETIC_KEYS = ("d_h", "n_params", "Q", "Q_heads", "weights", "head_outputs", "concat", "output")


def _head_arithmetic() -> dict:
    d, h, b, t = _D_MODEL, _HEADS, _BATCH, _SEQ
    d_h = d // h
    return {"d_h": d_h, "n_params": 4 * d * d + 4 * d, "Q": (b, t, d), "Q_heads": (b, h, t, d_h),
            "weights": (b, h, t, t), "head_outputs": (b, h, t, d_h), "concat": (b, t, d), "output": (b, t, d)}


def _head_arithmetic_mistakes() -> list[Mistake]:
    d, h, b, t = _D_MODEL, _HEADS, _BATCH, _SEQ
    d_h = d // h
    before_transpose = "this is the layout after .view, before .transpose(1, 2) moves the heads in front of seq."
    return [
        # numbers
        Mistake("multiplied", "d_h is d_model divided by the number of heads, not multiplied.", d * h, "d_h"),
        Mistake("the number of heads", "that is the number of heads; d_h is the size of each head's vectors.", h,
                "d_h"),
        Mistake("8 heads", "this layer has 12 heads (the 2017 base model had 8).", d // 8, "d_h"),
        Mistake("no biases", "you left out the biases: each of the four nn.Linear layers also has d_model biases.",
                4 * d * d, "n_params"),
        Mistake("no W^O", "you left out the output projection W^O.", 3 * d * d + 3 * d, "n_params"),
        Mistake("per head", "the heads do not add parameters: they split the same four matrices between them.",
                h * (4 * d * d + 4 * d), "n_params"),
        Mistake("one head's share", "W^Q, W^K, W^V and W^O are each d_model x d_model in total: h heads of d_h columns "
                "each.", 4 * d * (d // h) + 4 * (d // h), "n_params"),
        Mistake("one bias vector", "each of the four linear layers has its own bias vector of size d_model.",
                4 * d * d + d, "n_params"),
        # shapes
        Mistake("per head before the split", "W^Q is one d_model x d_model matrix for all heads; the split into heads "
                "comes after it.", (b, t, d_h), "Q"),
        Mistake("already split", "Q is computed before the split into heads: one d_model-wide vector per token.",
                (b, h, t, d_h), "Q"),
        Mistake("before the transpose", before_transpose, (b, t, h, d_h), "Q_heads"),
        Mistake("every feature in every head", "each head sees d_h = d_model / h features of a token, not all d_model "
                "of them.", (b, h, t, d), "Q_heads"),
        Mistake("d_h for T_k", "the weights compare every query with every key: the last two sizes are (T_q, T_k), "
                "here both the sequence length.", (b, h, t, d_h), "weights"),
        Mistake("no heads dimension", "every head has its own attention weights, so there is a heads dimension.",
                (b, t, t), "weights"),
        Mistake("heads after seq", "the heads dimension comes right after batch.", (b, t, h, t), "weights"),
        Mistake("the weights", "these are the weights; each head's output is weights @ V, one d_h-vector per token.",
                (b, h, t, t), "head_outputs"),
        Mistake("before the transpose", before_transpose, (b, t, h, d_h), "head_outputs"),
        Mistake("not glued", "concatenating glues each token's h vectors of size d_h into one vector of size h * d_h.",
                (b, t, h, d_h), "concat"),
        Mistake("still separate", "these are still the separate heads; concatenate them.", (b, h, t, d_h), "concat"),
        Mistake("averaged", "concatenate the heads, don't average them.", (b, t, d_h), "concat"),
        Mistake("no W^O", "W^O maps the concatenation (h * d_h = d_model) back to d_model.", (b, t, d_h), "output"),
        Mistake("separate heads", "the output is one d_model vector per token, after concatenation and W^O.",
                (b, h, t, d_h), "output"),
    ]


HEAD_ARITHMETIC_MISTAKES = _head_arithmetic_mistakes()


def _hint(part: str, wrong) -> str | None:
    """The hint of the head-arithmetic mistake whose wrong ``part`` equals ``wrong``, if any."""
    return next((m.hint for m in HEAD_ARITHMETIC_MISTAKES if m.part == part and m.wrong == wrong), None)


def check_head_arithmetic(answer) -> None:
    """A dict with ``d_h``, ``n_params`` and the shape of every step (exercise 1 of chapter 5)."""
    __tracebackhide__ = True
    require_keys("head arithmetic", answer, HEAD_ARITHMETIC_KEYS)
    expected = _head_arithmetic()
    problems: list[str] = []
    for key in ("d_h", "n_params"):
        got = as_number(answer[key])
        if got is None:
            problems.append(f"answer['{key}']: expected a number, got {type(answer[key]).__name__}")
        elif got != expected[key]:
            problems.append(f"answer['{key}'] is wrong")
            hint = _hint(key, got)
            if hint:
                problems.append(f"Hint: {hint}")
    for key in HEAD_ARITHMETIC_KEYS[2:]:
        got, want = answer[key], expected[key]
        got_t = as_ints(got)
        if got_t is None:
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
        hint = _hint(key, got_t)
        if hint:
            problems.append(f"Hint: {hint}")
    report("head arithmetic", problems)


# --------------------------------------------------------------------------- split and merge


def check_split_heads(fn: Callable) -> None:
    """``fn(x, n_heads)``: ``(batch, seq, d_model) -> (batch, heads, seq, d_h)``, head i = features i*d_h:(i+1)*d_h."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 12, generator=g)
    for n_heads in (3, 4, 1):
        name = f"split_heads(x, n_heads={n_heads})"
        got = call(fn, (x.clone(), n_heads), name)
        problems = compare(got, split_heads(x, n_heads), ("batch", "heads", "seq", "d_h"), atol=0.0, rtol=0.0,
                           mistakes=outputs(SPLIT_HEADS_MISTAKES, x, n_heads),
                           what=f"{name} with x of shape (2, 5, 12)")
        if problems:
            report(name, problems)
    report("split_heads", [])


def check_merge_heads(fn: Callable) -> None:
    """``fn(x)``: ``(batch, heads, seq, d_h) -> (batch, seq, heads * d_h)``, the inverse of ``split_heads``."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 4, generator=g)  # (batch, heads, seq, d_h)
    got = call(fn, (x.clone(),), "merge_heads(x)")
    problems = compare(got, merge_heads(x), ("batch", "seq", "d_model"), atol=0.0, rtol=0.0,
                       mistakes=outputs(MERGE_HEADS_MISTAKES, x), what="merge_heads(x) with x of shape (2, 3, 5, 4)")
    if problems:
        report("merge_heads", problems)
    # Layout: head h filled with the number h must land in features h*d_h:(h+1)*d_h.
    labelled = torch.arange(4.0)[None, :, None, None].expand(1, 4, 3, 2).contiguous()  # (1, 4, 3, 2)
    got = call(fn, (labelled,), "merge_heads(x)")
    problems = compare(got, merge_heads(labelled), ("batch", "seq", "d_model"), atol=0.0, rtol=0.0,
                       mistakes=outputs(MERGE_HEADS_MISTAKES, labelled),
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


def _run(cls, theirs: nn.MultiheadAttention, args: tuple) -> torch.Tensor:
    """Build ``cls(d_model, n_heads)``, load PyTorch's weights into it, and call it on ``args``."""
    module = cls(theirs.embed_dim, theirs.num_heads)
    _copy_from_torch(module, theirs)
    return module(*args)


@builds_on(("split_heads", "exercise 2"), ("merge_heads", "exercise 3"))
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
        theirs = references.multihead_attention(d_model, n_heads, seed + 10 * i)
        _copy_from_torch(module, theirs)
        args = (x,) if memory is None else (x, memory)
        got = call(module, args, f"MultiHeadAttention ({case})")
        if isinstance(got, tuple):
            fail(f"✗ MultiHeadAttention ({case})", ["returned a tuple; return only the output tensor"])
        with torch.no_grad():
            expected = theirs(x, x, x, need_weights=False)[0] if memory is None else \
                theirs(x, memory, memory, need_weights=False)[0]
            mistakes = outputs(MHA_MISTAKES, theirs, args, run=_run)
        problems = compare(got, expected, ("batch", "T_q", "d_model"), mistakes=mistakes,
                           what=f"output ({case})")
        if problems:
            report(f"MultiHeadAttention ({case})", problems)
    report("MultiHeadAttention", [])


MISTAKES = {
    "check_head_arithmetic": HEAD_ARITHMETIC_MISTAKES,
    "check_split_heads": SPLIT_HEADS_MISTAKES,
    "check_merge_heads": MERGE_HEADS_MISTAKES,
    "check_multihead_attention": MHA_MISTAKES,
}
