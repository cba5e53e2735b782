"""Checks for the exercises of chapter 6: add & norm and the feed-forward network."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .core import call, compare, fail, report, require_keys

__all__ = ["check_layer_norm_by_hand", "check_layer_norm", "check_encoder_block", "layer_norm_by_hand_inputs"]

BY_HAND_TOLERANCE = 1e-3
BY_HAND_KEYS = ("mean", "variance", "z", "y")


def layer_norm_by_hand_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exercise 1: the token vector ``x`` and the parameters ``gamma`` and ``beta``, each ``(4,)``."""
    return torch.tensor([1.0, 5.0, 2.0, 8.0]), torch.tensor([1.0, 2.0, 1.0, 2.0]), torch.tensor([0.0, 0.0, 1.0, 1.0])


def _by_hand(x, gamma, beta, unbiased=False, by="std", centre=True):
    mean = x.mean()
    var = x.var(unbiased=unbiased)
    spread = {"std": var.sqrt(), "var": var}[by]
    z = ((x - mean) if centre else x) / spread
    return mean, var, z, gamma * z + beta


def check_layer_norm_by_hand(answer) -> None:
    """A dict with ``mean``, ``variance``, ``z`` (4 numbers) and ``y`` (4 numbers), within 1e-3."""
    __tracebackhide__ = True
    require_keys("layer norm by hand", answer, BY_HAND_KEYS)
    x, gamma, beta = layer_norm_by_hand_inputs()
    x64, gamma64, beta64 = x.double(), gamma.double(), beta.double()
    mean, var, z, y = _by_hand(x64, gamma64, beta64)
    _, var_unbiased, z_unbiased, y_unbiased = _by_hand(x64, gamma64, beta64, unbiased=True)
    _, _, z_by_var, y_by_var = _by_hand(x64, gamma64, beta64, by="var")
    _, _, z_uncentred, _ = _by_hand(x64, gamma64, beta64, centre=False)
    unbiased = "divide the sum of squared deviations by d = 4 (LayerNorm's biased variance), not by d - 1 = 3."
    mistakes = {
        "mean": {},
        "variance": {
            unbiased: var_unbiased,
            "that is the standard deviation; the variance is its square.": var.sqrt(),
            "the variance is the mean of the squared deviations (x_i - mean)^2, not the mean of x_i^2.":
                x64.pow(2).mean(),
        },
        "z": {
            unbiased: z_unbiased,
            "divide by the standard deviation, the square root of the variance.": z_by_var,
            "subtract the mean before dividing.": z_uncentred,
            "z is the normalised vector before gamma and beta; you gave y.": y,
        },
        "y": {
            "scale first, then shift: y = gamma * z + beta, not gamma * (z + beta).": gamma64 * (z + beta64),
            "y applies gamma and beta to z; you gave z itself.": z,
            "gamma multiplies and beta is added, not the other way round.": beta64 * z + gamma64,
            unbiased: y_unbiased,
            "divide by the standard deviation, the square root of the variance.": y_by_var,
        },
    }
    dims = {"mean": (), "variance": (), "z": ("d_model",), "y": ("d_model",)}
    expected = {"mean": mean, "variance": var, "z": z, "y": y}
    problems: list[str] = []
    for key in BY_HAND_KEYS:
        lines = compare(answer[key], expected[key], dims[key], atol=BY_HAND_TOLERANCE, rtol=0.0,
                        mistakes=mistakes[key], what=f"answer['{key}']")
        problems += [line for line in lines if not (line.startswith("Hint:") and line in problems)]
    report("layer norm by hand", problems)


# --------------------------------------------------------------------------- the function

def _layer_norm_mistakes(x, gamma, beta, eps) -> dict[str, torch.Tensor]:
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    z = (x - mean) / torch.sqrt(var + eps)
    out = {
        "used the unbiased variance (divide by d - 1); LayerNorm divides by d: var(..., unbiased=False).":
            gamma * (x - mean) / torch.sqrt(x.var(-1, keepdim=True, unbiased=True) + eps) + beta,
        "eps goes inside the square root: sqrt(var + eps), not sqrt(var) + eps.":
            gamma * (x - mean) / (var.sqrt() + eps) + beta,
        "eps is missing: divide by sqrt(var + eps).": gamma * (x - mean) / var.sqrt() + beta,
        "forgot gamma and beta: return gamma * z + beta.": z,
        "gamma scales and beta shifts: gamma * z + beta.": beta * z + gamma,
        "this is RMSNorm: LayerNorm subtracts the mean first.":
            gamma * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) + beta,
    }
    if x.dim() >= 2:
        m0, v0 = x.mean(0, keepdim=True), x.var(0, keepdim=True, unbiased=False)
        out["the statistics must be taken over the features of each token (the last dimension, dim=-1), "
            "not over the first dimension."] = gamma * (x - m0) / torch.sqrt(v0 + eps) + beta
        m_all, v_all = x.mean(), x.var(unbiased=False)
        out["the statistics must be taken over the features of each token (dim=-1, keepdim=True), "
            "not over the whole tensor."] = gamma * (x - m_all) / torch.sqrt(v_all + eps) + beta
    return out


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
        problems = compare(got, expected, dims, atol=1e-5, rtol=1e-4,
                           mistakes=_layer_norm_mistakes(x, gamma, beta, eps), what=f"layer_norm ({case})")
        if problems:
            report(f"layer_norm ({case})", problems)
    report("layer_norm", [])


