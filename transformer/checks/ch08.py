"""Checks for the exercises of chapter 8: cross-attention."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..attention import scaled_dot_product_attention
from ..blocks import DecoderBlock
from ..config import TransformerConfig
from ..interop import copy_decoder_block
from ..masks import causal_mask, padding_mask
from .core import call, compare, fail, report, require_keys

__all__ = ["check_cross_shapes", "check_cross_attention", "check_decoder_block_layer", "CROSS_SHAPES_SETTING"]

# Exercise 1: a batch of 2 translations, "I ate an apple <eos>" (T_e = 5) into the decoder input
# "<sos> Ich habe einen Apfel gegessen" (T_d = 6), d_model = 8, h = 2 heads.
CROSS_SHAPES_SETTING = {"batch": 2, "T_d": 6, "T_e": 5, "d_model": 8, "heads": 2}
SHAPE_KEYS = ("Q", "K", "V", "weights", "output")
SOURCE_KEYS = ("Q from", "K from", "V from")


# ----------------------------------------------------------------------------- exercise 1


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    b, t_d, t_e, d, h = (CROSS_SHAPES_SETTING[k] for k in ("batch", "T_d", "T_e", "d_model", "heads"))
    d_h = d // h
    return {"Q": (b, h, t_d, d_h), "K": (b, h, t_e, d_h), "V": (b, h, t_e, d_h),
            "weights": (b, h, t_d, t_e), "output": (b, t_d, d)}


def _shape_mistakes(name: str) -> dict[tuple[int, ...], str]:
    b, t_d, t_e, d, h = (CROSS_SHAPES_SETTING[k] for k in ("batch", "T_d", "T_e", "d_model", "heads"))
    d_h = d // h
    decoder_rows = "Q comes from the decoder: one row per decoder position (T_d), in every head."
    encoder_rows = f"{name} comes from the encoder output: one row per source token (T_e), in every head."
    per_head = f"{name}: each head works in d_h = d_model / h dimensions."
    known = {
        "Q": {(b, h, t_e, d_h): decoder_rows, (b, h, t_d, d): per_head, (b, t_d, d): per_head,
              (t_d, d_h): "write every dimension: (batch, heads, seq, d_h)."},
        "K": {(b, h, t_d, d_h): encoder_rows, (b, h, t_e, d): per_head, (b, t_e, d): per_head,
              (t_e, d_h): "write every dimension: (batch, heads, seq, d_h)."},
        "weights": {(b, h, t_e, t_d): "weights: one row per query (decoder position), one column per key "
                                      "(source token).",
                    (b, h, t_d, t_d): "cross-attention weights are not square: T_d queries against T_e keys.",
                    (b, h, t_e, t_e): "cross-attention weights are not square: T_d queries against T_e keys.",
                    (b, t_d, t_e): "every head has its own weights: (batch, heads, T_d, T_e)."},
        "output": {(b, h, t_d, d_h): "the output concatenates the heads and projects back to d_model: "
                                     "(batch, T_d, d_model).",
                   (b, t_d, d_h): "the output concatenates the heads and projects back to d_model.",
                   (b, t_e, d): "one output vector per decoder position (T_d), not per source token.",
                   (t_d, d): "write every dimension, the batch included."},
    }
    known["V"] = {k: v.replace("K comes", "V comes").replace("K:", "V:") for k, v in known["K"].items()}
    return known[name]


def _as_shape(value):
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (tuple, list)) and all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        return tuple(value)
    return None


def check_cross_shapes(answer) -> None:
    """A dict: the shapes of Q, K, V, the weights and the output, and where Q, K and V come from."""
    __tracebackhide__ = True
    require_keys("cross-attention shapes", answer, (*SHAPE_KEYS, *SOURCE_KEYS))
    expected = _expected_shapes()
    problems = []
    for name in SHAPE_KEYS:
        shape = _as_shape(answer[name])
        if shape is None:
            problems.append(f"{name}: expected a tuple of ints such as (1, 2, 3), got {answer[name]!r}")
        elif shape != expected[name]:
            hint = _shape_mistakes(name).get(shape)
            problems.append(f"{name}: wrong shape" + (f". Hint: {hint}" if hint else ""))
    want = {"Q from": "decoder", "K from": "encoder", "V from": "encoder"}
    hints = {"decoder": "queries come from the decoder: the target position asks.",
             "encoder": "keys and values come from the final encoder output: the source words answer."}
    for name in SOURCE_KEYS:
        given = answer[name]
        if not isinstance(given, str) or given.strip().lower() not in ("decoder", "encoder"):
            problems.append(f"{name}: expected \"decoder\" or \"encoder\", got {given!r}")
        elif given.strip().lower() != want[name]:
            problems.append(f"{name}: wrong. Hint: {hints[want[name]]}")
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


def _cross_mistakes(x_dec, memory, w_q, w_k, w_v, mask) -> dict[str, torch.Tensor]:
    sdpa = scaled_dot_product_attention
    q, k, v = x_dec @ w_q, memory @ w_k, memory @ w_v
    t_d, t_e = x_dec.shape[1], memory.shape[1]
    out = {
        "keys and values must come from memory (the encoder output), not from the decoder.":
            sdpa(q, x_dec @ w_k, x_dec @ w_v),
        "queries come from the decoder: the output has one row per decoder position.":
            sdpa(memory @ w_q, k, v, mask),
        "forgot to divide the scores by sqrt(d_k).": sdpa(q, k, v, mask, scale=1.0),
        "scale by sqrt(d_k), the width of the queries and keys, not by sqrt(d_model).":
            sdpa(q, k, v, mask, scale=1 / math.sqrt(x_dec.shape[-1])),
        "cross-attention has no causal mask: the whole source is known before decoding starts.":
            sdpa(q, k, v, torch.ones(t_d, t_e, dtype=torch.bool).tril() & (True if mask is None else mask)),
    }
    if mask is not None:
        out["the source padding mask was ignored: padded source keys must get weight 0."] = sdpa(q, k, v)
        out["the mask is inverted: True means 'may attend'."] = sdpa(q, k, v, ~mask)
    return out


def check_cross_attention(fn: Callable, seed: int = 0) -> None:
    """``fn(x_dec, memory, W_q, W_k, W_v, src_mask=None)``: queries from x_dec, keys and values from memory."""
    __tracebackhide__ = True
    for case, args in _cross_cases(seed):
        got = call(fn, args, f"cross_attention ({case})")
        if isinstance(got, tuple):
            fail(f"✗ cross_attention ({case})", ["returned a tuple; return only the output tensor"])
        x_dec, memory, w_q, w_k, w_v, mask = args
        expected = scaled_dot_product_attention(x_dec @ w_q, memory @ w_k, memory @ w_v, mask)
        mistakes = _cross_mistakes(*args)
        problems = compare(got, expected, ("batch", "T_d", "d_v"), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                           what=f"output ({case})")
        if problems:
            report(f"cross_attention ({case})", problems)
    report("cross_attention", [])


# ----------------------------------------------------------------------------- exercise 3

D_MODEL, HEADS, D_FF = 8, 2, 16


def _reference_layer(seed: int) -> nn.TransformerDecoderLayer:
    """PyTorch's post-norm decoder layer with random weights everywhere (norms and biases included)."""
    with torch.random.fork_rng():  # leave the notebook's global random state alone
        torch.manual_seed(seed)
        layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if p.dim() == 1:  # biases around 0, LayerNorm gains around 1
                gain = name.startswith("norm") and name.endswith("weight")
                p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if gain else 0.0))
    return layer.eval()


