"""Checks for the exercises of chapter 10: the whole Transformer."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..blocks import Decoder, Encoder
from ..config import TransformerConfig
from ..embedding import TokenEmbedding
from ..heads import OutputHead
from ..interop import copy_transformer
from ..model import EncoderDecoder
from ..positional import SinusoidalPositionalEncoding, sinusoidal_encoding
from .core import call, compare, fail, report

__all__ = ["check_parameter_count", "check_train_step", "check_translator", "base_model_counts"]

BASE = {"vocab": 37000, "d_model": 512, "d_ff": 2048, "layers": 6}


def base_model_counts(vocab: int = 37000, d: int = 512, d_ff: int = 2048, layers: int = 6) -> dict[str, int]:
    """Parameters of the 2017 base model, by formula: one shared embedding, post-norm, no final norm."""
    attention = 4 * d * d + 4 * d  # W^Q, W^K, W^V, W^O and their biases
    ffn = d * d_ff + d_ff + d_ff * d + d  # two linear layers with biases
    norm = 2 * d  # gamma and beta
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return {"encoder_layer": encoder_layer, "decoder_layer": decoder_layer,
            "model": vocab * d + layers * (encoder_layer + decoder_layer)}


def _count_mistakes() -> dict[str, dict[str, int]]:
    v, d, d_ff, n = BASE["vocab"], BASE["d_model"], BASE["d_ff"], BASE["layers"]
    right = base_model_counts()
    enc, dec, emb = right["encoder_layer"], right["decoder_layer"], v * d
    attention, ffn = 4 * d * d + 4 * d, d * d_ff + d_ff + d_ff * d + d
    return {
        "encoder_layer": {
            "the biases are missing: every linear layer has one (4 d in attention, d_ff + d in the feed-forward "
            "network).": enc - 4 * d - d_ff - d,
            "the two LayerNorms are missing: each has a gain and a bias of size d_model.": enc - 4 * d,
            "neither biases nor LayerNorms are counted.": enc - 4 * d - d_ff - d - 4 * d,
            "each LayerNorm has two vectors (gain and bias), not one.": enc - 2 * d,
            "the heads split W^Q, W^K, W^V (d_h = d_model / h each): attention has 4 d^2 weights in all, "
            "not 4 d^2 per head.": 8 * attention + ffn + 4 * d,
            "the feed-forward network has two linear layers, d -> d_ff and d_ff -> d.": enc - d_ff * d - d,
        },
        "decoder_layer": {
            "a decoder layer has two attentions: masked self-attention and cross-attention.": dec - attention,
            "a decoder layer has three add & norm steps, so three LayerNorms.": dec - 2 * d,
            "the biases are missing.": dec - 8 * d - d_ff - d,
            "this is the count of an encoder layer.": enc,
        },
        "model": {
            "the embedding is shared: source, target and output layer use one 37000 x 512 matrix, counted once.":
                right["model"] + 2 * emb,
            "the embedding is counted twice; source, target and output layer all share one matrix.":
                right["model"] + emb,
            "the shared embedding (37000 x 512) is missing.": right["model"] - emb,
            "the encoder and the decoder each have 6 layers.": emb + enc + dec,
            "65M is the paper's rounded figure; count the parameters exactly.": 65_000_000,
            "the sinusoidal positional encodings are fixed: they have no parameters.": right["model"] + 2 * 512 * d,
        },
    }


def check_parameter_count(counts) -> None:
    """``counts = {"encoder_layer": ..., "decoder_layer": ..., "model": ...}`` for the 2017 base model, exact."""
    __tracebackhide__ = True
    keys = ("encoder_layer", "decoder_layer", "model")
    if not isinstance(counts, dict):
        fail("✗ parameter count", [f"expected a dict with keys {list(keys)}, got {type(counts).__name__}"])
    missing = [k for k in keys if k not in counts]
    if missing:
        fail("✗ parameter count", [f"expected a dict with keys {list(keys)}, missing {missing}"])
    right, mistakes = base_model_counts(), _count_mistakes()
    problems = []
    for key in keys:
        value = counts[key]
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{key}: expected a number, got {type(value).__name__}")
            continue
        if not math.isfinite(value):
            problems.append(f"{key}: expected a finite number, got {value}")
            continue
        if abs(value - right[key]) > 0.5:
            problems.append(f"{key}: {value:.0f} is not the right count (tolerance: exact)")
            for text, wrong in mistakes[key].items():
                if abs(value - wrong) <= 0.5:
                    problems.append(f"Hint: {text}")
                    break
    report("parameter count", problems)


# ----------------------------------------------------------------- the training step


def _tiny_config(**kw) -> TransformerConfig:
    base = dict(vocab_size=11, src_vocab_size=13, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.0, max_len=16)
    base.update(kw)
    return TransformerConfig(**base)


def _random_ids(g: torch.Generator, batch: int, seq: int, vocab: int, lengths, specials: bool) -> torch.Tensor:
    """Padded ids ``(batch, seq)``: words from 3..vocab-1, ``<sos> = 1 ... <eos> = 2`` when ``specials``."""
    out = torch.zeros(batch, seq, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(3, vocab, (n,), generator=g)
        if specials:
            words = torch.cat([torch.tensor([1]), words, torch.tensor([2])])
        out[row, : len(words)] = words
    return out


def _step_batch(seed: int):
    g = torch.Generator().manual_seed(seed)
    src = _random_ids(g, 4, 6, 13, [6, 4, 5, 2], specials=False)
    tgt = _random_ids(g, 4, 7, 11, [5, 3, 2, 4], specials=True)
    return src, tgt


def _reference_steps(model, src, tgt, pad_id, smoothing, steps=2, *, shift=True, ignore_pad=True,
                     use_smoothing=True, zero_grad=True, step=True, reduction="mean"):
    """Two training steps written out, with switches that reproduce known mistakes."""
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        model.train()
        dec_in = tgt[:, :-1]
        labels = tgt[:, 1:] if shift else tgt[:, :-1]
        logits = model(src, dec_in)  # (batch, T - 1, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=pad_id if ignore_pad else -100,
                               label_smoothing=smoothing if use_smoothing else 0.0, reduction=reduction)
        if zero_grad:
            opt.zero_grad()
        loss.backward()
        if step:
            opt.step()
        losses.append(loss.item())
    return torch.tensor(losses), torch.cat([p.detach().flatten() for p in model.parameters()])


def check_train_step(fn: Callable, seed: int = 0) -> None:
    """``fn(model, optimizer, src, tgt, pad_id, label_smoothing) -> float``: one teacher-forced step (atol 1e-5)."""
    __tracebackhide__ = True
    pad_id, smoothing = 0, 0.1
    src, tgt = _step_batch(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        start = EncoderDecoder(_tiny_config())
    student = copy.deepcopy(start)
    optimizer = torch.optim.Adam(student.parameters(), lr=0.01)
    got = []
    for i in range(2):
        loss = call(fn, (student, optimizer, src, tgt, pad_id, smoothing), f"train_step (step {i + 1})")
        if isinstance(loss, torch.Tensor):
            fail("✗ train_step", ["returned a tensor; return the loss as a Python float with loss.item()"])
        if isinstance(loss, bool) or not isinstance(loss, (int, float)):
            fail("✗ train_step", [f"expected the loss as a float, got {type(loss).__name__}"])
        got.append(float(loss))
    expected_losses, expected_params = _reference_steps(copy.deepcopy(start), src, tgt, pad_id, smoothing)
    variants = {
        "the labels must be the decoder input shifted by one: input tgt[:, :-1], labels tgt[:, 1:].":
            dict(shift=False),
        "the padding is counted in the loss: pass ignore_index=pad_id to the cross-entropy.": dict(ignore_pad=False),
        "label_smoothing is ignored: pass it to the cross-entropy.": dict(use_smoothing=False),
        "gradients pile up from step to step: call optimizer.zero_grad() before loss.backward().":
            dict(zero_grad=False),
        "the parameters never change: call optimizer.step() after loss.backward().": dict(step=False),
        "the loss is summed over the tokens; take the mean (the default of F.cross_entropy).": dict(reduction="sum"),
    }
    loss_mistakes, param_mistakes = {}, {}
    for text, switches in variants.items():
        losses, params = _reference_steps(copy.deepcopy(start), src, tgt, pad_id, smoothing, **switches)
        loss_mistakes[text], param_mistakes[text] = losses, params
    problems = compare(torch.tensor(got), expected_losses, ("step",), atol=1e-5, rtol=1e-5, mistakes=loss_mistakes,
                       what="losses of two steps")
    if problems:
        report("train_step", problems)
    params = torch.cat([p.detach().flatten() for p in student.parameters()])
    report("train_step", compare(params, expected_params, ("parameter",), atol=1e-5, rtol=1e-4,
                                 mistakes=param_mistakes, what="parameters after two steps"))


# ----------------------------------------------------------------- the whole model


def _randomize(module: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))


def _torch_transformer(cfg: TransformerConfig, seed: int) -> nn.Transformer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            theirs = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.decoder_layers, cfg.d_ff,
                                    dropout=0.0, batch_first=True)
    _randomize(theirs, seed + 1)
    return theirs.eval()


def reference_logits(theirs: nn.Transformer, e_src: torch.Tensor, e_tgt: torch.Tensor, src: torch.Tensor,
                     tgt: torch.Tensor, pad_id: int = 0, causal: bool = True, src_pad: bool = True,
                     memory_pad: bool = True, tgt_pad: bool = True, positions: str = "both",
                     scale: bool = True) -> torch.Tensor:
    """Logits of the whole model with ``nn.Transformer`` doing the blocks; switches reproduce mistakes."""
    d = e_src.shape[1]
    table = sinusoidal_encoding(max(src.shape[1], tgt.shape[1]), d)
    factor = math.sqrt(d) if scale else 1.0
    xs = e_src[src] * factor + (table[: src.shape[1]] if positions in ("both", "source") else 0.0)
    xt = e_tgt[tgt] * factor + (table[: tgt.shape[1]] if positions in ("both", "target") else 0.0)
    t = tgt.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = theirs(xs, xt,
                   tgt_mask=torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None,  # torch: True = blocked
                   src_key_padding_mask=(src == pad_id) if src_pad else None,
                   tgt_key_padding_mask=(tgt == pad_id) if tgt_pad else None,
                   memory_key_padding_mask=(src == pad_id) if memory_pad else None)
    return (h @ e_tgt.T).detach()  # (batch, T_d, d_model) @ (d_model, vocab) -> (batch, T_d, vocab)


_PARTS = {
    "src_embed": (TokenEmbedding, "TokenEmbedding(cfg.src_vocab_size, cfg.d_model)"),
    "tgt_embed": (TokenEmbedding, "TokenEmbedding(cfg.vocab_size, cfg.d_model)"),
    "positions": (SinusoidalPositionalEncoding, "SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)"),
    "encoder": (Encoder, "Encoder(cfg)"),
    "decoder": (Decoder, "Decoder(cfg)"),
    "head": (OutputHead, "OutputHead(cfg.d_model, cfg.vocab_size, tie_to=self.tgt_embed)"),
}


def _structure(model, cfg: TransformerConfig) -> list[str]:
    if not isinstance(model, nn.Module):
        return [f"Translator(cfg) should be an nn.Module, got {type(model).__name__}"]
    for name, (kind, how) in _PARTS.items():
        part = getattr(model, name, None)
        if not isinstance(part, kind):
            got = "nothing" if part is None else type(part).__name__
            return [f"expected an attribute {name} = {how}, got {got}"]
    src_v, tgt_v = cfg.src_vocab_size or cfg.vocab_size, cfg.vocab_size
    if tuple(model.src_embed.weight.shape) != (src_v, cfg.d_model):
        return [f"src_embed: expected a table of shape (src_vocab={src_v}, d_model={cfg.d_model}), got "
                f"{tuple(model.src_embed.weight.shape)}", "Hint: the source has its own vocabulary, cfg.src_vocab_size."]
    if tuple(model.tgt_embed.weight.shape) != (tgt_v, cfg.d_model):
        return [f"tgt_embed: expected a table of shape (vocab={tgt_v}, d_model={cfg.d_model}), got "
                f"{tuple(model.tgt_embed.weight.shape)}"]
    if model.head.weight is not model.tgt_embed.weight:
        return ["head: expected the output layer to share the target embedding matrix",
                "Hint: OutputHead(cfg.d_model, cfg.vocab_size, tie_to=self.tgt_embed) ties them."]
    return []


def _translator_case(seed: int, cfg: TransformerConfig, batch: int = 3):
    g = torch.Generator().manual_seed(seed)
    src_v = cfg.src_vocab_size or cfg.vocab_size
    t_e, t_d = 6, 5
    src = _random_ids(g, batch, t_e, src_v, [t_e, 4, 2][:batch], specials=False)
    tgt = _random_ids(g, batch, t_d, cfg.vocab_size, [3, 1, 2][:batch], specials=True)
    e_src = torch.randn(src_v, cfg.d_model, generator=g) / math.sqrt(cfg.d_model)
    e_tgt = torch.randn(cfg.vocab_size, cfg.d_model, generator=g) / math.sqrt(cfg.d_model)
    return src, tgt, e_src, e_tgt


def check_translator(cls: Callable, seed: int = 0) -> None:
    """``cls(cfg)`` assembles an encoder-decoder from the package's blocks; it must equal ``nn.Transformer`` (1e-4)."""
    __tracebackhide__ = True
    cfg = _tiny_config(n_layers=2, final_norm=True)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = call(cls, (cfg,), "Translator(cfg)")
    problems = _structure(model, cfg)
    if problems:
        report("Translator", problems)
    theirs = _torch_transformer(cfg, seed)
    try:
        copy_transformer(model.encoder, model.decoder, theirs)
    except (ValueError, AttributeError) as exc:
        fail("✗ Translator", [f"could not copy nn.Transformer's weights into encoder and decoder: {exc}",
                              "build them with Encoder(cfg) and Decoder(cfg)"])
    src, tgt, e_src, e_tgt = _translator_case(seed, cfg)
    with torch.no_grad():
        model.src_embed.weight.copy_(e_src)
        model.tgt_embed.weight.copy_(e_tgt)
    model.eval()
    got = call(model, (src, tgt), "Translator.forward(src, tgt)")
    expected = reference_logits(theirs, e_src, e_tgt, src, tgt)
    variants = {
        "the decoder sees the future: its self-attention needs causal_mask(T_d) (combined with the padding mask "
        "of tgt by &).": dict(causal=False),
        "the encoder attends to padding: pass padding_mask(src, pad_id) to the encoder.": dict(src_pad=False),
        "the cross-attention attends to the source's padding: pass the source's padding mask to the decoder "
        "as well (its memory_mask).": dict(memory_pad=False),
        "padding of the source is ignored everywhere: build padding_mask(src, pad_id) and pass it to the encoder "
        "and to the decoder's cross-attention.": dict(src_pad=False, memory_pad=False),
        "the decoder's self-attention also needs the target's padding mask: "
        "causal_mask(T_d) & padding_mask(tgt, pad_id).": dict(tgt_pad=False),
        "no positional encoding: add self.positions to both embedded sequences.": dict(positions="none"),
        "only the source gets positional encodings; the target needs them too.": dict(positions="source"),
        "only the target gets positional encodings; the source needs them too.": dict(positions="target"),
        "the embeddings are not scaled by sqrt(d_model): use TokenEmbedding's default scale=True.": dict(scale=False),
    }
    mistakes = {text: reference_logits(theirs, e_src, e_tgt, src, tgt, **kw) for text, kw in variants.items()}
    report("Translator", compare(got, expected, ("batch", "T_d", "vocab"), atol=1e-4, rtol=1e-4, mistakes=mistakes,
                                 what="logits"))
