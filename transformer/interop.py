"""Copy weights from PyTorch's own modules into ours, to show that the two compute the same thing.

``nn.MultiheadAttention`` stores ``W^Q, W^K, W^V`` stacked in one
``in_proj_weight`` of shape ``(3 d_model, d_model)``; we keep three matrices.
``nn.Linear`` stores ``W`` as ``(out, in)`` and computes ``x W^T``, as ours does.
"""

from __future__ import annotations

import torch
from torch import nn

from .blocks import Decoder, DecoderBlock, Encoder, EncoderBlock
from .multihead import MultiHeadAttention
from .norm import LayerNorm


def copy_tensor(dst: torch.Tensor, src: torch.Tensor, what: str) -> None:
    """Copy ``src`` into our parameter ``dst`` of the same shape; ``what`` names it in the error."""
    if dst.shape != src.shape:
        raise ValueError(f"{what}: expected shape {tuple(dst.shape)}, got {tuple(src.shape)} from the torch module")
    with torch.no_grad():
        dst.copy_(src)


def copy_linear(ours: nn.Linear, theirs: nn.Linear) -> None:
    copy_tensor(ours.weight, theirs.weight, "linear weight")
    if ours.bias is not None:
        copy_tensor(ours.bias, theirs.bias, "linear bias")


def copy_layer_norm(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    copy_tensor(ours.gamma, theirs.weight, "LayerNorm weight")
    copy_tensor(ours.beta, theirs.bias, "LayerNorm bias")


def copy_multihead(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """``in_proj`` rows ``[0:d], [d:2d], [2d:3d]`` are ``W^Q, W^K, W^V``."""
    for ours_lin, w, b in zip((ours.w_q, ours.w_k, ours.w_v), theirs.in_proj_weight.chunk(3),
                              (theirs.in_proj_bias.chunk(3) if theirs.in_proj_bias is not None else (None,) * 3)):
        copy_tensor(ours_lin.weight, w, "in_proj_weight")
        if ours_lin.bias is not None:
            copy_tensor(ours_lin.bias, b, "in_proj_bias")
    copy_linear(ours.w_o, theirs.out_proj)


def copy_encoder_block(ours: EncoderBlock, theirs: nn.TransformerEncoderLayer) -> None:
    copy_multihead(ours.self_attn, theirs.self_attn)
    copy_linear(ours.ff.linear1, theirs.linear1)
    copy_linear(ours.ff.linear2, theirs.linear2)
    copy_layer_norm(ours.norm1, theirs.norm1)
    copy_layer_norm(ours.norm2, theirs.norm2)


def copy_decoder_block(ours: DecoderBlock, theirs: nn.TransformerDecoderLayer) -> None:
    copy_multihead(ours.self_attn, theirs.self_attn)
    copy_multihead(ours.cross_attn, theirs.multihead_attn)
    copy_linear(ours.ff.linear1, theirs.linear1)
    copy_linear(ours.ff.linear2, theirs.linear2)
    for i in (1, 2, 3):
        copy_layer_norm(getattr(ours, f"norm{i}"), getattr(theirs, f"norm{i}"))


def copy_stack(ours: Encoder | Decoder, theirs: nn.TransformerEncoder | nn.TransformerDecoder) -> None:
    if len(ours.layers) != len(theirs.layers):
        raise ValueError(f"layers: expected {len(ours.layers)} layers in the torch stack, got {len(theirs.layers)}")
    copy_block = copy_encoder_block if isinstance(ours, Encoder) else copy_decoder_block
    for a, b in zip(ours.layers, theirs.layers):
        copy_block(a, b)
    if theirs.norm is not None:
        if not isinstance(ours.norm, LayerNorm):
            raise ValueError("norm: the torch stack ends with a LayerNorm; build ours with final_norm=True")
        copy_layer_norm(ours.norm, theirs.norm)


def copy_transformer(encoder: Encoder, decoder: Decoder, theirs: nn.Transformer) -> None:
    """Copy an ``nn.Transformer`` into our encoder and decoder stacks."""
    copy_stack(encoder, theirs.encoder)
    copy_stack(decoder, theirs.decoder)
