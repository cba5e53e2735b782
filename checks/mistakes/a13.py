"""The known mistakes of the exercises of chapter 13, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function with the exercise's signature, most written as the right answer with one step changed.
:mod:`checks.a13` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import torch

from ..core import Mistake

# ----------------------------------------------------------------------------- exercise 2: induction scores


def _stripe(pattern, half, key_shift=1, start=None):
    """``(batch, heads, n)``: the weight from each query ``t`` of the repeat (from ``start``, ``half + 1`` by
    default) on key ``t - half + key_shift``; ``key_shift=1`` is the induction key, the token after the copy."""
    first = half + 1 if start is None else start
    rows = torch.arange(first, 2 * half + 1)  # (n,): the queries
    return pattern[:, :, rows, rows - half + key_shift]  # (batch, heads, n)


INDUCTION_MISTAKES = [
    Mistake("the earlier copy itself", "this is the weight on the earlier copy of the same token (a duplicate-token "
            "head's score); the induction key is the position just after it, t - half + 1.",
            lambda p, half: _stripe(p, half, key_shift=0).mean(dim=(0, 2))),
    Mistake("one position too far", "the key is one position too far: from position t of the repeat the token "
            "after the earlier copy sits at t - half + 1, not t - half + 2.",
            lambda p, half: _stripe(p, half, key_shift=2).mean(dim=(0, 2))),
    Mistake("first half included", "the mean includes queries of the first half, which have no earlier copy to "
            "find; average only over the repeat, positions half + 1 .. 2 half.",
            lambda p, half: p.diagonal(offset=-(half - 1), dim1=-2, dim2=-1).mean(dim=(0, 2))),
    Mistake("<bos> forgotten", "the queries are shifted by one: position 0 holds <bos>, so the first half is at "
            "1 .. half and the repeat at half + 1 .. 2 half.",
            lambda p, half: p[:, :, torch.arange(half, 2 * half), torch.arange(1, half + 1)].mean(dim=(0, 2))),
    Mistake("previous-token score", "this is the previous-token score (the weight on t - 1); the induction score "
            "reads the weight on t - half + 1, over the repeat.",
            lambda p, half: p.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))),
    Mistake("averaged over the heads", "the mean went over the heads axis; keep the heads (dim 1) and average over "
            "the batch (dim 0) and the repeat's positions.",
            lambda p, half: _stripe(p, half).mean(dim=(1, 2))),
    Mistake("one value per query", "this has one value per query of the repeat: the mean went over the batch and "
            "the heads (dims 0 and 1); keep the heads and average over the batch and the repeat's queries.",
            lambda p, half: _stripe(p, half).mean(dim=(0, 1))),
    Mistake("batch not averaged", "one score per sequence and head; average over the batch too, for (heads,).",
            lambda p, half: _stripe(p, half).mean(dim=2)),
    Mistake("summed over the positions", "the weights were summed over the repeat's positions; the score is their "
            "mean, a weight between 0 and 1.", lambda p, half: _stripe(p, half).sum(dim=2).mean(dim=0)),
]

# ----------------------------------------------------------------------------- exercise 3: direct logit attribution


def _dla(parts, gamma, w_u, answer, other, eps, sigma_of=None, centre=None, sign=1.0, scale=True, use_gamma=True):
    """The contributions with one step changed: ``sigma_of(x, eps)`` (the frozen scale of the whole stream ``x``),
    ``centre`` (what is taken from each part), ``sign``, ``scale`` (divide by the frozen scale) or ``use_gamma``."""
    x = parts.sum(dim=0)  # (d_model,): the final stream
    sigma = torch.sqrt(x.var(unbiased=False) + eps) if sigma_of is None else sigma_of(x, eps)
    centred = parts - parts.mean(dim=-1, keepdim=True) if centre is None else centre(parts)  # (parts, d_model)
    u = sign * (w_u[answer] - w_u[other])  # (d_model,)
    normed = (gamma if use_gamma else 1.0) * centred / (sigma if scale else 1.0)
    return normed @ u  # (parts,)


def _own_scales(parts, gamma, w_u, answer, other, eps):
    sigmas = torch.sqrt(parts.var(dim=-1, unbiased=False, keepdim=True) + eps)  # (parts, 1): each its own
    return (gamma * (parts - parts.mean(dim=-1, keepdim=True)) / sigmas) @ (w_u[answer] - w_u[other])


DLA_MISTAKES = [
    Mistake("scale not frozen", "each part was divided by its own standard deviation, as if normed alone; the "
            "scale is frozen at that of the whole stream, the sum of the parts (the exercise's second hint writes it "
            "out).", _own_scales),
    Mistake("no scale", "the parts were not divided by the frozen scale of the whole stream.",
            lambda *a: _dla(*a, scale=False)),
    Mistake("not centred", "the parts were not centred: the norm subtracts the mean of the vector's entries, so "
            "take each part's own mean (over d_model) from it.", lambda *a: _dla(*a, centre=lambda p: p)),
    Mistake("centred on the parts axis", "the mean was taken over the parts (dim 0); centre each part on the mean "
            "of its own d_model entries (dim -1).", lambda *a: _dla(*a, centre=lambda p: p - p.mean(dim=0))),
    Mistake("centred on the whole stream's mean", "every part had the whole stream's mean subtracted; each part is "
            "centred on its own mean, which adds up to the stream's mean over the parts.",
            lambda *a: _dla(*a, centre=lambda p: p - p.sum(dim=0).mean())),
    Mistake("sign", "the difference is the wrong way round: u = W_U[answer] - W_U[other], so that a part that "
            "favours answer counts positive.", lambda *a: _dla(*a, sign=-1.0)),
    Mistake("no gamma", "the norm's gamma is missing: multiply the centred, scaled part by gamma, entry by entry.",
            lambda *a: _dla(*a, use_gamma=False)),
    Mistake("unbiased variance", "the variance divides by d_model - 1 (torch.var's default); LayerNorm divides by "
            "d_model: var(unbiased=False).", lambda *a: _dla(*a, sigma_of=lambda x, eps: torch.sqrt(x.var() + eps))),
    Mistake("eps outside the root", "eps was added after the square root; LayerNorm adds it to the variance, "
            "sigma = sqrt(var + eps).",
            lambda *a: _dla(*a, sigma_of=lambda x, eps: x.var(unbiased=False).sqrt() + eps)),
]

# ----------------------------------------------------------------------------- exercise 4: patching sweep


def _patched(patched_metric, n_layers, n_heads):
    """``(n_layers, n_heads, batch)``: the patched metric of every head, each asked once."""
    return torch.stack([torch.stack([torch.as_tensor(patched_metric(layer, head)) for head in range(n_heads)])
                        for layer in range(n_layers)])


def _fractions(metric, clean, corrupted, n_layers, n_heads, numerator=None, denominator=None, per_prompt=False):
    m = _patched(metric, n_layers, n_heads)  # (n_layers, n_heads, batch)
    if per_prompt:
        return ((m - corrupted) / (clean - corrupted)).mean(dim=-1)
    patched, c, k = m.mean(dim=-1), clean.mean(), corrupted.mean()
    top = patched - k if numerator is None else numerator(patched, c, k)
    return top / ((c - k) if denominator is None else denominator(c, k))


RESTORED_MISTAKES = [
    Mistake("mean of the ratios", "each prompt's fraction was computed, then averaged; average the metrics over the "
            "batch first, then divide: one prompt with a tiny clean - corrupted difference would swing a mean of "
            "ratios.", lambda *a: _fractions(*a, per_prompt=True)),
    Mistake("not normalised", "patched - corrupted is not divided by clean - corrupted; the fraction is 0 when "
            "nothing is restored and 1 when everything is.", lambda *a: _fractions(*a, denominator=lambda c, k: 1.0)),
    Mistake("from the clean end", "this is the share still missing, counted from the clean end; the restored share "
            "counts from the corrupted end, 0 when the patch restores nothing.",
            lambda *a: _fractions(*a, numerator=lambda p, c, k: c - p)),
    Mistake("denominator reversed", "the denominator is corrupted - clean, so a patch that restores the clean metric "
            "gives -1; it should give 1.",
            lambda *a: _fractions(*a, denominator=lambda c, k: k - c)),
    Mistake("the patched metric itself", "this is the patched metric itself, not the share of the difference "
            "between clean and corrupted that it restores.", lambda *a: _fractions(*a, numerator=lambda p, c, k: p,
                                                                   denominator=lambda c, k: 1.0)),
    Mistake("heads by layers", "the result is (n_heads, n_layers); put the layers on the rows: r[layer, head].",
            lambda *a: _fractions(*a).T),
]