# --------------------------------------------------------------------------- the block

_PARTS = ("self_attn", "linear1", "linear2", "norm1", "norm2")


def torch_encoder_layer(d_model: int, n_heads: int, d_ff: int, norm_first: bool, seed: int):
    """A seeded ``nn.TransformerEncoderLayer(batch_first=True, dropout=0.0)`` with non-trivial weights everywhere."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        theirs = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True,
                                            norm_first=norm_first)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if name.startswith("norm"):  # gamma near 1, beta near 0, but not exactly
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return theirs.eval()


def _block_variant(theirs, x, norm_first, *, wiring=None, residual=True, relu=True, same_norm=False,
                   residual_of_normed=False, ffn=True, norm_sublayer=False):
    """The encoder block written out with torch's sub-modules, with switches for common mistakes."""
    pre = norm_first if wiring is None else wiring == "pre"
    norm1 = theirs.norm1
    norm2 = theirs.norm1 if same_norm else theirs.norm2

    def sa(z):
        return theirs.self_attn(z, z, z, need_weights=False)[0]

    def ff(z):
        h = theirs.linear1(z)
        return theirs.linear2(F.relu(h) if relu else h)

    r = 1.0 if residual else 0.0
    if pre:
        n = norm1(x)
        x = (n if residual_of_normed else x) * r + sa(n)
        if ffn:
            n = norm2(x)
            x = (n if residual_of_normed else x) * r + ff(n)
        return x
    if norm_sublayer:
        x = x + norm1(sa(x))
        return x + norm2(ff(x))
    x = norm1(r * x + sa(x))
    return norm2(r * x + ff(x)) if ffn else x


def _block_mistakes(theirs, x, norm_first) -> dict[str, torch.Tensor]:
    f = lambda **kw: _block_variant(theirs, x, norm_first, **kw)  # noqa: E731
    other = "post" if norm_first else "pre"
    wanted = "x + Sublayer(Norm(x))" if norm_first else "Norm(x + Sublayer(x))"
    out = {
        f"this is the {other}-norm wiring; norm_first={norm_first} means x = {wanted}.": f(wiring=other),
        "the residual is missing: add each sublayer's input back to its output.": f(residual=False),
        "the feed-forward network needs its ReLU between linear1 and linear2.": f(relu=False),
        "each sublayer has its own norm: norm1 for attention, norm2 for the feed-forward network.":
            f(same_norm=True),
        "the feed-forward sublayer is missing: after attention comes linear1, ReLU, linear2.": f(ffn=False),
    }
    if not norm_first:
        out["post-norm normalises the sum: x = Norm(x + Sublayer(x)), not x + Norm(Sublayer(x))."] = \
            f(norm_sublayer=True)
    if norm_first:
        out["in pre-norm the residual adds the un-normalised x: x = x + Sublayer(Norm(x)), "
            "not Norm(x) + Sublayer(Norm(x))."] = f(residual_of_normed=True)
    return out


def check_encoder_block(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, n_heads, d_ff, norm_first)`` must equal ``nn.TransformerEncoderLayer(batch_first=True,
    dropout=0.0)`` with the same weights, for ``norm_first`` False and True (atol 1e-5)."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 16, generator=g)
    for norm_first in (False, True):
        name = f"EncoderBlock(16, 4, 32, norm_first={norm_first})"
        block = call(cls, (16, 4, 32, norm_first), name)
        theirs = torch_encoder_layer(16, 4, 32, norm_first, seed + int(norm_first))
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
            mistakes = _block_mistakes(theirs, x, norm_first)
        problems = compare(got, expected, ("batch", "seq", "d_model"), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                           what=f"output (norm_first={norm_first})")
        if problems:
            report(name, problems)
    report("EncoderBlock", [])