def _block_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, D_MODEL, generator=g)  # (batch, T_d, d_model)
    memory = torch.randn(2, 7, D_MODEL, generator=g)  # (batch, T_e, d_model)
    src_mask = padding_mask(torch.tensor([[3, 4, 5, 6, 7, 2, 0], [3, 4, 2, 0, 0, 0, 0]]), 0)  # (2, 1, 7)
    return [("causal and source padding masks", (x, memory, causal_mask(5), src_mask)),
            ("no masks", (x, memory, None, None))]


def _torch_masks(self_mask, memory_mask):
    """Our masks (True = may attend) in nn.MultiheadAttention's convention (True = blocked)."""
    attn = None if self_mask is None else ~self_mask
    keys = None if memory_mask is None else ~memory_mask[:, 0, :]  # (batch, 1, T_e) -> (batch, T_e)
    return attn, keys


def _block_variant(ref: nn.TransformerDecoderLayer, x, memory, self_mask, memory_mask, kind: str) -> torch.Tensor:
    """A known mistake, built from the reference layer's own sublayers."""
    attn_mask, key_mask = _torch_masks(self_mask, memory_mask)
    if kind == "masks not inverted":
        attn_mask = self_mask
        key_mask = None if memory_mask is None else memory_mask[:, 0, :]
    if kind == "no self mask":
        attn_mask = None
    if kind == "no memory mask":
        key_mask = None

    def sa(h):
        return ref.self_attn(h, h, h, attn_mask=attn_mask, need_weights=False)[0]

    def ca(h):
        source = h if kind == "cross from x" else memory
        mask = None if kind == "cross from x" else key_mask
        return ref.multihead_attn(h, source, source, key_padding_mask=mask, need_weights=False)[0]

    def ff(h):
        hidden = ref.linear1(h) if kind == "no relu" else F.relu(ref.linear1(h))
        return ref.linear2(hidden)

    if kind == "pre-norm":
        h = x + sa(ref.norm1(x))
        h = h + ca(ref.norm2(h))
        return h + ff(ref.norm3(h))
    if kind == "no residual":
        h = ref.norm1(sa(x))
        h = ref.norm2(ca(h))
        return ref.norm3(ff(h))
    if kind == "cross first":
        h = ref.norm1(x + ca(x))
        h = ref.norm2(h + sa(h))
        return ref.norm3(h + ff(h))
    h = ref.norm1(x + sa(x))
    h = ref.norm2(h + ca(h))
    return ref.norm3(h + ff(h))


