"""Reading the residual stream in the vocabulary (chapter 13).

- :func:`logit_lens`: decode the stream after each block through the final norm and the output head
  (nostalgebraist 2020): what would the model predict if it stopped there?
- :func:`logit_attribution`: split a logit difference into what the embeddings, every head, every
  attention bias and every feed-forward wrote into the stream (direct logit attribution). The final
  norm is made linear by freezing its scale: each part is divided by the scale of the whole stream, as the
  norm divides their sum (a LayerNorm also centres each part; an RMSNorm, chapter 12, does not).

Both read a cache of :func:`transformer.interp.run_with_cache` and call the model's own norm and head. They work on
every :class:`~transformer.model.DecoderOnly` and :class:`~transformer.model.EncoderOnly`; the attribution needs a
pre-norm model, whose stream is a sum of parts, and an output head without BERT's transform.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_index, require_rank
from .interp import head_terms, stack_of, unembed
from .norm import LayerNorm, RMSNorm


def logit_lens(model, cache: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(blocks + 1, batch, seq, vocab_size)``: row 0 decodes the embeddings, row ``i`` the stream after block
    ``i - 1``; the last row is the model's own logits."""
    n = len(stack_of(model).layers)
    states = [cache[f"blocks.{i}.resid_pre"] for i in range(n)] + [cache[f"blocks.{n - 1}.resid_post"]]
    with torch.no_grad():
        return unembed(model, torch.stack(states))  # (blocks + 1, batch, seq, d_model) -> (..., vocab_size)


def stream_parts(model, cache: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The stream leaving the last block as a sum of parts, each ``(batch, seq, d_model)``: ``embed``, then per
    block ``i`` each head (``blocks.i.head.h``), the bias of ``W^O`` (``blocks.i.attn.bias``) and the
    feed-forward (``blocks.i.ffn``, if any). They add up to ``cache["blocks.<last>.resid_post"]`` in a pre-norm
    model (a post-norm block normalises the sum, so its stream is no such sum)."""
    _check_pre_norm(stack_of(model))
    return _stream_parts(model, cache)


def _stream_parts(model, cache: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    parts = {"embed": cache["embed"]}
    for i, block in enumerate(stack_of(model).layers):
        heads = head_terms(model, cache, i)  # (batch, seq, heads, d_model)
        for h in range(heads.shape[2]):
            parts[f"blocks.{i}.head.{h}"] = heads[:, :, h]
        bias = block.self_attn.w_o.bias
        if bias is not None:
            parts[f"blocks.{i}.attn.bias"] = bias.detach().expand_as(cache["embed"])  # (d_model,) -> (b, seq, d_model)
        if block.ff is not None:
            parts[f"blocks.{i}.ffn"] = cache[f"blocks.{i}.ffn.out"]
    return parts


def logit_attribution(model, cache: dict[str, torch.Tensor], position: int, answer: int, other: int
                      ) -> dict[str, torch.Tensor]:
    """Direct logit attribution of ``logit[answer] - logit[other]`` at ``position``: ``{part: (batch,)}``.

    Each part of :func:`stream_parts` goes through the final norm with its scale frozen at that of the whole
    stream ``x``, then through the output head. A LayerNorm makes a part ``gamma * (part - mean(part)) / sigma``
    with ``sigma = sqrt(var(x) + eps)``; an RMSNorm (chapter 12) ``gamma * part / rms`` with
    ``rms = sqrt(mean(x**2) + eps)``; a model without a final norm leaves it as it is. The LayerNorm's ``beta`` and
    the head's bias are a part of their own (``final.bias``, zero when there are none). The parts add up to the
    model's difference.
    """
    stack = stack_of(model)
    _check_linear_readout(model, stack)
    seq, vocab = cache["embed"].shape[1], model.head.weight.shape[0]
    position = require_index("position", position, -seq, seq - 1)
    answer, other = (require_index(name, t, 0, vocab - 1) for name, t in (("answer", answer), ("other", other)))
    w_u = model.head.weight.detach()
    direction = (w_u[answer] - w_u[other]).detach()  # (d_model,)
    stream = cache[f"blocks.{len(stack.layers) - 1}.resid_post"][:, position]  # (batch, d_model)
    frozen, constant = _frozen_norm(stack.norm, stream)
    found = {name: frozen(part[:, position]) @ direction  # (batch, d_model) -> (batch,)
             for name, part in _stream_parts(model, cache).items()}
    bias = model.head.bias
    found["final.bias"] = (constant @ direction + (0 if bias is None else bias[answer] - bias[other])).detach().expand(
        stream.shape[0])  # (batch,)
    return found


def _frozen_norm(norm: nn.Module, stream: torch.Tensor):
    """The final ``norm`` as a linear map with its scale frozen at that of ``stream (batch, d_model)``: the map from a
    part ``(batch, d_model)`` to what the norm makes of it, and what the norm adds whatever its input, ``(d_model,)``.
    """
    if isinstance(norm, LayerNorm):
        sigma = torch.sqrt(stream.var(dim=-1, unbiased=False) + norm.eps)[:, None]  # (batch, 1): frozen
        gamma = norm.gamma.detach()
        return (lambda x: gamma * (x - x.mean(dim=-1, keepdim=True)) / sigma), norm.beta.detach()
    zero = torch.zeros_like(stream[0])  # (d_model,): RMSNorm and no norm add nothing
    if isinstance(norm, RMSNorm):
        rms = torch.sqrt(stream.pow(2).mean(dim=-1) + norm.eps)[:, None]  # (batch, 1): frozen
        gamma = norm.gamma.detach()
        return (lambda x: gamma * x / rms), zero
    return (lambda x: x), zero  # nn.Identity: a pre-norm model built with final_norm=False


def top_tokens(logits: torch.Tensor, k: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` likeliest tokens of ``logits (..., vocab)`` and their probabilities, ``(..., k)`` each."""
    require_rank("logits", logits, (1, 2, 3, 4), "(..., vocab)")
    probs = logits.softmax(dim=-1)
    p, ids = probs.topk(k, dim=-1)  # (..., k) each
    return ids, p


# ----------------------------------------------------------------------------- argument checks


def _check_pre_norm(stack) -> None:
    """A pre-norm stack: its stream is the sum of what the embeddings and every sublayer write."""
    if not stack.layers[0].norm_first:
        raise ValueError("model: expected a pre-norm model (cfg.norm_first=True), whose stream is the sum of what "
                         "each part writes, got a post-norm model (norm_first=False), whose blocks normalise the sum")


def _check_linear_readout(model, stack) -> None:
    """A pre-norm model whose final norm is a LayerNorm, an RMSNorm or none, and whose output head is linear."""
    _check_pre_norm(stack)
    if not isinstance(stack.norm, (LayerNorm, RMSNorm, nn.Identity)):
        raise TypeError(f"model: expected a final LayerNorm, RMSNorm or none, got {type(stack.norm).__name__}")
    if getattr(model.head, "transform", None) is not None:
        raise ValueError("model: expected a linear output head (cfg.head_transform=False), got a head with a "
                         f"{type(model.head.transform).__name__} (dense, activation, norm) before its output layer")
