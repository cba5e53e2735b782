"""Checks for the exercises of chapter 8: cross-attention."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from transformer.attention import scaled_dot_product_attention
from transformer.blocks import DecoderBlock
from transformer.config import TransformerConfig
from transformer.interop import copy_decoder_block
from transformer.masks import causal_mask, padding_mask

from . import references
from .answers import as_ints, require_keys
from .core import Mistake, call, compare, fail, output_problems, outputs, report
from .mistakes.a08 import CROSS_ATTENTION_MISTAKES, DECODER_BLOCK_MISTAKES

__all__ = ["check_cross_shapes", "check_cross_attention", "check_decoder_block_layer", "CROSS_SHAPES_SETTING"]

# Exercise 1: a batch of 2 translations, "I ate an apple" (4 tokens) beside a source of 5 (both padded to T_e = 5),
# into the decoder input "<sos> Ich habe einen Apfel gegessen" (T_d = 6), d_model = 8, h = 2 heads.
CROSS_SHAPES_SETTING = {"batch": 2, "T_d": 6, "T_e": 5, "d_model": 8, "heads": 2}
SHAPE_KEYS = ("Q", "K", "V", "weights", "output")
SOURCE_KEYS = ("Q from", "K from", "V from")


# ----------------------------------------------------------------------------- exercise 1


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    b, t_d, t_e, d, h = (CROSS_SHAPES_SETTING[k] for k in ("batch", "T_d", "T_e", "d_model", "heads"))
    d_h = d // h
    return {"Q": (b, h, t_d, d_h), "K": (b, h, t_e, d_h), "V": (b, h, t_e, d_h),
            "weights": (b, h, t_d, t_e), "output": (b, t_d, d)}


def _cross_shapes_mistakes() -> list[Mistake]:
    b, t_d, t_e, d, h = (CROSS_SHAPES_SETTING[k] for k in ("batch", "T_d", "T_e", "d_model", "heads"))
    d_h = d // h
    every_dimension = "write every dimension: (batch, heads, seq, d_h)."
    not_square = "cross-attention weights are not square: T_d queries against T_e keys."
    keys_and_values = "keys and values come from the final encoder output: the source words answer."
    mistakes = [
        Mistake("encoder rows", "Q comes from the decoder: one row per decoder position (T_d), in every head.",
                (b, h, t_e, d_h), "Q"),
        Mistake("d_model per head", "Q: each head works in d_h = d_model / h dimensions.", (b, h, t_d, d), "Q"),
        Mistake("no heads", "Q: each head works in d_h = d_model / h dimensions.", (b, t_d, d), "Q"),
        Mistake("no batch", every_dimension, (t_d, d_h), "Q"),
    ]
    for name in ("K", "V"):
        mistakes += [
            Mistake("decoder rows", f"{name} comes from the encoder output: one row per source token (T_e), in every "
                    "head.", (b, h, t_d, d_h), name),
            Mistake("d_model per head", f"{name}: each head works in d_h = d_model / h dimensions.", (b, h, t_e, d),
                    name),
            Mistake("no heads", f"{name}: each head works in d_h = d_model / h dimensions.", (b, t_e, d), name),
            Mistake("no batch", every_dimension, (t_e, d_h), name),
        ]
    return mistakes + [
        Mistake("transposed", "weights: one row per query (decoder position), one column per key (source token).",
                (b, h, t_e, t_d), "weights"),
        Mistake("square over the target", not_square, (b, h, t_d, t_d), "weights"),
        Mistake("square over the source", not_square, (b, h, t_e, t_e), "weights"),
        Mistake("no heads", "every head has its own weights: (batch, heads, T_d, T_e).", (b, t_d, t_e), "weights"),
        Mistake("heads not merged", "the output concatenates the heads and projects back to d_model: "
                "(batch, T_d, d_model).", (b, h, t_d, d_h), "output"),
        Mistake("one head's width", "the output concatenates the heads and projects back to d_model.",
                (b, t_d, d_h), "output"),
        Mistake("one per source token", "one output vector per decoder position (T_d), not per source token.",
                (b, t_e, d), "output"),
        Mistake("no batch", "write every dimension, the batch included.", (t_d, d), "output"),
        Mistake("from the encoder", "queries come from the decoder: the target position asks.", "encoder", "Q from"),
        Mistake("from the decoder", keys_and_values, "decoder", "K from"),
        Mistake("from the decoder", keys_and_values, "decoder", "V from"),
    ]


CROSS_SHAPES_MISTAKES = _cross_shapes_mistakes()


def _hint(part: str, wrong) -> str | None:
    return next((m.hint for m in CROSS_SHAPES_MISTAKES if m.part == part and m.wrong == wrong), None)


def check_cross_shapes(answer) -> None:
    """A dict: the shapes of Q, K, V, the weights and the output, and where Q, K and V come from."""
    __tracebackhide__ = True
    require_keys("cross-attention shapes", answer, (*SHAPE_KEYS, *SOURCE_KEYS))
    expected = _expected_shapes()
    problems = []
    for name in SHAPE_KEYS:
        shape = as_ints(answer[name])
        if shape is None:
            problems.append(f"{name}: expected a tuple of ints such as (1, 2, 3), got {answer[name]!r}")
        elif shape != expected[name]:
            hint = _hint(name, shape)
            problems.append(f"{name}: wrong shape" + (f". Hint: {hint}" if hint else ""))
    want = {"Q from": "decoder", "K from": "encoder", "V from": "encoder"}
    for name in SOURCE_KEYS:
        given = answer[name]
        if not isinstance(given, str) or given.strip().lower() not in ("decoder", "encoder"):
            problems.append(f"{name}: expected \"decoder\" or \"encoder\", got {given!r}")
        elif given.strip().lower() != want[name]:
            problems.append(f"{name}: wrong. Hint: {_hint(name, given.strip().lower())}")
    report("cross-attention shapes", problems)


# ----------------------------------------------------------------------------- exercise 2


def _cross_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    batch, t_d, t_e, d_model, d_k, d_v = 2, 4, 6, 5, 4, 3
    x_dec = torch.randn(batch, t_d, d_model, generator=g)
    memory = torch.randn(batch, t_e, d_model, generator=g)
    w_q, w_k = (torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model) for _ in range(2))
    w_v = torch.randn(d_model, d_v, generator=g) / math.sqrt(d_model)
    src = torch.tensor([[4, 5, 6, 7, 2, 0], [4, 5, 2, 0, 0, 0]])  # both sources are padded
    return [("no mask", (x_dec, memory, w_q, w_k, w_v, None)),
            ("a source padding mask", (x_dec, memory, w_q, w_k, w_v, padding_mask(src, 0)))]


def check_cross_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(x_dec, memory, W_q, W_k, W_v, src_mask=None)``: queries from x_dec, keys and values from memory."""
    __tracebackhide__ = True
    for case, args in _cross_cases(seed):
        x_dec, memory, w_q, w_k, w_v, mask = args
        expected = scaled_dot_product_attention(x_dec @ w_q, memory @ w_k, memory @ w_v, mask)
        _, problems = output_problems(fn, args, f"cross_attention ({case})", expected, ("batch", "T_d", "d_v"),
                                      outputs(CROSS_ATTENTION_MISTAKES, *args), f"output ({case})")
        if problems:
            report(f"cross_attention ({case})", problems)
    report("cross_attention", [])


