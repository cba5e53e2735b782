"""Checks for the exercises of chapter 11: GPT, BERT and ViT.

The references are the package's own (:mod:`transformer.sampling`, :func:`~transformer.vision.patchify`,
:mod:`transformer.masks`) or PyTorch's (``F.unfold``), on seeded inputs made here. The masking exercise
draws random numbers, so :func:`masking_problems` judges its answer by the shares the rule fixes, each
within five standard deviations of a binomial count; the grader's hidden tests use the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from transformer.masks import causal_padding_mask, padding_mask
from transformer.sampling import sampling_distribution, top_k_filter

from .core import as_tensor, call, compare, fail, outputs, report, require_unchanged
from .mistakes.a11 import FAMILY_MASK_MISTAKES, MASKING_MISTAKES, PATCHIFY_MISTAKES, TOP_K_MISTAKES, TOP_P_MISTAKES
from .rule import returns_words

__all__ = ["check_top_k_filter", "check_top_p_probs", "check_mask_tokens", "check_patchify", "check_family_mask",
           "masking_problems", "masking_inputs"]

SENTINEL = -1e4  # -inf is compared as this number, so that the layered comparison can show where it is missing
IGNORE = -100
SIGMAS = 5.0


def _finite(x):
    t = as_tensor(x) if not isinstance(x, torch.Tensor) else x.detach()
    if t is None or not t.is_floating_point():
        return x
    return t.masked_fill(t == float("-inf"), SENTINEL)


# ----------------------------------------------------------------------------- exercise 1: top-k


def _top_k_cases():
    g = torch.Generator().manual_seed(11)
    return [("5 words, k = 2", torch.tensor([0.50, 0.20, 0.15, 0.10, 0.05]).log(), 2),
            ("a batch of 4 rows, k = 3", torch.randn(4, 10, generator=g) * 2, 3),
            ("shape (2, 3, 7), k = 1", torch.randn(2, 3, 7, generator=g), 1),
            ("k = vocab: keep all", torch.randn(3, 6, generator=g), 6)]


def check_top_k_filter(fn: Callable) -> None:
    """``fn(logits (..., vocab), k)`` -> the logits with ``-inf`` outside the k largest of each row (exact)."""
    __tracebackhide__ = True
    for case, logits, k in _top_k_cases():
        got = call(fn, (logits.clone(), k), f"top_k_filter ({case})")
        wrong = {hint: _finite(out) for hint, out in outputs(TOP_K_MISTAKES, logits, k).items()}
        problems = compare(_finite(got), _finite(top_k_filter(logits, k)), ["..."] * (logits.dim() - 1) + ["vocab"],
                           atol=1e-6, rtol=1e-6, mistakes=wrong, what=f"filtered logits ({case})")
        if problems and isinstance(got, torch.Tensor) and not torch.isinf(got).any() and got.min() < -1e3:
            problems.append("Hint: mark dropped tokens with float('-inf'), not a large negative number.")
        if problems:
            report(f"top_k_filter ({case})", problems)
    report("top_k_filter", [])


# ----------------------------------------------------------------------------- exercise 2: top-p


def _top_p_cases():
    g = torch.Generator().manual_seed(12)
    hand = torch.tensor([0.50, 0.20, 0.15, 0.10, 0.05]).log()
    return [("5 words, p = 0.8", hand, 0.8, 1.0),
            ("5 words, p = 0.8, temperature 2", hand, 0.8, 2.0),
            ("a batch of 3 rows, p = 0.9, temperature 0.5", torch.randn(3, 12, generator=g) * 2, 0.9, 0.5),
            ("shape (2, 2, 9), p = 0.6, temperature 1.5", torch.randn(2, 2, 9, generator=g) * 3, 0.6, 1.5)]


def check_top_p_probs(fn: Callable) -> None:
    """``fn(logits (..., vocab), p, temperature)`` -> the renormalised nucleus probabilities (atol 1e-5)."""
    __tracebackhide__ = True
    for case, logits, p, temperature in _top_p_cases():
        got = call(fn, (logits.clone(), p, temperature), f"top_p_probs ({case})")
        expected = sampling_distribution(logits.double(), temperature, top_p=p)
        problems = compare(got, expected, ["..."] * (logits.dim() - 1) + ["vocab"], atol=1e-5, rtol=1e-5,
                           mistakes=outputs(TOP_P_MISTAKES, logits.double(), p, temperature),
                           what=f"probabilities ({case})")
        if problems:
            report(f"top_p_probs ({case})", problems)
    report("top_p_probs", [])


# ----------------------------------------------------------------------------- exercise 3: masking

MASKING_HINTS = {m.name: f"Hint: {m.hint}" for m in MASKING_MISTAKES}


def masking_inputs(seed: int, rows: int = 3000, seq: int = 20, vocab_size: int = 40):
    """``[CLS] words [SEP] [PAD] ...`` ids ``(rows, seq)`` with ``[PAD] = 0, [CLS] = 1, [SEP] = 2, [MASK] = 3``:
    ``(ids, mask_id, vocab_size, special_ids)``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab_size, (rows, seq), generator=g)
    ends = torch.randint(3, seq - 1, (rows, 1), generator=g)  # the position of [SEP]
    pos = torch.arange(seq)[None]  # (1, seq)
    ids = torch.where(pos == 0, 1, torch.where(pos == ends, 2, torch.where(pos > ends, 0, ids)))
    return ids, 3, vocab_size, [0, 1, 2]


