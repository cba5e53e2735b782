"""Checks for the exercises of chapter 10: the whole Transformer."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from transformer.blocks import Decoder, Encoder
from transformer.config import TransformerConfig
from transformer.embedding import TokenEmbedding
from transformer.heads import OutputHead
from transformer.interop import copy_transformer
from transformer.positional import SinusoidalPositionalEncoding, sinusoidal_encoding

from . import references
from .core import Mistake, as_number, call, call_keeping, compare, fail, outputs, report
from .mistakes.a10 import CHANGED_BATCH_HINT, TRAIN_STEP_MISTAKES, TRANSLATOR_MISTAKES, TrainStep

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


def _count_mistakes() -> list[Mistake]:
    v, d, d_ff = BASE["vocab"], BASE["d_model"], BASE["d_ff"]
    right = base_model_counts()
    enc, dec, emb = right["encoder_layer"], right["decoder_layer"], v * d
    attention, ffn = 4 * d * d + 4 * d, d * d_ff + d_ff + d_ff * d + d
    return [
        Mistake("no biases", "the biases are missing: every linear layer has one (4 d in attention, d_ff + d in the "
                "feed-forward network).", enc - 4 * d - d_ff - d, "encoder_layer"),
        Mistake("no LayerNorms", "the two LayerNorms are missing: each has a gain and a bias of size d_model.",
                enc - 4 * d, "encoder_layer"),
        Mistake("no biases, no LayerNorms", "neither biases nor LayerNorms are counted.",
                enc - 4 * d - d_ff - d - 4 * d, "encoder_layer"),
        Mistake("one vector per LayerNorm", "each LayerNorm has two vectors (gain and bias), not one.", enc - 2 * d,
                "encoder_layer"),
        Mistake("attention per head", "the heads split W^Q, W^K, W^V (d_h = d_model / h each): attention has 4 d^2 "
                "weights in all, not 4 d^2 per head.", 8 * attention + ffn + 4 * d, "encoder_layer"),
        Mistake("one linear layer", "the feed-forward network has two linear layers, d -> d_ff and d_ff -> d.",
                enc - d_ff * d - d, "encoder_layer"),
        Mistake("one attention", "a decoder layer has two attentions: masked self-attention and cross-attention.",
                dec - attention, "decoder_layer"),
        Mistake("two LayerNorms", "a decoder layer has three add & norm steps, so three LayerNorms.", dec - 2 * d,
                "decoder_layer"),
        Mistake("no biases", "the biases are missing.", dec - 8 * d - d_ff - d, "decoder_layer"),
        Mistake("an encoder layer", "this is the count of an encoder layer.", enc, "decoder_layer"),
        Mistake("three embeddings", "the embedding is shared: source, target and output layer use one 37000 x 512 "
                "matrix, counted once.", right["model"] + 2 * emb, "model"),
        Mistake("two embeddings", "the embedding is counted twice; source, target and output layer all share one "
                "matrix.", right["model"] + emb, "model"),
        Mistake("no embedding", "the shared embedding (37000 x 512) is missing.", right["model"] - emb, "model"),
        Mistake("one layer each", "the encoder and the decoder each have 6 layers.", emb + enc + dec, "model"),
        Mistake("the paper's 65M", "65M is the paper's rounded figure; count the parameters exactly.", 65_000_000,
                "model"),
        Mistake("trained positions", "the sinusoidal positional encodings are fixed: they have no parameters.",
                right["model"] + 2 * 512 * d, "model"),
    ]


PARAMETER_COUNT_MISTAKES = _count_mistakes()


def check_parameter_count(counts) -> None:
    """``counts = {"encoder_layer": ..., "decoder_layer": ..., "model": ...}`` for the 2017 base model, exact."""
    __tracebackhide__ = True
    keys = ("encoder_layer", "decoder_layer", "model")
    if not isinstance(counts, dict):
        fail("✗ parameter count", [f"expected a dict with keys {list(keys)}, got {type(counts).__name__}"])
    missing = [k for k in keys if k not in counts]
    if missing:
        fail("✗ parameter count", [f"expected a dict with keys {list(keys)}, missing {missing}"])
    right = base_model_counts()
    problems = []
    for key in keys:
        value = as_number(counts[key])
        if value is None:
            problems.append(f"{key}: expected a number, got {type(counts[key]).__name__}")
            continue
        if not math.isfinite(value):
            problems.append(f"{key}: expected a finite number, got {value}")
            continue
        if abs(value - right[key]) > 0.5:
            problems.append(f"{key}: {value:.0f} is not the right count (tolerance: exact)")
            for mistake in PARAMETER_COUNT_MISTAKES:
                if mistake.part == key and abs(value - mistake.wrong) <= 0.5:
                    problems.append(f"Hint: {mistake.hint}")
                    break
    report("parameter count", problems)


# ----------------------------------------------------------------- the training step


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


def _two_steps(step, start, src, tgt, pad_id, smoothing) -> tuple[torch.Tensor, torch.Tensor]:
    """Two calls of ``step`` on a copy of ``start`` with Adam: the two losses, and every parameter after them."""
    model = copy.deepcopy(start)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = [step(model, optimizer, src, tgt, pad_id, smoothing) for _ in range(2)]
    return torch.tensor(losses), torch.cat([p.detach().flatten() for p in model.parameters()])


def _keeping_the_batch(fn: Callable, args: tuple, name: str, names: tuple):
    """``fn(*args)``, failing when it changed the batch (``names`` says which arguments are ``src`` and ``tgt``) in
    place: it comes back next epoch."""
    __tracebackhide__ = True
    return call_keeping(fn, args, name, names, ["the same batch comes back in the next epoch, so {what} must stay as "
                                                "it was given", f"Hint: {CHANGED_BATCH_HINT}"])


def check_train_step(fn: Callable, seed: int = 0) -> None:
    """``fn(model, optimizer, src, tgt, pad_id, label_smoothing) -> float``: one teacher-forced step (atol 1e-5)."""
    __tracebackhide__ = True
    pad_id, smoothing = 0, 0.1
    src, tgt = _step_batch(seed)
    start = references.translator(seed)
    student = copy.deepcopy(start)
    optimizer = torch.optim.Adam(student.parameters(), lr=0.01)
    got = []
    for i in range(2):
        loss = _keeping_the_batch(fn, (student, optimizer, src, tgt, pad_id, smoothing), f"train_step (step {i + 1})",
                                  (None, None, "src", "tgt"))
        if isinstance(loss, torch.Tensor):
            fail("✗ train_step", ["returned a tensor; return the loss as a Python float with loss.item()"])
        if as_number(loss) is None or not isinstance(loss, (int, float, np.number)):  # a number, not an array
            fail("✗ train_step", [f"expected the loss as a float, got {type(loss).__name__}"])
        got.append(float(as_number(loss)))
    expected_losses, expected_params = _two_steps(TrainStep(), start, src, tgt, pad_id, smoothing)
    wrong = outputs(TRAIN_STEP_MISTAKES, start, src, tgt, pad_id, smoothing, run=_two_steps)
    loss_mistakes = {hint: losses for hint, (losses, _) in wrong.items()}
    param_mistakes = {hint: params for hint, (_, params) in wrong.items()}
    problems = compare(torch.tensor(got), expected_losses, ("step",), atol=1e-5, rtol=1e-5, mistakes=loss_mistakes,
                       what="losses of two steps")
    if problems:
        report("train_step", problems)
    params = torch.cat([p.detach().flatten() for p in student.parameters()])
    report("train_step", compare(params, expected_params, ("parameter",),
                                 mistakes=param_mistakes, what="parameters after two steps"))


# ----------------------------------------------------------------- the whole model


def reference_logits(theirs: nn.Transformer, e_src: torch.Tensor, e_tgt: torch.Tensor, src: torch.Tensor,
                     tgt: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Logits of the whole model with ``nn.Transformer`` doing the blocks: ``(batch, T_d, vocab)``."""
    d = e_src.shape[1]
    table = sinusoidal_encoding(max(src.shape[1], tgt.shape[1]), d)
    xs = e_src[src] * math.sqrt(d) + table[: src.shape[1]]  # (batch, T_e, d_model)
    xt = e_tgt[tgt] * math.sqrt(d) + table[: tgt.shape[1]]  # (batch, T_d, d_model)
    t = tgt.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = theirs(xs, xt, tgt_mask=torch.ones(t, t, dtype=torch.bool).triu(1),  # torch: True = blocked
                   src_key_padding_mask=src == pad_id, tgt_key_padding_mask=tgt == pad_id,
                   memory_key_padding_mask=src == pad_id)
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
                f"{tuple(model.src_embed.weight.shape)}",
                "Hint: the source has its own vocabulary, cfg.src_vocab_size."]
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


