"""Checks for the exercises of chapter 7: masking."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from transformer.attention import scaled_dot_product_attention
from transformer.masks import causal_mask, causal_padding_mask, fully_masked_rows, padding_mask

from .core import (
    NONFINITE_GUESS,
    Mistake,
    as_tensor,
    backward,
    call,
    call_keeping,
    compare,
    fail,
    hide_positions,
    outputs,
    report,
    values_of,
)
from .earlier import builds_on
from .mistakes.a07 import (
    CAUSAL_PADDING_MISTAKES,
    MASKED_ATTENTION_MISTAKES,
    PADDING_MASK_MISTAKES,
    QUERY_SOFTMAX_HINT,
    TEACHER_FORCING_MISTAKES,
)

__all__ = ["check_masked_row", "check_causal_by_hand", "check_teacher_forcing_shift", "check_padding_mask",
           "check_causal_padding_mask", "check_masked_attention", "MASKED_ROW_SCORES"]

MASKED_ROW_SCORES = (2.0, 1.0, -math.inf, -math.inf)
MASKED_ROW_TOLERANCE = 1e-3
PAD = 0


# ----------------------------------------------------------------------------- exercise 1


def _masked_row_mistakes() -> list[Mistake]:
    scores = torch.tensor(MASKED_ROW_SCORES, dtype=torch.float64)
    kept, blocked = scores[:2], torch.zeros(2, dtype=torch.float64)
    as_zero = scores.nan_to_num(neginf=0.0)  # -inf read as a score of 0
    return [
        Mistake("-inf read as 0", "a blocked key's score is -inf, and e^-inf = 0: it gets weight exactly 0 and is "
                "left out of the sum.", as_zero.softmax(dim=0)),
        Mistake("not normalised", "these are the exponentials e^s; divide each by their sum so that the weights add "
                "up to 1.", torch.cat([kept.exp(), blocked])),
        Mistake("scores over their sum", "the softmax divides the exponentials e^s by their sum, not the scores "
                "themselves.", torch.cat([kept / kept.sum(), blocked])),
        Mistake("zeroed after the softmax", "the blocked weights were set to 0 after a softmax over all four scores "
                "(with -inf read as 0); the remaining weights must still sum to 1.",
                as_zero.softmax(dim=0) * torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=torch.float64)),
        Mistake("shared equally", "the two allowed keys do not share equally: their scores differ.",
                torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)),
    ]


MASKED_ROW_MISTAKES = _masked_row_mistakes()


def check_masked_row(answer) -> None:
    """The softmax of the masked score row ``[2, 1, -inf, -inf]`` (4 numbers), within 1e-3."""
    __tracebackhide__ = True
    expected = torch.tensor(MASKED_ROW_SCORES, dtype=torch.float64).softmax(dim=0)
    report("masked row", compare(answer, expected, ("key",), atol=MASKED_ROW_TOLERANCE, rtol=0.0,
                                 mistakes=values_of(MASKED_ROW_MISTAKES), what="weights of the masked row"))


# ----------------------------------------------------------------------------- exercise 2


_ONES = torch.ones(4, 4, dtype=torch.bool)
CAUSAL_BY_HAND_MISTAKES = [
    Mistake("no diagonal", "off by one: every position may attend to itself, so the diagonal is True.",
            _ONES.tril(-1)),
    Mistake("upper triangle", "this is the upper triangle: query t may see keys 0..t (the past), not the future.",
            _ONES.triu()),
    Mistake("inverted", "inverted: True means 'may attend' in this book (PyTorch's nn.MultiheadAttention uses the "
            "opposite).", ~_ONES.tril()),
]


def check_causal_by_hand(answer) -> None:
    """The 4 x 4 causal mask written by hand (True or 1 = may attend), as a nested list or a tensor."""
    __tracebackhide__ = True
    expected = causal_mask(4)
    t = as_tensor(answer)
    if t is not None and t.shape == expected.shape:
        if not bool(((t == 0) | (t == 1)).all()):
            fail("✗ causal mask by hand", ["write each entry as True/False (or 1/0)"])
        answer = t.bool()
    problems = hide_positions(compare(answer, expected, ("query", "key"), mistakes=values_of(CAUSAL_BY_HAND_MISTAKES),
                                      what="causal mask"))
    report("causal mask by hand", problems)


# ----------------------------------------------------------------------------- exercise 3


def _targets() -> list[tuple[str, torch.Tensor]]:
    """Batches of targets ``<sos> ... <eos> <pad>..`` with <sos> = 1, <eos> = 2, <pad> = 0."""
    one = torch.tensor([[1, 4, 5, 6, 7, 8, 2]])
    two = torch.tensor([[1, 4, 5, 6, 7, 8, 2], [1, 4, 5, 8, 2, 0, 0]])
    three = torch.tensor([[1, 9, 2], [1, 2, 0], [1, 5, 2]])
    return [("one sentence", one), ("a padded batch", two), ("three short targets", three),
            ("int32 ids", two.int())]


def _same(got, wrong: torch.Tensor) -> bool:
    t = as_tensor(got)
    return t is not None and t.shape == wrong.shape and torch.equal(t.double(), wrong.double())


def check_teacher_forcing_shift(fn: Callable) -> None:
    """``fn(tgt)`` returns ``(decoder_input, labels)``, both ``(batch, seq - 1)``."""
    __tracebackhide__ = True
    for case, tgt in _targets():
        got = call(fn, (tgt.clone(),), f"teacher_forcing ({case})")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            fail(f"✗ teacher_forcing ({case})",
                 [f"expected a pair (decoder_input, labels), got {type(got).__name__}"
                  + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "")])
        dec_in, labels = tgt[:, :-1], tgt[:, 1:]
        dims = ("batch", "seq")
        wrong_pairs = outputs(TEACHER_FORCING_MISTAKES, tgt)
        for i, (what, value, expected) in enumerate((("decoder input", got[0], dec_in), ("labels", got[1], labels))):
            # a known mistake is named only when the other half of the pair is the mistake's too
            mistakes = {hint: pair[i] for hint, pair in wrong_pairs.items() if _same(got[1 - i], pair[1 - i])}
            problems = compare(value, expected, dims, dtype=tgt.dtype, mistakes=mistakes, what=what,
                               promised=("tgt", tgt.dtype))
            if problems:
                report(f"teacher_forcing ({case})", problems)
    report("teacher_forcing", [])


# ----------------------------------------------------------------------------- exercise 4


def _id_batches() -> list[tuple[str, torch.Tensor, int]]:
    return [
        ("a padded batch, pad_id=0", torch.tensor([[1, 4, 5, 6, 7, 8], [1, 4, 5, 8, 2, 0], [1, 9, 2, 0, 0, 0]]), 0),
        ("pad_id=3", torch.tensor([[5, 6, 7, 3], [8, 3, 3, 3]]), 3),
        ("no padding", torch.tensor([[1, 4, 5]]), 0),
    ]


def check_padding_mask(fn: Callable) -> None:
    """``fn(ids, pad_id)`` returns the ``(batch, 1, seq)`` bool mask, True at real tokens."""
    __tracebackhide__ = True
    for case, ids, pad_id in _id_batches():
        got = call(fn, (ids.clone(), pad_id), f"padding_mask ({case})")
        problems = compare(got, padding_mask(ids, pad_id), ("batch", "query", "key"), dtype=torch.bool,
                           mistakes=outputs(PADDING_MASK_MISTAKES, ids, pad_id), what=f"padding_mask ({case})")
        if problems:
            report(f"padding_mask ({case})", problems)
    report("padding_mask", [])


# ----------------------------------------------------------------------------- exercise 5


@builds_on(("padding_mask", "exercise 4"))
def check_causal_padding_mask(fn: Callable) -> None:
    """``fn(ids, pad_id)`` returns the ``(batch, seq, seq)`` bool mask of a decoder's self-attention."""
    __tracebackhide__ = True
    for case, ids, pad_id in _id_batches():
        got = call(fn, (ids.clone(), pad_id), f"causal_padding_mask ({case})")
        problems = compare(got, causal_padding_mask(ids, pad_id), ("batch", "T_q", "T_k"), dtype=torch.bool,
                           mistakes=outputs(CAUSAL_PADDING_MISTAKES, ids, pad_id),
                           what=f"causal_padding_mask ({case})")
        if problems:
            report(f"causal_padding_mask ({case})", problems)
    report("causal_padding_mask", [])