def _near(count: int, n: int, prob: float) -> bool:
    return abs(count - n * prob) <= SIGMAS * math.sqrt(max(n * prob * (1 - prob), 1e-12)) + 0.5


def _shape_problems(reply, ids) -> list[str]:
    if not isinstance(reply, (tuple, list)) or len(reply) != 2:
        return [f"expected a tuple (inputs, labels), got {type(reply).__name__}"]
    for name, t in zip(("inputs", "labels"), reply):
        if not isinstance(t, torch.Tensor):
            return [f"{name}: expected a torch.Tensor, got {type(t).__name__}"]
        if tuple(t.shape) != tuple(ids.shape):
            return [f"{name}: expected the shape of ids {tuple(ids.shape)}, got {tuple(t.shape)}"]
        if t.is_floating_point() or t.dtype == torch.bool:
            return [f"{name}: expected integer token ids (torch.long), got dtype {t.dtype}"]
        if t.dtype != ids.dtype:
            return [f"{name}: {returns_words(t.dtype, ids.dtype, 'ids')}"]
    return []


def _label_problems(ids, inputs, labels, mask_id, special) -> list[str]:
    chosen = labels != IGNORE
    changed = inputs != ids
    if bool((labels == ids).all()):
        return ["labels: no position holds -100", MASKING_HINTS["labels everywhere"]]
    if bool(changed.any()) and bool((labels[changed] == IGNORE).all()):
        return ["labels: the positions whose input was changed have no label", MASKING_HINTS["labels inverted"]]
    if not bool((labels[chosen] == ids[chosen]).all()):
        lines = ["labels: at the chosen positions (label != -100) the label is not the original token"]
        if float((labels[chosen] == mask_id).float().mean()) > 0.5:
            lines.append(MASKING_HINTS["labels are [MASK]"])
        return lines
    if bool((chosen & special).any()) or bool((changed & special).any()):
        return ["special tokens were chosen or replaced", MASKING_HINTS["specials chosen"]]
    if bool((changed & ~chosen).any()):
        lines = ["inputs: tokens were changed at positions that are not chosen (label -100)"]
        if float((inputs[~special] == mask_id).float().mean()) > 0.5:
            lines.append(MASKING_HINTS["80/10/10 on every token"])
        return lines
    return []