def _loaded(model, theirs: nn.Transformer, e_src: torch.Tensor, e_tgt: torch.Tensor):
    """Copy ``nn.Transformer``'s blocks and the two embedding tables into ``model``; eval mode."""
    copy_transformer(model.encoder, model.decoder, theirs)
    with torch.no_grad():
        model.src_embed.weight.copy_(e_src)
        model.tgt_embed.weight.copy_(e_tgt)
    return model.eval()


def _run(cls, cfg, theirs, e_src, e_tgt, src, tgt) -> torch.Tensor:
    with torch.no_grad():
        return _loaded(cls(cfg), theirs, e_src, e_tgt)(src, tgt)


def check_translator(cls: Callable, seed: int = 0) -> None:
    """``cls(cfg)`` assembles an encoder-decoder from the package's blocks; it must equal ``nn.Transformer`` (1e-4)."""
    __tracebackhide__ = True
    cfg = references.tiny_config(n_layers=2, final_norm=True)
    with references.seeded(seed):
        model = call(cls, (cfg,), "Translator(cfg)")
    problems = _structure(model, cfg)
    if problems:
        report("Translator", problems)
    theirs = references.transformer(cfg, seed)
    src, tgt, e_src, e_tgt = _translator_case(seed, cfg)
    try:
        _loaded(model, theirs, e_src, e_tgt)
    except (ValueError, AttributeError) as exc:
        fail("✗ Translator", [f"could not copy nn.Transformer's weights into encoder and decoder: {exc}",
                              "build them with Encoder(cfg) and Decoder(cfg)"])
    got = _keeping_the_batch(model, (src, tgt), "Translator.forward(src, tgt)", ("src", "tgt"))
    expected = reference_logits(theirs, e_src, e_tgt, src, tgt)
    mistakes = outputs(TRANSLATOR_MISTAKES, cfg, theirs, e_src, e_tgt, src, tgt, run=_run)
    report("Translator", compare(got, expected, ("batch", "T_d", "vocab"), atol=1e-4, rtol=1e-4, mistakes=mistakes,
                                 what="logits"))


MISTAKES = {
    "check_parameter_count": PARAMETER_COUNT_MISTAKES,
    "check_train_step": TRAIN_STEP_MISTAKES,
    "check_translator": TRANSLATOR_MISTAKES,
}
