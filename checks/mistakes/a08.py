"""The known mistakes of the exercises of chapter 8, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a08` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer.attention import scaled_dot_product_attention
from transformer.masks import masked_softmax

from ..core import Mistake


def _sdpa(q, k, v, mask=None, scale=None):
    """Attention with the scores times ``scale`` (by default ``1 / sqrt(d_k)``)."""
    if scale is None:
        return scaled_dot_product_attention(q, k, v, mask)
    return masked_softmax(scale * q @ k.transpose(-2, -1), mask) @ v


CROSS_ATTENTION_MISTAKES = [
    Mistake("keys and values from the decoder", "keys and values must come from memory (the encoder output), not from "
            "the decoder.",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(x_dec @ w_q, x_dec @ w_k, x_dec @ w_v)),
    Mistake("queries from memory", "queries come from the decoder: the output has one row per decoder position.",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(memory @ w_q, memory @ w_k, memory @ w_v, mask)),
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_k).",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(x_dec @ w_q, memory @ w_k, memory @ w_v, mask, 1.0)),
    Mistake("scaled by d_model", "scale by sqrt(d_k), the width of the queries and keys, not by sqrt(d_model).",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(x_dec @ w_q, memory @ w_k, memory @ w_v, mask,
                                                                 1 / math.sqrt(x_dec.shape[-1]))),
    Mistake("causal", "cross-attention has no causal mask: the whole source is known before decoding starts.",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(
                x_dec @ w_q, memory @ w_k, memory @ w_v,
                torch.ones(x_dec.shape[1], memory.shape[1], dtype=torch.bool).tril()
                & (True if mask is None else mask))),
    Mistake("mask ignored", "the source padding mask was ignored: padded source keys must get weight 0.",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(x_dec @ w_q, memory @ w_k, memory @ w_v)),
    Mistake("inverted mask", "the mask is inverted: True means 'may attend'.",
            lambda x_dec, memory, w_q, w_k, w_v, mask=None: _sdpa(x_dec @ w_q, memory @ w_k, memory @ w_v,
                                                                 None if mask is None else ~mask)),
]


def _torch_masks(self_mask, memory_mask):
    """Our masks (True = may attend) in nn.MultiheadAttention's convention (True = blocked)."""
    attn = None if self_mask is None else ~self_mask
    keys = None if memory_mask is None else ~memory_mask[:, 0, :]  # (batch, 1, T_e) -> (batch, T_e)
    return attn, keys


class _DecoderBlock(nn.Module):
    """The exercise's post-norm block done right, with PyTorch's sublayers; each known mistake changes one method."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))

    def masks(self, self_mask, memory_mask):
        return _torch_masks(self_mask, memory_mask)

    def attend_self(self, h, attn_mask):
        return self.self_attn(h, h, h, attn_mask=attn_mask, need_weights=False)[0]

    def attend_memory(self, h, memory, key_mask):
        return self.multihead_attn(h, memory, memory, key_padding_mask=key_mask, need_weights=False)[0]

    def feed_forward(self, h):
        return self.linear2(F.relu(self.linear1(h)))

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        attn_mask, key_mask = self.masks(self_mask, memory_mask)
        h = self.norm1(x + self.attend_self(x, attn_mask))
        h = self.norm2(h + self.attend_memory(h, memory, key_mask))
        return self.norm3(h + self.feed_forward(h))


class _PreNorm(_DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        attn_mask, key_mask = self.masks(self_mask, memory_mask)
        h = x + self.attend_self(self.norm1(x), attn_mask)
        h = h + self.attend_memory(self.norm2(h), memory, key_mask)
        return h + self.feed_forward(self.norm3(h))


class _MasksNotInverted(_DecoderBlock):
    def masks(self, self_mask, memory_mask):
        return self_mask, None if memory_mask is None else memory_mask[:, 0, :]


class _NoSelfMask(_DecoderBlock):
    def masks(self, self_mask, memory_mask):
        return None, _torch_masks(self_mask, memory_mask)[1]


class _NoMemoryMask(_DecoderBlock):
    def masks(self, self_mask, memory_mask):
        return _torch_masks(self_mask, memory_mask)[0], None


class _CrossFromX(_DecoderBlock):
    def attend_memory(self, h, memory, key_mask):
        return self.multihead_attn(h, h, h, need_weights=False)[0]


class _NoReLU(_DecoderBlock):
    def feed_forward(self, h):
        return self.linear2(self.linear1(h))


class _NoResidual(_DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        attn_mask, key_mask = self.masks(self_mask, memory_mask)
        h = self.norm1(self.attend_self(x, attn_mask))
        h = self.norm2(self.attend_memory(h, memory, key_mask))
        return self.norm3(self.feed_forward(h))


class _CrossFirst(_DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        attn_mask, key_mask = self.masks(self_mask, memory_mask)
        h = self.norm1(x + self.attend_memory(x, memory, key_mask))
        h = self.norm2(h + self.attend_self(h, attn_mask))
        return self.norm3(h + self.feed_forward(h))


DECODER_BLOCK_MISTAKES = [
    Mistake("pre-norm", "this is the pre-norm block, x + sublayer(norm(x)); the 2017 paper and "
            "TransformerDecoderLayer's default are post-norm: x = norm(x + sublayer(x)).", _PreNorm),
    Mistake("masks not inverted", "nn.MultiheadAttention reads a boolean mask the other way round from this book, "
            "True = blocked: pass attn_mask=~self_mask and key_padding_mask=~memory_mask[:, 0, :].", _MasksNotInverted),
    Mistake("no self mask", "the self-attention mask was not used: the decoder must not see the future.", _NoSelfMask),
    Mistake("no memory mask", "the source padding mask was not used in the cross-attention: padded source keys must "
            "get weight 0.", _NoMemoryMask),
    Mistake("cross from x", "cross-attention takes its keys and values from memory (the encoder output), not from x.",
            _CrossFromX),
    Mistake("no ReLU", "the feed-forward network has a ReLU between its two linear layers.", _NoReLU),
    Mistake("no residual", "the residual connection is missing: add each sublayer's input to its output before the "
            "norm.", _NoResidual),
    Mistake("cross first", "the order is masked self-attention, then cross-attention, then the feed-forward network.",
            _CrossFirst),
]