def _share_problems(ids, inputs, labels, mask_id, special, p, n_ordinary_ids) -> list[str]:
    chosen = labels != IGNORE
    n, ordinary = int(chosen.sum()), int((~special).sum())
    if not _near(n, ordinary, p):
        lines = [f"{n} of {ordinary} ordinary tokens were chosen ({n / ordinary:.1%}); with p = {p} expected "
                 f"about {p:.0%}"]
        if p != 0.15 and _near(n, ordinary, 0.15):
            lines.append(MASKING_HINTS["p ignored"])
        return lines
    if n == 0:
        return []
    masked = int((inputs[chosen] == mask_id).sum())
    same = int((inputs[chosen] == ids[chosen]).sum())
    other = n - masked - same
    lines = []
    if not _near(masked, n, 0.8):
        lines.append(f"{masked / n:.1%} of the chosen tokens became [MASK]; expected about 80%")
    if not _near(other, n, 0.1 * (1 - 1 / n_ordinary_ids)):
        lines.append(f"{other / n:.1%} of the chosen tokens became another token; expected about 10%")
    if not _near(same, n, 0.1 + 0.1 / n_ordinary_ids):
        lines.append(f"{same / n:.1%} of the chosen tokens stayed unchanged; expected about 10%")
    if lines:
        hint = ("all masked" if masked == n else "no random tokens" if other == 0
                else "none unchanged" if same < 0.05 * n else None)
        lines += [MASKING_HINTS[hint]] if hint else []
    return lines


def masking_problems(ids, reply, mask_id: int, vocab_size: int, special_ids, p: float) -> list[str]:
    """What is wrong with ``reply = (inputs, labels)`` for ``ids``: the shape, the labels, the 15% (``p``), the
    80/10/10 shares, and the random tokens (ordinary ones, drawn uniformly). Empty when it follows the rule."""
    problems = _shape_problems(reply, ids)
    if problems:
        return problems
    inputs, labels = (t.detach().long() for t in reply)
    special = torch.isin(ids, torch.tensor([*special_ids, mask_id]))
    problems = _label_problems(ids, inputs, labels, mask_id, special)
    n_ordinary = vocab_size - len({*special_ids, mask_id})
    problems = problems or _share_problems(ids, inputs, labels, mask_id, special, p, n_ordinary)
    if problems:
        return problems
    drawn = inputs[(inputs != ids) & (inputs != mask_id)]
    if bool(torch.isin(drawn, torch.tensor([*special_ids, mask_id])).any()) or bool((drawn >= vocab_size).any()):
        return ["some random replacements are not ordinary tokens", MASKING_HINTS["random specials"]]
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in (*special_ids, mask_id)])
    counts = (drawn[:, None] == ordinary[None]).sum(0).double()  # (n_ordinary,)
    if len(drawn) >= 5 * len(ordinary):
        expected = len(drawn) / len(ordinary)
        chi2, df = float(((counts - expected) ** 2 / expected).sum()), len(ordinary) - 1
        if chi2 > df + SIGMAS * math.sqrt(2 * df):
            return ["the random replacements are not spread evenly over the ordinary tokens: draw each one "
                    "uniformly, e.g. with torch.randint over the ordinary ids"]
    return []


def _masking_case(fn, case, ids, mask_id, vocab, specials, p, seed):
    __tracebackhide__ = True
    with torch.random.fork_rng(devices=[]):
        given = ids.clone()
        reply = call(fn, (given, mask_id, vocab, list(specials), p, torch.Generator().manual_seed(seed)),
                     f"mask_tokens ({case})", copies=False)
        require_unchanged(f"mask_tokens ({case})", {"ids": (given, ids)}, [
            "the batch of ids comes back in the next epoch, so {what} must stay as it was given",
            "Hint: build new tensors (torch.where, ids.clone()) instead of writing into ids."])
        problems = masking_problems(ids, reply, mask_id, vocab, specials, p)
        if problems:
            report(f"mask_tokens ({case})", problems)
        again = call(fn, (ids.clone(), mask_id, vocab, list(specials), p, torch.Generator().manual_seed(seed)),
                     f"mask_tokens ({case}, again)")
    if not all(torch.equal(a, b) for a, b in zip(reply, again)):
        report(f"mask_tokens ({case})", [MASKING_HINTS["generator ignored"]])


