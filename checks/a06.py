"""Checks for the exercises of chapter 6: add & norm and the feed-forward network."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import references
from .answers import require_keys
from .core import Mistake, call, compare, fail, outputs, report, values_of
from .mistakes.a06 import ENCODER_BLOCK_MISTAKES, LAYER_NORM_MISTAKES

__all__ = ["check_layer_norm_by_hand", "check_layer_norm", "check_encoder_block", "layer_norm_by_hand_inputs"]

BY_HAND_TOLERANCE = 1e-3
BY_HAND_KEYS = ("mean", "variance", "z", "y")


def layer_norm_by_hand_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exercise 1: the token vector ``x`` and the parameters ``gamma`` and ``beta``, each ``(4,)``."""
    return torch.tensor([1.0, 5.0, 2.0, 8.0]), torch.tensor([1.0, 2.0, 1.0, 2.0]), torch.tensor([0.0, 0.0, 1.0, 1.0])


def _by_hand_mistakes() -> list[Mistake]:
    x, gamma, beta = (t.double() for t in layer_norm_by_hand_inputs())
    mean = x.mean()
    var, var_unbiased = x.var(unbiased=False), x.var(unbiased=True)
    z = (x - mean) / var.sqrt()
    z_unbiased, z_by_var, z_uncentred = (x - mean) / var_unbiased.sqrt(), (x - mean) / var, x / var.sqrt()
    unbiased = "divide the sum of squared deviations by d = 4 (LayerNorm's biased variance), not by d - 1 = 3."
    by_std = "divide by the standard deviation, the square root of the variance."
    return [
        Mistake("unbiased", unbiased, var_unbiased, "variance"),
        Mistake("the standard deviation", "that is the standard deviation; the variance is its square.", var.sqrt(),
                "variance"),
        Mistake("mean of the squares", "the variance is the mean of the squared deviations (x_i - mean)^2, not the "
                "mean of x_i^2.", x.pow(2).mean(), "variance"),
        Mistake("unbiased", unbiased, z_unbiased, "z"),
        Mistake("divided by the variance", by_std, z_by_var, "z"),
        Mistake("not centred", "subtract the mean before dividing.", z_uncentred, "z"),
        Mistake("y for z", "z is the normalised vector before gamma and beta; you gave y.", gamma * z + beta, "z"),
        Mistake("shift inside", "scale first, then shift: y = gamma * z + beta, not gamma * (z + beta).",
                gamma * (z + beta), "y"),
        Mistake("z for y", "y applies gamma and beta to z; you gave z itself.", z, "y"),
        Mistake("gamma and beta swapped", "gamma multiplies and beta is added, not the other way round.",
                beta * z + gamma, "y"),
        Mistake("unbiased", unbiased, gamma * z_unbiased + beta, "y"),
        Mistake("divided by the variance", by_std, gamma * z_by_var + beta, "y"),
    ]


BY_HAND_MISTAKES = _by_hand_mistakes()


def check_layer_norm_by_hand(answer) -> None:
    """A dict with ``mean``, ``variance``, ``z`` (4 numbers) and ``y`` (4 numbers), within 1e-3."""
    __tracebackhide__ = True
    require_keys("layer norm by hand", answer, BY_HAND_KEYS)
    x, gamma, beta = (t.double() for t in layer_norm_by_hand_inputs())
    mean, var = x.mean(), x.var(unbiased=False)
    z = (x - mean) / var.sqrt()
    dims = {"mean": (), "variance": (), "z": ("d_model",), "y": ("d_model",)}
    expected = {"mean": mean, "variance": var, "z": z, "y": gamma * z + beta}
    problems: list[str] = []
    for key in BY_HAND_KEYS:
        lines = compare(answer[key], expected[key], dims[key], atol=BY_HAND_TOLERANCE, rtol=0.0,
                        mistakes=values_of(BY_HAND_MISTAKES, key), what=f"answer['{key}']")
        problems += [line for line in lines if not (line.startswith("Hint:") and line in problems)]
    report("layer norm by hand", problems)


