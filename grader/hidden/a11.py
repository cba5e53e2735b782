"""Hidden tests of assignment 11, GPT, BERT and ViT (references: the package's sampling filters, PyTorch's
F.unfold, the masks of chapter 7, and the masking rule measured by checks.a11.masking_problems).

Every input comes from the run's seed. Masking is judged on the tokens and labels the grader reads, of a first call
and of a second call on the very same ids tensor (a function that changed its ids answers it wrongly), and the ids
after the calls (the text says they are not changed). Whether the two calls, with generators seeded alike, agree,
only the kernel can see: that is reported, not scored (the grader cannot draw the numbers itself: a correct answer
may consume the generator in any order, so the only reference for one call's draws is another call's, which a reply
could copy).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from checks.a11 import family_mask, masking_inputs, masking_problems
from grader.hidden import Case, Forbid, Request, calls, generator, rng
from grader.hidden.judge import describe, fields, returns, tensor, unchanged
from transformer.sampling import sampling_distribution, top_k_filter

ASSIGNMENT = "11_gpt_bert_vit"
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_top_k_filter": Forbid("top_k_filter", ("transformer.top_k_filter",)),
    "ex2_top_p_probs": Forbid("top_p_probs", ("transformer.top_p_filter", "transformer.sampling_distribution")),
    "ex3_mask_tokens": Forbid("mask_tokens", ("transformer.mask_tokens",)),
    "ex4_patchify": Forbid("patchify", ("torch.nn.functional.unfold", "transformer.vision.patchify")),
}
SENTINEL = -1e4


# ----------------------------------------------------------------- exercise 1: top-k


def _top_k_judge(ref: torch.Tensor):
    want = ref.masked_fill(ref == float("-inf"), SENTINEL)

    def judge(reply):
        got, _args = fields(reply, "out", "args")
        if not isinstance(got, torch.Tensor):
            return f"expected a tensor, got {describe(got)}"
        if got.is_floating_point():
            if bool(torch.isnan(got).any() or (got == float("inf")).any()):
                return "some values are NaN or +inf"
            if not bool(torch.isinf(got).any()) and bool((got < -1e3).any()):
                return "the dropped logits must be float('-inf'), not a large negative number"
            got = got.masked_fill(got == float("-inf"), SENTINEL)
        return tensor(got, want, atol=1e-6, rtol=1e-6, dims=["..."] * (ref.dim() - 1) + ["vocab"])
    return judge


def ex1_top_k_filter(seed: int):
    g = generator(seed, "ex1_top_k_filter")
    for shape, k in [((7,), 3), ((5, 30), 7), ((2, 4, 11), 1), ((3, 9), 9)]:
        logits = torch.randn(*shape, generator=g) * 2
        yield Case(f"top_k_filter on logits of shape {shape} with k = {k}: -inf outside the k largest of each row "
                   f"(exact positions, kept values within 1e-6)", calls("top_k_filter", logits, k),
                   _top_k_judge(top_k_filter(logits, k)))


# ----------------------------------------------------------------- exercise 2: top-p


def ex2_top_p_probs(seed: int):
    g = generator(seed, "ex2_top_p_probs")
    for shape, p, temperature in [((9,), 0.7, 1.0), ((4, 25), 0.9, 0.7), ((2, 3, 16), 0.5, 1.8), ((3, 8), 0.95, 3.0)]:
        logits = torch.randn(*shape, generator=g) * 2
        ref = sampling_distribution(logits.double(), temperature, top_p=p).float()
        yield Case(f"top_p_probs on logits of shape {shape}, p = {p}, temperature {temperature}: the renormalised "
                   f"nucleus probabilities in vocabulary order (atol 1e-5)",
                   calls("top_p_probs", logits, p, temperature),
                   returns(ref, dims=["..."] * (len(shape) - 1) + ["vocab"], atol=1e-5, rtol=1e-5))


# ----------------------------------------------------------------- exercise 3: masking


MASKING = ("first", "second", "args")


def _pair(got, ids) -> str | None:
    """``got`` must be (inputs, labels): two integer tensors of the shape of ``ids``."""
    if not isinstance(got, list):
        return f"expected a tuple (inputs, labels), got {describe(got)}"
    if len(got) != 2:
        return "expected a tuple (inputs, labels) of two tensors"
    for name, t in zip(("inputs", "labels"), got, strict=True):
        if not isinstance(t, torch.Tensor):
            return f"{name}: expected a torch.Tensor, got {describe(t)}"
        if tuple(t.shape) != tuple(ids.shape):
            return f"{name}: expected the shape of ids {tuple(ids.shape)}"
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            return f"{name}: expected integer token ids (torch.long), got another dtype"
    return None


def _masking_judge(ids, mask_id, vocab_size, special_ids, p, which="first"):
    """Scored: the result of the first call, or (``which="second"``) of the second call on the very same ids tensor,
    judged against the grader's ids by the masking rule."""
    def judge(reply):
        got = dict(zip(MASKING, fields(reply, *MASKING), strict=True))[which]
        problem = _pair(got, ids)
        if not problem:
            problems = masking_problems(ids, tuple(got), mask_id, vocab_size, special_ids, p)
            problem = "; ".join(line.removeprefix("Hint: ") for line in problems) if problems else None
        if problem and which == "second":
            return (f"a second call on the very same ids tensor: {problem} (does the function change the ids it was "
                    "given? work on a copy)")
        return problem
    return judge


