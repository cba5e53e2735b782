"""Exercise 7.6's second hint says which repairs of the NaN of a fully masked row leave finite gradients: the
gradients computed here, for each form it names, must agree with it."""

from __future__ import annotations

import math

import nbformat
import torch

from layout import nbmeta
from layout.paths import ROOT


def _hint() -> str:
    nb = nbformat.read(ROOT / "solutions" / "07_masking" / "07_masking.ipynb", as_version=4)
    return next(c.source for c in nb.cells if nbmeta.grade_id(c) == "ex6_hints")


def _gradients(repair):
    """The gradients of q, k and v through masked attention with an empty query row, NaN repaired by ``repair``."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.ones(2, 4, 4, dtype=torch.bool).tril()
    mask[1, :2] = False  # the first two queries of sentence 2 see no key (left padding under a causal mask)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(3)).masked_fill(~mask, -math.inf)  # (2, T_q, T_k)
    out = repair(scores.softmax(dim=-1), v)  # (2, T_q, 3)
    (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)).sum().backward()
    return {name: bool(torch.isfinite(t.grad).all()) for name, t in zip("qkv", (q, k, v))}


def test_nan_to_num_on_the_weights_after_masked_fill_leaves_finite_gradients():
    assert _gradients(lambda weights, v: weights.nan_to_num(0.0) @ v) == {"q": True, "k": True, "v": True}
    assert "`nan_to_num` on the weights" in _hint() and "happens to leave finite gradients" in _hint()


def test_nan_to_num_on_the_output_leaves_nan_in_the_gradient_of_v():
    assert _gradients(lambda weights, v: (weights @ v).nan_to_num(0.0)) == {"q": True, "k": True, "v": False}
    assert "`nan_to_num` on the\noutput, after `@ v`, does not" in _hint() and "the gradient of `v`" in _hint()
