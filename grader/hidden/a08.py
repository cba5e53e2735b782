"""Hidden tests of assignment 08, cross-attention (references: PyTorch's own attention and decoder layer).

Exercise 1 asks for the shapes of the exercise's own example, worked by hand: its questions are fixed, not drawn
from the seed. Every other input (weights, sizes of the padding, token vectors) comes from the run's seed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, fill, generator, reads
from grader.hidden.judge import describe, entry, fields, returns, shape, tensor

ASSIGNMENT = "08_cross_attention"
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_cross_attention": Forbid("cross_attention", (
        "torch.nn.functional.scaled_dot_product_attention",
        "transformer",
    )),
    "ex3_decoder_block": Forbid("DecoderBlock", ("torch.nn.TransformerDecoderLayer", "transformer")),
}
FIXED = {"ex1_cross_shapes"}  # the exercise's example, worked by hand


# ----------------------------------------------------------------- exercise 1: shapes by hand


def _side(want):
    def check(got):
        if not isinstance(got, str):
            return f"expected the string 'decoder' or 'encoder', got {describe(got)}"
        side = got.strip().lower()
        if side not in ("decoder", "encoder"):
            return "expected 'decoder' or 'encoder', got another string"
        return None if side == want else "this is the wrong side"
    return check


def ex1_cross_shapes(seed: int):
    b, td, te, d, h = 2, 6, 5, 8, 2
    # the weights and the output as PyTorch's own multi-head attention produces them
    mha = torch.nn.MultiheadAttention(d, h, batch_first=True)
    with torch.no_grad():
        out, w = mha(torch.zeros(b, td, d), torch.zeros(b, te, d), torch.zeros(b, te, d), average_attn_weights=False)
    ref = {"Q": (b, h, td, d // h), "K": (b, h, te, d // h), "V": (b, h, te, d // h),
           "weights": tuple(w.shape), "output": tuple(out.shape)}
    said = {"Q": "the shape of the queries per head", "K": "the shape of the keys per head",
            "V": "the shape of the values per head", "weights": "the shape of the attention weights",
            "output": "the shape of the layer's output"}
    for key, want in ref.items():
        yield Case(f"answer[{key!r}], {said[key]} (exact)", reads("answer"),
                   entry(key, lambda got, want=want: shape(got, want), "answer"))
    for key, side in [("Q from", "decoder"), ("K from", "encoder"), ("V from", "encoder")]:
        yield Case(f"answer[{key!r}], the side {key[0]} is computed from", reads("answer"),
                   entry(key, _side(side), "answer"))


# ----------------------------------------------------------------- exercise 2: cross-attention


def ex2_cross_attention(seed: int):
    g = generator(seed, "ex2_cross_attention")
    for b, td, te, d, dk, dv in [(1, 1, 1, 3, 2, 2), (2, 5, 7, 6, 4, 3), (3, 4, 9, 16, 8, 8)]:
        x = torch.randn(b, td, d, generator=g)
        mem = torch.randn(b, te, d, generator=g)
        wq, wk = (torch.randn(d, dk, generator=g) / d ** 0.5 for _ in range(2))
        wv = torch.randn(d, dv, generator=g) / d ** 0.5
        lengths = torch.randint(1, te + 1, (b,), generator=g)
        mask = (torch.arange(te)[None, :] < lengths[:, None])[:, None, :]    # (batch, 1, T_e), True = real token
        dims = ["batch", "T_d", "d_v"]
        sizes = f"batch {b}, T_d {td}, T_e {te}, d_model {d}, d_k {dk}, d_v {dv}"
        yield Case(f"cross_attention with {sizes}, no mask", calls("cross_attention", x, mem, wq, wk, wv),
                   returns(F.scaled_dot_product_attention(x @ wq, mem @ wk, mem @ wv), dims))
        yield Case(f"cross_attention with {sizes} and a source padding mask (batch, 1, T_e)",
                   calls("cross_attention", x, mem, wq, wk, wv, mask),
                   returns(F.scaled_dot_product_attention(x @ wq, mem @ wk, mem @ wv, attn_mask=mask), dims))


# ----------------------------------------------------------------- exercise 3: the decoder block


def _block_judge(ref):
    def judge(reply):
        loaded, out = fields(reply, "loaded", "out")
        if loaded is not True:
            return ("could not copy the weights of nn.TransformerDecoderLayer into your block: DecoderBlock(d_model, "
                    "n_heads, d_ff) must be an nn.Module with the sublayers of __init__ as given")
        return tensor(out, ref, dims=["batch", "T_d", "d_model"])
    return judge


def ex3_decoder_block(seed: int):
    g = generator(seed, "ex3_decoder_block")
    for d, h, ff, b, td, te in [(8, 2, 16, 2, 5, 7), (12, 3, 20, 3, 4, 6), (4, 1, 8, 1, 1, 1)]:
        with torch.random.fork_rng():                        # every parameter is drawn from g below
            layer = torch.nn.TransformerDecoderLayer(d, h, ff, dropout=0.0, batch_first=True).eval()
        state = fill(layer, g, spread=0.2)
        x = torch.randn(b, td, d, generator=g)
        mem = torch.randn(b, te, d, generator=g)
        causal = torch.ones(td, td, dtype=torch.bool).tril()
        lengths = torch.randint(1, te + 1, (b,), generator=g)
        src = (torch.arange(te)[None, :] < lengths[:, None])[:, None, :]       # (batch, 1, T_e), True = real
        with torch.no_grad():
            masked = layer(x, mem, tgt_mask=~causal, memory_key_padding_mask=~src[:, 0, :])
            plain = layer(x, mem)
        sizes = f"d_model {d}, {h} head(s), d_ff {ff}, batch {b}, T_d {td}, T_e {te}"
        inputs = {"d_model": d, "n_heads": h, "d_ff": ff, "state": state, "x": x, "memory": mem}
        yield Case(f"DecoderBlock with {sizes}, the weights of nn.TransformerDecoderLayer, a causal self_mask "
                   f"and a source padding memory_mask", Request("a08.block", {**inputs, "self_mask": causal,
                                                                              "memory_mask": src}),
                   _block_judge(masked))
        yield Case(f"DecoderBlock with {sizes}, the weights of nn.TransformerDecoderLayer, no masks",
                   Request("a08.block", inputs), _block_judge(plain))