# ----------------------------------------------------------------------------- exercise 6


def _masked_attention_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 3, generator=g)
    left_padded = torch.tensor([[1, 4, 5, 6, 2], [0, 0, 1, 4, 2]])  # the second sentence is padded on the left
    with_empty = causal_padding_mask(left_padded, PAD)  # (2, 5, 5): rows 0 and 1 of sentence 2 are empty
    keys_only = padding_mask(torch.tensor([[1, 4, 5, 0, 0], [1, 4, 5, 6, 2]]), PAD)  # (2, 1, 5), no empty row
    g4 = torch.Generator().manual_seed(seed + 1)
    q4, k4, v4 = (torch.randn(2, 3, 4, 6, generator=g4) for _ in range(3))  # (batch, heads, seq, d)
    mask4 = torch.rand(2, 3, 4, 4, generator=g4) > 0.5
    mask4[0, 1, 2] = False  # one empty row in one head
    mask4[1, :, 0] = False  # and the first query of sentence 2, in every head
    mask4[1, :, 3, 1] = True  # (the other rows keep at least one key)
    return [("a padding mask, no empty row", (q, k, v, keys_only)),
            ("left padding and a causal mask: two empty rows", (q, k, v, with_empty)),
            ("heads and several empty rows", (q4, k4, v4, mask4))]


