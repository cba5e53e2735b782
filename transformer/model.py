"""Three Transformers from the same blocks (chapter 10).

- :class:`EncoderDecoder` (the 2017 translator): the encoder sees the whole
  source; the decoder sees the target's past and, through cross-attention,
  the encoder's output.
- :class:`DecoderOnly` (GPT-like, generation): one causal stack, predicts the next token.
- :class:`EncoderOnly` (BERT-like, representation): one stack that sees every
  position, trained to fill in blanks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from ._validate import require_rank
from .blocks import Decoder, Encoder
from .config import TransformerConfig
from .embedding import TokenEmbedding
from .heads import OutputHead
from .masks import causal_padding_mask, padding_mask
from .multihead import MultiHeadAttention
from .positional import positional_module


def _check_ids(name: str, ids: torch.Tensor) -> None:
    require_rank(name, ids, (2,), "(batch, seq)")


class _Embed(nn.Module):
    """Token embedding, plus an added positional encoding, then dropout."""

    def __init__(self, cfg: TransformerConfig, vocab_size: int):
        super().__init__()
        self.tokens = TokenEmbedding(vocab_size, cfg.d_model)
        added = positional_module(cfg, "embeddings")  # None when the scheme acts inside attention, or for NoPE
        self.positions = nn.Identity() if added is None else added
        self.drop = nn.Dropout(cfg.dropout)
        self.max_len = cfg.max_len

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.shape[1] > self.max_len:
            raise ValueError(f"ids: expected at most max_len={self.max_len} positions, got {ids.shape[1]}")
        return self.drop(self.positions(self.tokens(ids)))  # (batch, seq) -> (batch, seq, d_model)


class EncoderDecoder(nn.Module):
    """``forward(src (batch, T_e), tgt (batch, T_d)) -> logits (batch, T_d, vocab_size)``.

    ``cfg.tie_weights`` shares the target embedding with the output layer;
    ``cfg.share_embeddings`` also gives the source that same matrix.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = _Embed(cfg, cfg.src_vocab_size or cfg.vocab_size)
        self.tgt_embed = _Embed(cfg, cfg.vocab_size)
        if cfg.share_embeddings:
            self.src_embed.tokens = self.tgt_embed.tokens  # one matrix for both languages (the 2017 paper)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.head = OutputHead(cfg.d_model, cfg.vocab_size, self.tgt_embed.tokens if cfg.tie_weights else None)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``src (batch, T_e)`` -> memory ``(batch, T_e, d_model)`` and its padding mask ``(batch, 1, T_e)``."""
        _check_ids("src", src)
        src_mask = padding_mask(src, self.cfg.pad_id)
        return self.encoder(self.src_embed(src), src_mask), src_mask

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``tgt (batch, T_d)`` and memory -> logits ``(batch, T_d, vocab_size)``."""
        _check_ids("tgt", tgt)
        self_mask = causal_padding_mask(tgt, self.cfg.pad_id)  # (batch, T_d, T_d)
        return self.head(self.decoder(self.tgt_embed(tgt), memory, self_mask, src_mask))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)


class DecoderOnly(nn.Module):
    """GPT-like: ``forward(ids (batch, T)) -> logits (batch, T, vocab_size)``, each position sees its past.

    ``causal_stack`` is the decoder of a decoder-only model: a decoder without
    cross-attention is a stack of self-attention and feed-forward blocks, the
    very :class:`~transformer.blocks.Encoder` of chapter 6; the causal mask it
    is called with makes each position see only its past.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = _Embed(cfg, cfg.vocab_size)
        self.causal_stack = Encoder(cfg)  # EncoderBlocks that the causal mask turns into a decoder
        self.head = OutputHead(cfg.d_model, cfg.vocab_size, self.embed.tokens if cfg.tie_weights else None)

    @property
    def blocks(self) -> Encoder:
        """The former name of :attr:`causal_stack`, which chapter 10 still uses."""
        return self.causal_stack

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _check_ids("ids", ids)
        mask = causal_padding_mask(ids, self.cfg.pad_id)  # (batch, T, T)
        return self.head(self.causal_stack(self.embed(ids), mask))


class EncoderOnly(nn.Module):
    """BERT-like: ``encode(ids)`` -> hidden states ``(batch, T, d_model)``; ``forward(ids)`` -> logits for blanks."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = _Embed(cfg, cfg.vocab_size)
        self.encoder = Encoder(cfg)
        self.head = OutputHead(cfg.d_model, cfg.vocab_size, self.embed.tokens if cfg.tie_weights else None)

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        _check_ids("ids", ids)
        return self.encoder(self.embed(ids), padding_mask(ids, self.cfg.pad_id))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(ids))


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared tensor counted once."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())


@contextmanager
def recorded_attention(modules: dict[str, nn.Module]) -> Iterator[dict[str, list[torch.Tensor]]]:
    """Record the attention weights of :class:`~transformer.multihead.MultiHeadAttention` modules (chapter 10).

    Inside the ``with`` block, every call of ``modules[name]`` also appends its
    weights ``(batch, heads, T_q, T_k)`` to ``record[name]``. A forward hook
    calls the module a second time with ``return_weights=True``; the model
    itself is not changed, and the hooks are removed on leaving the block.
    """
    record: dict[str, list[torch.Tensor]] = {name: [] for name in modules}
    handles = []
    for name, module in modules.items():
        if not isinstance(module, MultiHeadAttention):
            raise TypeError(f"modules[{name!r}]: expected a MultiHeadAttention, got {type(module).__name__}")

        def hook(mod, args, kwargs, output, name=name):
            with torch.no_grad():
                _, weights = mod.forward(*args, **{**kwargs, "return_weights": True})  # forward() skips the hooks
            record[name].append(weights.detach())

        handles.append(module.register_forward_hook(hook, with_kwargs=True))
    try:
        yield record
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def cross_attention_weights(model: EncoderDecoder, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The cross-attention of every decoder layer: ``src (batch, T_e)``, ``tgt (batch, T_d)`` (decoder input).

    Returns ``(layers, batch, heads, T_d, T_e)``: row ``t`` is how the decoder
    position reading ``tgt[:, t]`` (and writing the next word) spreads its
    attention over the source words. The model is run in eval mode.
    """
    was_training = model.training
    model.eval()
    layers = {str(i): layer.cross_attn for i, layer in enumerate(model.decoder.layers)}
    with recorded_attention(layers) as record:
        model(src, tgt)
    model.train(was_training)
    return torch.stack([record[str(i)][0] for i in range(len(layers))])  # (layers, batch, heads, T_d, T_e)
