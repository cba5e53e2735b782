"""Probes of assignment 10, the whole Transformer (kernel side: standard library, numpy and torch only).

The package's classes come from the name ``transformer`` the notebook's locked setup cell binds.
"""

from __future__ import annotations

import torch

PARTS = ["src_embed", "tgt_embed", "positions", "encoder", "decoder", "head"]


def train_step(user, cfg, state, src, tgt, pad_id, label_smoothing, steps):
    """``steps`` calls of train_step on the package's EncoderDecoder holding ``state``, with SGD (lr 0.1): the
    losses, the parameters after them, and the inputs after the calls."""
    package = user["transformer"]
    model = package.EncoderDecoder(package.TransformerConfig(**cfg))
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, args = [], []
    for _ in range(steps):   # each call its own copy of the inputs: a call may change them in place
        args = [src.clone(), tgt.clone()]
        losses.append(user["train_step"](model, opt, *args, pad_id, label_smoothing))
    return {"losses": losses, "params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "args": args}


def _build(user, cfg, seed):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return user["Translator"](user["transformer"].TransformerConfig(**cfg))


def translator(user, cfg, encoder, decoder, e_src, e_tgt, src, tgt, seed):
    """Translator(cfg) with the given weights in its encoder and decoder stacks (state dicts) and the given
    embedding matrices, in eval mode: its logits for ``src``, ``tgt``, and the inputs after the call."""
    model = _build(user, cfg, seed)
    model.eval()
    model.encoder.load_state_dict(encoder)
    model.decoder.load_state_dict(decoder)
    with torch.no_grad():
        model.src_embed.weight.copy_(e_src)
        model.tgt_embed.weight.copy_(e_tgt)
        out = model(src, tgt)
    return {"logits": out, "args": [src, tgt]}


def translator_named(user, cfg, e_src, e_tgt, src, tgt, x, h, seed):
    """Translator(cfg)'s parts called by their names, in eval mode, with the given embedding matrices copied into
    src_embed and tgt_embed: positions(x), src_embed(src), tgt_embed(tgt) and head(h)."""
    model = _build(user, cfg, seed)
    model.eval()
    with torch.no_grad():
        model.src_embed.weight.copy_(e_src)
        model.tgt_embed.weight.copy_(e_tgt)
        return {"positions": model.positions(x.clone()), "src_embed": model.src_embed(src.clone()),
                "tgt_embed": model.tgt_embed(tgt.clone()), "head": model.head(h.clone())}


def translator_parts(user, cfg, seed):
    """What the kernel sees of Translator(cfg): which of the named parts it has, the shapes of its embedding
    tables, and whether the head holds the target embedding's own matrix."""
    model = _build(user, cfg, seed)
    if not isinstance(model, torch.nn.Module):
        return {"module": False, "has": [False] * len(PARTS), "shapes": [[], []], "tied": False}
    tables = [getattr(getattr(model, n, None), "weight", None) for n in ("src_embed", "tgt_embed")]
    return {"module": True, "has": [hasattr(model, n) for n in PARTS],
            "shapes": [list(t.shape)[:4] if isinstance(t, torch.Tensor) else [] for t in tables],
            "tied": getattr(getattr(model, "head", None), "weight", None) is tables[1] and tables[1] is not None}