BLOCK_HINTS = {
    "pre-norm": "this is the pre-norm block, x + sublayer(norm(x)); the 2017 paper and TransformerDecoderLayer's "
                "default are post-norm: x = norm(x + sublayer(x)).",
    "masks not inverted": "nn.MultiheadAttention reads a boolean mask the other way round from this book, "
                          "True = blocked: pass attn_mask=~self_mask and key_padding_mask=~memory_mask[:, 0, :].",
    "no self mask": "the self-attention mask was not used: the decoder must not see the future.",
    "no memory mask": "the source padding mask was not used in the cross-attention: padded source keys must get "
                      "weight 0.",
    "cross from x": "cross-attention takes its keys and values from memory (the encoder output), not from x.",
    "no relu": "the feed-forward network has a ReLU between its two linear layers.",
    "no residual": "the residual connection is missing: add each sublayer's input to its output before the norm.",
    "cross first": "the order is masked self-attention, then cross-attention, then the feed-forward network.",
}

NAN_HINT = ("Hint: NaN appears when a query row has every key blocked. nn.MultiheadAttention reads a boolean mask "
            "the other way round from this book, True = blocked: pass attn_mask=~self_mask, and turn memory_mask "
            "(batch, 1, T_e) into key_padding_mask=~memory_mask[:, 0, :].")


def check_decoder_block_layer(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, n_heads, d_ff)`` must equal ``nn.TransformerDecoderLayer`` (post-norm) with copied weights."""
    __tracebackhide__ = True
    ref = _reference_layer(seed)
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
        mistakes = {BLOCK_HINTS[kind]: _block_variant(ref, x, memory, self_mask, memory_mask, kind).detach()
                    for kind in BLOCK_HINTS
                    if not (self_mask is None and kind in ("masks not inverted", "no self mask", "no memory mask"))}
        problems = compare(got, expected, ("batch", "T_d", "d_model"), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                           what=f"output ({case})")
        if problems and isinstance(got, torch.Tensor) and bool(got.isnan().any()):
            problems.append(NAN_HINT)
        if problems:
            report(f"DecoderBlock ({case})", problems)
    report("DecoderBlock", [])