def _nan_rows_hint(t: torch.Tensor, mask: torch.Tensor) -> list[str]:
    nan_rows = t.isnan().any(dim=-1)
    empty = fully_masked_rows(mask).expand(nan_rows.shape)
    if bool(nan_rows.any()) and bool((nan_rows == empty).all()):
        return [f"Hint: the NaN are exactly in the {int(empty.sum())} row(s) whose keys are all masked: "
                "the softmax of a row of -inf is 0/0. Give those rows zero weights, and so a zero output."]
    return []


def _softmax_dim_hint(fn: Callable, qkv: tuple, problems: list[str]) -> list[str]:
    """``problems`` naming a softmax over the queries, found with nothing masked (no -inf, so no NaN to hide it);
    empty if the student's function does not take it there."""
    q, k, v = qkv
    if any(QUERY_SOFTMAX_HINT in p for p in problems):
        return problems
    everything = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)  # (T_q, T_k): nothing masked
    try:
        got = fn(q.clone(), k.clone(), v.clone(), everything)
    except Exception:  # noqa: BLE001 - the probe only looks for one mistake
        return []
    over_queries = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-2) @ v  # (..., T_q, d_v)
    if not (isinstance(got, torch.Tensor) and got.shape == over_queries.shape
            and torch.allclose(got.detach(), over_queries, atol=1e-5, rtol=1e-4)):
        return []
    return [p.replace(NONFINITE_GUESS, "") for p in problems] + [f"Hint: {QUERY_SOFTMAX_HINT}"]


def check_masked_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(q, k, v, mask)``: masked attention whose fully masked rows give zeros, with finite gradients."""
    __tracebackhide__ = True
    for case, (q, k, v, mask) in _masked_attention_cases(seed):
        expected = scaled_dot_product_attention(q, k, v, mask)
        dims = ("batch", "T_q", "d_v") if q.dim() == 3 else ("batch", "heads", "T_q", "d_v")
        got = call_keeping(fn, (q, k, v, mask), f"masked_attention ({case})", ("q", "k", "v", "mask"),
                        ["the caller uses {what} again; build new tensors (mask | empty, not mask |= empty)"])
        if isinstance(got, tuple):
            fail(f"✗ masked_attention ({case})", ["returned a tuple; return only the output tensor"])
        problems = compare(got, expected, dims, mistakes=outputs(MASKED_ATTENTION_MISTAKES, q, k, v, mask),
                           what=f"output ({case})")
        if problems and isinstance(got, torch.Tensor) and got.shape == expected.shape:
            problems = _softmax_dim_hint(fn, (q, k, v), problems) or problems + _nan_rows_hint(got.detach(), mask)
        if problems:
            report(f"masked_attention ({case})", problems)
    # Training runs backward through attention: the empty rows must not send NaN into the gradients.
    q, k, v, mask = _masked_attention_cases(seed)[1][1]
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = call(fn, (*leaves, mask), "masked_attention (backward pass)")
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        fail("✗ masked_attention (backward pass)",
             ["the output does not depend on q, k and v through autograd; compute it with torch operations"])
    backward((out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum(), "masked_attention (backward pass)")
    bad = [name for name, t in zip("qkv", leaves) if t.grad is None or not bool(torch.isfinite(t.grad).all())]
    if bad:
        fail("✗ masked_attention (backward pass)",
             [f"the output is right, but the gradients of {', '.join(bad)} contain NaN",
              "Hint: the NaN of the empty rows were repaired after they were used: "
              + ("the NaN weights are still multiplied into the gradient of v (the output was repaired after @ v)"
                 if bad == ["v"] else "the backward pass goes through them even if their result is thrown away")
              + ". The exercise's second hint shows how to avoid them."])
    report("masked_attention", [])


MISTAKES = {
    "check_masked_row": MASKED_ROW_MISTAKES,
    "check_causal_by_hand": CAUSAL_BY_HAND_MISTAKES,
    "check_teacher_forcing_shift": TEACHER_FORCING_MISTAKES,
    "check_padding_mask": PADDING_MASK_MISTAKES,
    "check_causal_padding_mask": CAUSAL_PADDING_MISTAKES,
    "check_masked_attention": MASKED_ATTENTION_MISTAKES,
}