def _same_judge(reply):
    """Two calls with generators seeded alike (only the kernel sees both: reported, not scored)."""
    first, second, _args = fields(reply, *MASKING)
    same = (isinstance(first, list) and isinstance(second, list) and len(first) == len(second)
            and all(isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                    and bool(torch.equal(a, b)) for a, b in zip(first, second, strict=True)))
    return None if same else ("two calls with generators seeded alike gave different results: draw every number "
                              "with generator=")


def ex3_mask_tokens(seed: int):
    r = rng(seed, "ex3_mask_tokens")
    for rows, seq, vocab, p in [(2500, 24, 60, 0.15), (2000, 12, 20, 0.25)]:
        ids, mask_id, vocab_size, specials = masking_inputs(r.randrange(2**31), rows=rows, seq=seq, vocab_size=vocab)
        request = Request("a11.mask_tokens", {"ids": ids, "mask_id": mask_id, "vocab_size": vocab_size,
                                              "special_ids": specials, "p": p, "seed": r.randrange(2**31)})
        what = f"mask_tokens on {rows} sentences of up to {seq} tokens, vocabulary {vocab}, p = {p}"
        yield Case(f"{what}: the share chosen, the 80/10/10 shares, the labels and the random tokens", request,
                   _masking_judge(ids, mask_id, vocab_size, specials, p))
        yield Case(f"{what}, called a second time on the very same ids tensor: again the share chosen, the 80/10/10 "
                   "shares, the labels and the random tokens (a function that changed its ids answers it wrongly)",
                   request, _masking_judge(ids, mask_id, vocab_size, specials, p, "second"))
        yield Case(f"{what}: the same result for generators seeded alike", request, _same_judge, scored=False)
        yield Case(f"{what}: ids unchanged", request,
                   lambda reply, ids=ids: unchanged([ids], fields(reply, *MASKING)[2], ["ids"]))


# ----------------------------------------------------------------- exercise 4: patches


def ex4_patchify(seed: int):
    g = generator(seed, "ex4_patchify")
    for shape, p in [((3, 1, 16, 16), 4), ((2, 3, 10, 15), 5), ((1, 4, 6, 6), 2)]:
        images = torch.randn(*shape, generator=g)
        ref = F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (batch, n_patches, C p p)
        yield Case(f"patchify on images of shape {shape} with p = {p}, against F.unfold (exact)",
                   calls("patchify", images, p), returns(ref, dims=["batch", "n_patches", "C*p*p"], atol=1e-6, rtol=0))


# ----------------------------------------------------------------- exercise 5: the family's mask


def ex5_family_mask(seed: int):
    g = generator(seed, "ex5_family_mask")
    ids = torch.randint(1, 9, (3, 7), generator=g)
    ids[0, 5:], ids[2, 2], ids[2, 6] = 0, 0, 0  # padding at the end, and inside a row
    for family in ("decoder-only", "encoder-only"):
        for pad_id in (0, 4):
            yield Case(f"attention_mask({family!r}, ids, pad_id={pad_id}) on a batch of 3 sentences of 7 tokens: "
                       f"(batch, T, T) booleans", calls("attention_mask", family, ids, pad_id),
                       returns(family_mask(family, ids, pad_id), dims=["batch", "T_q", "T_k"], exact=True))
