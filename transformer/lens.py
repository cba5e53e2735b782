"""Reading the residual stream in the vocabulary (chapter 13).

- :func:`logit_lens`: decode the stream after each block through the final norm and the output head
  (nostalgebraist 2020): what would the model predict if it stopped there?
- :func:`logit_attribution`: split a logit difference into what the embeddings, every head, every
  attention bias and every feed-forward wrote into the stream (direct logit attribution). The final
  norm is made linear by freezing its scale: each part is centred and divided by the standard deviation
  of the whole stream, as the norm does to their sum.

Both read a cache of :func:`transformer.interp.run_with_cache` and call the model's own norm and head.
"""

from __future__ import annotations

import torch

from ._validate import require_index, require_rank
from .interp import _head_outputs, stack_of, unembed
from .norm import LayerNorm


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
    feed-forward (``blocks.i.ffn``, if any). They add up to ``cache["blocks.<last>.resid_post"]``."""
    parts = {"embed": cache["embed"]}
    for i, block in enumerate(stack_of(model).layers):
        heads = _head_outputs(model, cache, i)  # (batch, seq, heads, d_model)
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

    Each part of :func:`stream_parts` goes through the final LayerNorm with the scale ``sigma`` of the whole
    stream frozen, ``gamma * (part - mean(part)) / sigma``, then through the output head; the norm's ``beta``
    and the head's bias are parts of their own (``final.bias``). The parts add up to the model's difference.
    """
    stack = stack_of(model)
    if not isinstance(stack.norm, LayerNorm):
        raise TypeError(f"model: expected a final LayerNorm (a pre-norm model), got {type(stack.norm).__name__}")
    seq, vocab = cache["embed"].shape[1], model.head.weight.shape[0]
    position = require_index("position", position, -seq, seq - 1)
    answer, other = (require_index(name, t, 0, vocab - 1) for name, t in (("answer", answer), ("other", other)))
    w_u = model.head.weight.detach()
    direction = (w_u[answer] - w_u[other]).detach()  # (d_model,)
    stream = cache[f"blocks.{len(stack.layers) - 1}.resid_post"][:, position]  # (batch, d_model)
    sigma = torch.sqrt(stream.var(dim=-1, unbiased=False) + stack.norm.eps)  # (batch,): frozen
    gamma, beta = stack.norm.gamma.detach(), stack.norm.beta.detach()
    found = {}
    for name, part in stream_parts(model, cache).items():
        x = part[:, position]  # (batch, d_model)
        centred = x - x.mean(dim=-1, keepdim=True)  # (batch, d_model)
        found[name] = (gamma * centred / sigma[:, None]) @ direction  # (batch,)
    bias = model.head.bias
    found["final.bias"] = (beta @ direction + (0 if bias is None else bias[answer] - bias[other])).detach().expand(
        stream.shape[0])  # (batch,)
    return found


def top_tokens(logits: torch.Tensor, k: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` likeliest tokens of ``logits (..., vocab)`` and their probabilities, ``(..., k)`` each."""
    require_rank("logits", logits, (1, 2, 3, 4), "(..., vocab)")
    probs = logits.softmax(dim=-1)
    p, ids = probs.topk(k, dim=-1)  # (..., k) each
    return ids, p