# --------------------------------------------------------------------------- the function


def check_layer_norm(fn: Callable, seed: int = 0) -> None:
    """``fn(x, gamma, beta, eps)`` must equal ``F.layer_norm`` over the last dimension (atol 1e-5)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    cases = [
        ("x of shape (2, 3, 6), eps=1e-5", torch.randn(2, 3, 6, generator=g) * 3 + 2, 1e-5),
        ("x of shape (4, 5), eps=0.5", torch.randn(4, 5, generator=g) * 0.5 - 1, 0.5),
        ("x of shape (8,), eps=1e-5", torch.randn(8, generator=g) * 2, 1e-5),
    ]
    for case, x, eps in cases:
        d = x.shape[-1]
        gamma = 1 + 0.5 * torch.randn(d, generator=g)
        beta = 0.5 * torch.randn(d, generator=g)
        got = call(fn, (x.clone(), gamma.clone(), beta.clone(), eps), f"layer_norm ({case})")
        expected = F.layer_norm(x, (d,), gamma, beta, eps)
        dims = ("batch", "seq", "d_model")[-x.dim():] if x.dim() > 1 else ("d_model",)
        problems = compare(got, expected, dims,
                           mistakes=outputs(LAYER_NORM_MISTAKES, x, gamma, beta, eps), what=f"layer_norm ({case})")
        if problems:
            report(f"layer_norm ({case})", problems)
    report("layer_norm", [])


# --------------------------------------------------------------------------- the block

_PARTS = ("self_attn", "linear1", "linear2", "norm1", "norm2")


def _load(block: nn.Module, theirs: nn.TransformerEncoderLayer) -> nn.Module:
    """Copy PyTorch's sublayers into the block's of the same names (raises if they do not fit)."""
    for part in _PARTS:
        getattr(block, part).load_state_dict(getattr(theirs, part).state_dict())
    return block.eval()


def _run(cls, theirs: nn.TransformerEncoderLayer, x: torch.Tensor) -> torch.Tensor:
    return _load(cls(16, 4, 32, theirs.norm_first), theirs)(x)


def check_encoder_block(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, n_heads, d_ff, norm_first)`` must equal ``nn.TransformerEncoderLayer(batch_first=True,
    dropout=0.0)`` with the same weights, for ``norm_first`` False and True (atol 1e-5)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 16, generator=g)
    for norm_first in (False, True):
        name = f"EncoderBlock(16, 4, 32, norm_first={norm_first})"
        block = call(cls, (16, 4, 32, norm_first), name)
        theirs = references.encoder_layer(16, 4, 32, norm_first, seed + int(norm_first))
        missing = [p for p in _PARTS if not isinstance(getattr(block, p, None), nn.Module)]
        if missing:
            fail(f"✗ {name}", [f"missing sub-modules: {', '.join(missing)}; keep the __init__ you were given"])
        for part in _PARTS:
            try:
                getattr(block, part).load_state_dict(getattr(theirs, part).state_dict())
            except RuntimeError as exc:
                fail(f"✗ {name}", [f"self.{part} does not match PyTorch's: {str(exc).splitlines()[0]}",
                                   "keep the __init__ you were given"])
        block.eval()
        got = call(block, (x.clone(),), name)
        if isinstance(got, tuple):
            fail(f"✗ {name}", ["returned a tuple; return only the output tensor (self_attn returns "
                               "(output, weights): take [0])"])
        with torch.no_grad():
            expected = theirs(x)
            mistakes = outputs(ENCODER_BLOCK_MISTAKES, theirs, x, run=_run)
        problems = compare(got, expected, ("batch", "seq", "d_model"), mistakes=mistakes,
                           what=f"output (norm_first={norm_first})")
        if problems:
            report(name, problems)
    report("EncoderBlock", [])


MISTAKES = {
    "check_layer_norm_by_hand": BY_HAND_MISTAKES,
    "check_layer_norm": LAYER_NORM_MISTAKES,
    "check_encoder_block": ENCODER_BLOCK_MISTAKES,
}