# ----------------------------------------------------------------------------- exercise 3

D_MODEL, HEADS, D_FF = 8, 2, 16


def _block_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, D_MODEL, generator=g)  # (batch, T_d, d_model)
    memory = torch.randn(2, 7, D_MODEL, generator=g)  # (batch, T_e, d_model)
    src_mask = padding_mask(torch.tensor([[3, 4, 5, 6, 7, 2, 0], [3, 4, 2, 0, 0, 0, 0]]), 0)  # (2, 1, 7)
    return [("causal and source padding masks", (x, memory, causal_mask(5), src_mask)),
            ("no masks", (x, memory, None, None))]


def _run(cls, ref: nn.TransformerDecoderLayer, *args) -> torch.Tensor:
    """Build ``cls(d_model, n_heads, d_ff)``, load the reference's weights, and call it with gradients on (as the
    student's block is called: nn.MultiheadAttention's no-grad fast path treats an all-blocked row differently)."""
    block = cls(D_MODEL, HEADS, D_FF)
    block.load_state_dict(ref.state_dict())
    return block.eval()(*args).detach()


NAN_HINT = ("Hint: NaN appears when a query row has every key blocked. nn.MultiheadAttention reads a boolean mask "
            "the other way round from this book, True = blocked: pass attn_mask=~self_mask, and turn memory_mask "
            "(batch, 1, T_e) into key_padding_mask=~memory_mask[:, 0, :].")


def check_decoder_block_layer(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, n_heads, d_ff)`` must equal ``nn.TransformerDecoderLayer`` (post-norm) with copied weights."""
    __tracebackhide__ = True
    ref = references.decoder_layer(D_MODEL, HEADS, D_FF, seed)
    block = call(cls, (D_MODEL, HEADS, D_FF), "DecoderBlock(d_model=8, n_heads=2, d_ff=16)")
    if not isinstance(block, nn.Module):
        fail("✗ DecoderBlock", [f"expected an nn.Module, got {type(block).__name__}"])
    try:
        block.load_state_dict(ref.state_dict())
    except Exception as exc:  # noqa: BLE001 - any mismatch is feedback
        fail("✗ DecoderBlock: could not copy the weights of nn.TransformerDecoderLayer into it",
             [f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
              "keep the sublayers of the scaffold, with their names (self_attn, multihead_attn, linear1, linear2, "
              "norm1, norm2, norm3)"])
    block.eval()
    with references.seeded(seed):
        ours = DecoderBlock(TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=HEADS, d_ff=D_FF, dropout=0.0,
                                              positional="none")).eval()
    copy_decoder_block(ours, ref)
    for case, (x, memory, self_mask, memory_mask) in _block_cases(seed):
        got = call(block, (x, memory, self_mask, memory_mask), f"DecoderBlock ({case})")
        if isinstance(got, tuple):
            fail(f"✗ DecoderBlock ({case})", ["returned a tuple; nn.MultiheadAttention returns (output, weights): "
                                              "keep only the output"])
        # With gradients on, as in the student's call: nn.MultiheadAttention's no-grad fast path handles an
        # all-blocked row differently, and the variants must match what the student's code computes.
        expected = ours(x, memory, self_mask=self_mask, memory_mask=memory_mask).detach()
        mistakes = outputs(DECODER_BLOCK_MISTAKES, ref, x, memory, self_mask, memory_mask, run=_run)
        problems = compare(got, expected, ("batch", "T_d", "d_model"), mistakes=mistakes,
                           what=f"output ({case})")
        if problems and isinstance(got, torch.Tensor) and bool(got.isnan().any()):
            problems.append(NAN_HINT)
        if problems:
            report(f"DecoderBlock ({case})", problems)
    report("DecoderBlock", [])


MISTAKES = {
    "check_cross_shapes": CROSS_SHAPES_MISTAKES,
    "check_cross_attention": CROSS_ATTENTION_MISTAKES,
    "check_decoder_block_layer": DECODER_BLOCK_MISTAKES,
}
