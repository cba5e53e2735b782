"""One seeded reference per exercise that is checked against a module.

Each function builds PyTorch's own module (or, for the training step, the
package's translator) from a seed, and leaves the caller's random state alone:
a notebook that runs a check draws the same random numbers afterwards as it
would have without it. Where PyTorch starts a weight at a special value (biases
at 0, norm gains at 1) that would hide a mistake, the reference moves it away
from there, again from the seed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from transformer.config import TransformerConfig
from transformer.model import EncoderDecoder


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside the block, ``torch.manual_seed(seed)``; outside it, the caller's random state, untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def elman_rnn(input_size: int, hidden_size: int, seed: int) -> nn.RNN:
    """Chapter 0, ``ElmanRNN``: ``nn.RNN(input_size, hidden_size, batch_first=True)`` as seeded."""
    with seeded(seed):
        return nn.RNN(input_size, hidden_size, batch_first=True)


def embedding(vocab_size: int, d_model: int, generator: torch.Generator) -> nn.Embedding:
    """Chapter 2, ``Embedding``: an ``nn.Embedding`` with rows drawn from ``generator``, std ``1/sqrt(d_model)``."""
    with seeded(0):
        theirs = nn.Embedding(vocab_size, d_model)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(vocab_size, d_model, generator=generator) / math.sqrt(d_model))
    return theirs


def multihead_attention(d_model: int, n_heads: int, seed: int) -> nn.MultiheadAttention:
    """Chapter 5, ``MultiHeadAttention``: ``nn.MultiheadAttention(batch_first=True)`` with non-zero biases."""
    with seeded(seed):
        theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        theirs.in_proj_bias.copy_(0.5 * torch.randn(3 * d_model, generator=g))
        theirs.out_proj.bias.copy_(0.5 * torch.randn(d_model, generator=g))
    return theirs.eval()


def encoder_layer(d_model: int, n_heads: int, d_ff: int, norm_first: bool, seed: int) -> nn.TransformerEncoderLayer:
    """Chapter 6, ``EncoderBlock``: ``nn.TransformerEncoderLayer(batch_first=True, dropout=0.0)``,
    norm gains near 1 and every bias near 0, but none exactly."""
    with seeded(seed):
        theirs = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True,
                                            norm_first=norm_first)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if name.startswith("norm"):  # gamma near 1, beta near 0, but not exactly
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return theirs.eval()


def decoder_layer(d_model: int, n_heads: int, d_ff: int, seed: int) -> nn.TransformerDecoderLayer:
    """Chapter 8, ``DecoderBlock``: PyTorch's post-norm decoder layer, random weights everywhere
    (biases around 0, norm gains around 1)."""
    with seeded(seed):
        layer = nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if p.dim() == 1:  # biases around 0, LayerNorm gains around 1
                gain = name.startswith("norm") and name.endswith("weight")
                p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if gain else 0.0))
    return layer.eval()


def tied_embedding(vocab_size: int, d_model: int, seed: int) -> nn.Embedding:
    """Chapter 9, the tied ``OutputHead``: the embedding it ties to, ``N(0, 1)`` entries from the seed."""
    with seeded(seed):
        emb = nn.Embedding(vocab_size, d_model)
    with torch.no_grad():
        emb.weight.copy_(torch.randn(vocab_size, d_model, generator=torch.Generator().manual_seed(seed)))
    return emb


def tiny_config(**changes) -> TransformerConfig:
    """Chapter 10: the small translator of the training-step and translator exercises."""
    sizes = dict(vocab_size=11, src_vocab_size=13, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.0,
                 max_len=16)
    return TransformerConfig(**{**sizes, **changes})


def translator(seed: int) -> EncoderDecoder:
    """Chapter 10, ``train_step``: the package's translator of :func:`tiny_config`, as seeded."""
    with seeded(seed):
        return EncoderDecoder(tiny_config())


def transformer(cfg: TransformerConfig, seed: int) -> nn.Transformer:
    """Chapter 10, ``Translator``: ``nn.Transformer(batch_first=True, dropout=0.0)`` of ``cfg``'s sizes,
    every weight moved by a little noise from the seed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nn.Transformer warns about its nested-tensor fast path
        with seeded(seed):
            theirs = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.decoder_layers, cfg.d_ff,
                                    dropout=0.0, batch_first=True)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return theirs.eval()


def german_table() -> torch.Tensor:
    """The chapter's bigram toy: logits of the next token (column) after the previous token (row).

    Ids: <pad> 0, <sos> 1, <eos> 2, <unk> 3, Ich 4, habe 5, einen 6, Apfel 7, gegessen 8, Brot 9.
    """
    table = torch.zeros(10, 10)
    table[:, [0, 1, 3]] = -2.0
    for prev, nxt, logit in [(1, 4, 4), (4, 5, 4), (5, 6, 3), (5, 9, 2.5), (5, 8, 1), (6, 7, 4), (6, 9, 1),
                             (7, 8, 4), (7, 2, 1), (9, 8, 4), (9, 2, 1), (8, 2, 5), (2, 2, 5)]:
        table[prev, nxt] += logit
    return table


def history_model(seed: int, vocab: int = 12, eos_id: int = 2):
    """Next-token logits that depend on the last two tokens and the length; they never favour eos."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(vocab, vocab, generator=g), torch.randn(vocab, vocab, generator=g)
    c = torch.randn(16, vocab, generator=g)
    a[:, eos_id] = b[:, eos_id] = c[:, eos_id] = -10.0

    def next_logits(ids):
        prev = ids[-2] if len(ids) > 1 else 0
        return a[ids[-1]] + b[prev] + c[len(ids) % 16]
    return next_logits
