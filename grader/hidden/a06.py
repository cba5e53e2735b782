"""Hidden tests of assignment 06, add & norm and the feed-forward network (references: arithmetic by hand,
``F.layer_norm`` and PyTorch's ``nn.TransformerEncoderLayer``).

Exercise 1 normalises the exercise's own token by hand: its questions are fixed, not drawn from the seed. Every
other input, PyTorch's weights included, comes from the run's seed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import entry, number, numbers, returns, tensor

ASSIGNMENT = "06_add_norm_feed_forward"
FIXED = {"ex1_layer_norm_by_hand"}  # the exercise's token, normalised by hand
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_layer_norm_by_hand": Forbid("by_hand", ("torch.nn.functional.layer_norm", "transformer")),
    "ex2_layer_norm": Forbid("layer_norm", (
        "torch.nn.functional.layer_norm",
        "torch.layer_norm",
        "torch.nn.LayerNorm",
        "transformer",
    )),
}
BY_HAND = 1e-3
PARTS = ("self_attn", "linear1", "linear2", "norm1", "norm2")


# --------------------------------------------------------------------------- exercise 1

def ex1_layer_norm_by_hand(seed: int):
    x, gamma, beta = [1.0, 5.0, 2.0, 8.0], [1.0, 2.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0]
    mu = sum(x) / 4
    var = sum((v - mu) ** 2 for v in x) / 4
    z = [(v - mu) / var ** 0.5 for v in x]
    y = [g * zi + b for g, zi, b in zip(gamma, z, beta, strict=True)]
    token = "x = [1, 5, 2, 8], gamma = [1, 2, 1, 2], beta = [0, 0, 1, 1], eps = 0"
    yield Case(f"by_hand['mean'], the mean of {token} (within 1e-3)", reads("by_hand"),
               entry("mean", lambda got: number(got, mu, BY_HAND, "by_hand['mean']"), "by_hand"))
    yield Case(f"by_hand['variance'], the biased variance of {token} (within 1e-3)", reads("by_hand"),
               entry("variance", lambda got: number(got, var, BY_HAND, "by_hand['variance']"), "by_hand"))
    yield Case(f"by_hand['z'], the four z-scores of {token} (each within 1e-3)", reads("by_hand"),
               entry("z", lambda got: numbers(got, z, BY_HAND, "by_hand['z']"), "by_hand"))
    yield Case(f"by_hand['y'], the four outputs gamma * z + beta of {token} (each within 1e-3)", reads("by_hand"),
               entry("y", lambda got: numbers(got, y, BY_HAND, "by_hand['y']"), "by_hand"))


# --------------------------------------------------------------------------- exercise 2

def ex2_layer_norm(seed: int):
    g = generator(seed, "ex2_layer_norm")
    for shape, eps in [((1,), 1e-5), ((3, 7), 1e-5), ((2, 4, 16), 1e-6), ((2, 3, 5, 9), 0.1)]:
        x = torch.randn(*shape, generator=g) * 4 - 1
        d = shape[-1]
        gamma = torch.randn(d, generator=g)
        beta = torch.randn(d, generator=g)
        ref = F.layer_norm(x, (d,), gamma, beta, eps)
        dims = ["batch", "heads", "seq", "d_model"][-len(shape):]
        yield Case(f"layer_norm(x, gamma, beta, eps={eps:g}) with x of shape {shape} and random gamma and beta, "
                   f"against F.layer_norm", calls("layer_norm", x, gamma, beta, eps), returns(ref, dims))


# --------------------------------------------------------------------------- exercise 3

def _pytorch_layer(g, d: int, h: int, d_ff: int, norm_first: bool) -> torch.nn.TransformerEncoderLayer:
    """PyTorch's encoder layer with every weight drawn from ``g`` (the norms' gains near 1)."""
    with torch.random.fork_rng(devices=[]):  # building it draws PyTorch's own initial weights: leave no trace
        theirs = torch.nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                                  norm_first=norm_first).eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if p.dim() == 2:
                p.copy_((2 * torch.rand(p.shape, generator=g) - 1) / p.shape[1] ** 0.5)
            else:
                p.copy_(("norm" in name and name.endswith("weight")) + 0.3 * torch.randn(p.shape, generator=g))
    return theirs


def ex3_encoder_block(seed: int):
    g = generator(seed, "ex3_encoder_block")
    for d, h, d_ff, t in [(8, 2, 16, 3), (24, 4, 48, 7)]:
        for norm_first in (False, True):
            theirs = _pytorch_layer(g, d, h, d_ff, norm_first)
            x = torch.randn(2, t, d, generator=g)
            with torch.no_grad():
                ref = theirs(x)
            state = {part: {k: v.detach().clone() for k, v in getattr(theirs, part).state_dict().items()}
                     for part in PARTS}
            wiring = "pre-norm" if norm_first else "post-norm"
            yield Case(f"EncoderBlock({d}, {h}, {d_ff}, norm_first={norm_first}) ({wiring}) with random weights of "
                       f"PyTorch's TransformerEncoderLayer, on x of shape {tuple(x.shape)}",
                       Request("a06.encoder_block", {"d_model": d, "n_heads": h, "d_ff": d_ff,
                                                     "norm_first": norm_first, "state": state, "x": x}),
                       lambda got, ref=ref: tensor(got, ref, dims=["batch", "seq", "d_model"]))