def check_mask_tokens(fn: Callable) -> None:
    """``fn(ids, mask_id, vocab_size, special_ids, p, generator)`` -> ``(inputs, labels)`` by BERT's rule, judged
    by its shares over 60,000 tokens (each within five binomial standard deviations)."""
    __tracebackhide__ = True
    ids, mask_id, vocab, specials = masking_inputs(0)
    _masking_case(fn, "p = 0.15", ids, mask_id, vocab, specials, 0.15, 1)
    ids, mask_id, vocab, specials = masking_inputs(1, rows=2000, seq=16, vocab_size=25)
    _masking_case(fn, "p = 0.4, another vocabulary", ids, mask_id, vocab, specials, 0.4, 2)
    report("mask_tokens", [])


# ----------------------------------------------------------------------------- exercise 4: patches


def _patch_cases():
    g = torch.Generator().manual_seed(14)
    return [("one channel, 8 x 8, p = 4", torch.randn(2, 1, 8, 8, generator=g), 4),
            ("three channels, 12 x 12, p = 4", torch.randn(2, 3, 12, 12, generator=g), 4),
            ("two channels, 6 x 9, p = 3", torch.randn(1, 2, 6, 9, generator=g), 3)]


def check_patchify(fn: Callable) -> None:
    """``fn(images (batch, C, H, W), p)`` -> ``(batch, n_patches, C p p)`` in ViT's order (exact, as F.unfold)."""
    __tracebackhide__ = True
    for case, images, p in _patch_cases():
        got = call(fn, (images.clone(), p), f"patchify ({case})")
        expected = F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (batch, n_patches, C p p)
        problems = compare(got, expected, ("batch", "n_patches", "C*p*p"), atol=1e-6, rtol=0.0,
                           mistakes=outputs(PATCHIFY_MISTAKES, images, p), what=f"patches ({case})")
        if problems:
            report(f"patchify ({case})", problems)
    report("patchify", [])


# ----------------------------------------------------------------------------- exercise 5: the family's mask


def _family_cases():
    return [("pad_id 0", torch.tensor([[1, 7, 8, 2, 0, 0], [1, 5, 6, 9, 4, 2]]), 0),
            ("pad_id 5, padding in the middle of a row", torch.tensor([[3, 5, 4, 4], [3, 3, 3, 5]]), 5)]


def family_mask(family: str, ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The reference: ``(batch, seq, seq)`` bool, True = may attend."""
    t = ids.shape[1]
    mask = causal_padding_mask(ids, pad_id) if family == "decoder-only" else padding_mask(ids, pad_id)
    return mask.expand(ids.shape[0], t, t)


def check_family_mask(fn: Callable) -> None:
    """``fn(family, ids, pad_id)``, ``family`` ``"decoder-only"`` or ``"encoder-only"`` -> ``(batch, seq, seq)``
    bool."""
    __tracebackhide__ = True
    for case, ids, pad_id in _family_cases():
        for family in ("decoder-only", "encoder-only"):
            got = call(fn, (family, ids.clone(), pad_id), f"attention_mask ({family}, {case})")
            expected = family_mask(family, ids, pad_id)
            if isinstance(got, torch.Tensor) and got.dtype == torch.bool and got.dim() == 2:
                fail(f"✗ attention_mask ({family}, {case})", [
                    f"expected one mask per sentence, shape (batch, T, T) = {tuple(expected.shape)}, got "
                    f"{tuple(got.shape)}", "expand it with .expand(batch, T, T)"])
            problems = compare(got, expected, ("batch", "T_q", "T_k"), dtype=torch.bool,
                               mistakes=outputs(FAMILY_MASK_MISTAKES, family, ids, pad_id),
                               what=f"mask ({family}, {case})")
            if problems:
                report(f"attention_mask ({family}, {case})", problems)
    report("attention_mask", [])


MISTAKES = {
    "check_top_k_filter": TOP_K_MISTAKES,
    "check_top_p_probs": TOP_P_MISTAKES,
    "check_mask_tokens": MASKING_MISTAKES,
    "check_patchify": PATCHIFY_MISTAKES,
    "check_family_mask": FAMILY_MASK_MISTAKES,
}
