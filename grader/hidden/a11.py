"""Hidden tests of assignment 11, GPT, BERT and ViT (references: the package's sampling filters, PyTorch's
F.unfold, the masks of chapter 7, and the masking rule measured by transformer.checks.ch11.masking_problems)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.forbidden import Forbid
from grader.hidden import Case, Request, calls, probe
from grader.hidden.judge import describe, returns, tensor
from transformer.checks.ch11 import family_mask, masking_inputs, masking_problems
from transformer.sampling import sampling_distribution, top_k_filter

ASSIGNMENT = "11_gpt_bert_vit"
GRADED = ["ex1_top_k_filter", "ex2_top_p_probs", "ex3_mask_tokens", "ex4_patchify", "ex5_family_mask"]
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
        got = reply["out"]
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


def ex1_top_k_filter():
    g = torch.Generator().manual_seed(1101)
    for shape, k in [((7,), 3), ((5, 30), 7), ((2, 4, 11), 1), ((3, 9), 9)]:
        logits = torch.randn(*shape, generator=g) * 2
        yield Case(f"top_k_filter on logits of shape {shape} with k = {k}: -inf outside the k largest of each row "
                   f"(exact positions, kept values within 1e-6)", calls("top_k_filter", logits, k),
                   _top_k_judge(top_k_filter(logits, k)))


# ----------------------------------------------------------------- exercise 2: top-p


def ex2_top_p_probs():
    g = torch.Generator().manual_seed(1102)
    for shape, p, temperature in [((9,), 0.7, 1.0), ((4, 25), 0.9, 0.7), ((2, 3, 16), 0.5, 1.8), ((3, 8), 0.95, 3.0)]:
        logits = torch.randn(*shape, generator=g) * 2
        ref = sampling_distribution(logits.double(), temperature, top_p=p).float()
        yield Case(f"top_p_probs on logits of shape {shape}, p = {p}, temperature {temperature}: the renormalised "
                   f"nucleus probabilities in vocabulary order (atol 1e-5)",
                   calls("top_p_probs", logits, p, temperature),
                   returns(ref, dims=["..."] * (len(shape) - 1) + ["vocab"], atol=1e-5, rtol=1e-5))


# ----------------------------------------------------------------- exercise 3: masking


@probe
def a11_mask_tokens(user, ids, mask_id, vocab_size, special_ids, p, seed):
    """mask_tokens twice with generators seeded alike; the replies, and the ids after the calls."""
    import torch
    given = ids.clone()
    first = user["mask_tokens"](given, mask_id, vocab_size, list(special_ids), p, torch.Generator().manual_seed(seed))
    second = user["mask_tokens"](ids.clone(), mask_id, vocab_size, list(special_ids), p,
                                 torch.Generator().manual_seed(seed))
    return {"first": list(first) if isinstance(first, tuple) else first,
            "second": list(second) if isinstance(second, tuple) else second, "ids": given}


def _masking_judge(ids, mask_id, vocab_size, special_ids, p):
    def judge(reply):
        if not torch.equal(reply["ids"], ids):
            return "the input ids were changed in place; build new tensors instead"
        first = reply["first"]
        problems = masking_problems(ids, tuple(first) if isinstance(first, list) else first, mask_id, vocab_size,
                                    special_ids, p)
        if problems:
            return "; ".join(line.removeprefix("Hint: ") for line in problems)
        second = reply["second"]
        if not isinstance(second, list) or not all(torch.equal(a, b) for a, b in zip(first, second)):
            return "two calls with generators seeded alike gave different results: draw every number with generator="
        return None
    return judge


def ex3_mask_tokens():
    for seed, (rows, seq, vocab, p) in enumerate([(2500, 24, 60, 0.15), (2000, 12, 20, 0.25)]):
        ids, mask_id, vocab_size, specials = masking_inputs(1103 + seed, rows=rows, seq=seq, vocab_size=vocab)
        yield Case(f"mask_tokens on {rows} sentences of up to {seq} tokens, vocabulary {vocab}, p = {p}: the share "
                   f"chosen, the 80/10/10 shares, the labels, the random tokens, and the same result for the same seed",
                   Request("a11_mask_tokens", {"ids": ids, "mask_id": mask_id, "vocab_size": vocab_size,
                                               "special_ids": specials, "p": p, "seed": 7 + seed}),
                   _masking_judge(ids, mask_id, vocab_size, specials, p))


# ----------------------------------------------------------------- exercise 4: patches


def ex4_patchify():
    g = torch.Generator().manual_seed(1104)
    for shape, p in [((3, 1, 16, 16), 4), ((2, 3, 10, 15), 5), ((1, 4, 6, 6), 2)]:
        images = torch.randn(*shape, generator=g)
        ref = F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (batch, n_patches, C p p)
        yield Case(f"patchify on images of shape {shape} with p = {p}, against F.unfold (exact)",
                   calls("patchify", images, p), returns(ref, dims=["batch", "n_patches", "C*p*p"], atol=1e-6, rtol=0))


# ----------------------------------------------------------------- exercise 5: the family's mask


def ex5_family_mask():
    g = torch.Generator().manual_seed(1105)
    ids = torch.randint(1, 9, (3, 7), generator=g)
    ids[0, 5:], ids[2, 2], ids[2, 6] = 0, 0, 0  # padding at the end, and inside a row
    for family in ("decoder-only", "encoder-only"):
        for pad_id in (0, 4):
            yield Case(f"attention_mask({family!r}, ids, pad_id={pad_id}) on a batch of 3 sentences of 7 tokens: "
                       f"(batch, T, T) booleans", calls("attention_mask", family, ids, pad_id),
                       returns(family_mask(family, ids, pad_id), dims=["batch", "T_q", "T_k"], exact=True))
