"""Three Transformers from the same blocks (chapter 10).

- :class:`EncoderDecoder` (the 2017 translator): the encoder sees the whole
  source; the decoder sees the target's past and, through cross-attention,
  the encoder's output.
- :class:`DecoderOnly` (GPT-like, generation): one causal stack, predicts the next token.
- :class:`EncoderOnly` (BERT-like, representation): one stack that sees every
  position, trained to fill in blanks.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_token_ids, shape_str
from .blocks import Decoder, Encoder, SelfAttentionStack
from .config import TransformerConfig
from .embedding import TokenEmbedding
from .heads import head_for
from .masks import causal_real_tokens, real_tokens
from .norm import make_norm
from .positional import ActsOn, positional_module


class _Embed(nn.Module):
    """Token embedding (plus token types), plus the positional encoding when the scheme adds one to the embeddings
    (``positions`` is None otherwise), an optional norm, then dropout."""

    def __init__(self, cfg: TransformerConfig, vocab_size: int, name: str = "ids"):
        super().__init__()
        self.name = name  # what the ids are called in an error: "src", "tgt" or "ids"
        self.tokens = TokenEmbedding(vocab_size, cfg.d_model, scale=cfg.scale_embeddings)
        # None when the scheme acts inside attention (RoPE, relative bias) or adds none (NoPE)
        self.positions = positional_module(cfg, ActsOn.EMBEDDINGS)
        # BERT's segments (sentence A or B) and the norm after its embeddings; absent from the 2017 model
        self.types = TokenEmbedding(cfg.type_vocab_size, cfg.d_model, scale=False) if cfg.type_vocab_size else None
        self.norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.fast) if cfg.embedding_norm else None
        self.drop = nn.Dropout(cfg.dropout)
        self.max_len, self.type_vocab_size = cfg.max_len, cfg.type_vocab_size

    def forward(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None, offset: int = 0) -> torch.Tensor:
        """``ids (batch, seq)`` -> ``(batch, seq, d_model)``; ``offset``: the position of the first of ``ids``
        (the length of a key/value cache). The models' ids enter here, and a chapter may call it alone: it is
        where they are checked, once (the models embed before they build their masks)."""
        require_token_ids(self.name, ids, self.tokens.vocab_size, ranks=(2,), max_len=self.max_len, offset=offset)
        if token_type_ids is not None:
            _check_types(token_type_ids, ids, self.type_vocab_size)
        x = self.tokens.lookup(ids)  # (batch, seq) -> (batch, seq, d_model)
        if self.types is not None:  # no types given: every token is of type 0
            x = x + self.types.lookup(torch.zeros_like(ids) if token_type_ids is None else token_type_ids)
        if self.positions is not None:  # the length was checked with the ids
            x = self.positions.add_to(x, offset)  # (batch, seq, d_model)
        return self.drop(x if self.norm is None else self.norm(x))  # (batch, seq, d_model)


class EncoderDecoder(nn.Module):
    """``forward(src (batch, T_e), tgt (batch, T_d)) -> logits (batch, T_d, vocab_size)``.

    ``cfg.tie_weights`` shares the target embedding with the output layer;
    ``cfg.share_embeddings`` also gives the source that same matrix.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = _Embed(cfg, cfg.src_vocab_size or cfg.vocab_size, "src")
        self.tgt_embed = _Embed(cfg, cfg.vocab_size, "tgt")
        if cfg.share_embeddings:
            self.src_embed.tokens = self.tgt_embed.tokens  # one matrix for both languages (the 2017 paper)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.head = head_for(cfg, self.tgt_embed.tokens)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``src (batch, T_e)`` -> memory ``(batch, T_e, d_model)`` and its padding mask ``(batch, 1, T_e)``."""
        x = self.src_embed(src)  # checks the ids: (batch, T_e) -> (batch, T_e, d_model)
        src_mask = real_tokens(src, self.cfg.pad_id)  # (batch, 1, T_e)
        return self.encoder(x, src_mask), src_mask

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``tgt (batch, T_d)`` and memory -> logits ``(batch, T_d, vocab_size)``."""
        x = self.tgt_embed(tgt)  # checks the ids: (batch, T_d) -> (batch, T_d, d_model)
        self_mask = causal_real_tokens(tgt, self.cfg.pad_id)  # (batch, T_d, T_d)
        return self.head(self.decoder(x, memory, self_mask, src_mask))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)


class DecoderOnly(nn.Module):
    """GPT-like: ``forward(ids (batch, seq)) -> logits (batch, seq, vocab_size)``, each position sees its past.

    ``causal_stack`` is the decoder of a decoder-only model: a decoder without
    cross-attention is a :data:`~transformer.blocks.SelfAttentionStack`, the
    very :class:`~transformer.blocks.Encoder` of chapter 6; the causal mask it
    is called with makes each position see only its past.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = _Embed(cfg, cfg.vocab_size)
        self.causal_stack = SelfAttentionStack(cfg)  # EncoderBlocks that the causal mask turns into a decoder
        self.head = head_for(cfg, self.embed.tokens)

    def hidden(self, ids: torch.Tensor, cache=None) -> torch.Tensor:
        """``ids (batch, seq)`` -> last hidden states ``(batch, seq, d_model)``: after the final norm, before the head.

        With a :class:`~transformer.kv_cache.KVCache` (chapter 12), ``ids`` are the positions that follow
        those already in the cache; their keys and values are added to it.
        """
        if cache is None:
            x = self.embed(ids)  # checks the ids: (batch, seq) -> (batch, seq, d_model)
            return self.causal_stack(x, causal_real_tokens(ids, self.cfg.pad_id))  # mask (batch, seq, seq)
        _check_cache(cache, len(self.causal_stack.layers))
        x = self.embed(ids, offset=len(cache))  # checks the ids: (batch, seq) -> (batch, seq, d_model)
        _check_cache_batch(cache, ids)
        mask = cache.self_mask(ids, self.cfg.pad_id)  # (batch, seq, offset + seq)
        return self.causal_stack(x, mask, cache)

    def forward(self, ids: torch.Tensor, cache=None) -> torch.Tensor:
        return self.head(self.hidden(ids, cache))  # (batch, seq, vocab_size)


class EncoderOnly(nn.Module):
    """BERT-like: ``encode(ids)`` -> hidden states ``(batch, seq, d_model)``; ``forward(ids)`` -> logits for blanks."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = _Embed(cfg, cfg.vocab_size)
        self.encoder = Encoder(cfg)
        self.head = head_for(cfg, self.embed.tokens)

    def encode(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``ids (batch, seq)`` and their types (segments, with ``cfg.type_vocab_size``) -> ``(batch, seq, d_model)``.
        """
        x = self.embed(ids, token_type_ids)  # checks the ids: (batch, seq) -> (batch, seq, d_model)
        return self.encoder(x, real_tokens(ids, self.cfg.pad_id))

    def forward(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encode(ids, token_type_ids))  # (batch, seq, vocab_size)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared tensor counted once."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())


# ----------------------------------------------------------------------------- argument checks

def _check_types(token_type_ids, ids: torch.Tensor, type_vocab_size: int) -> None:
    """Token types (segments) ``(batch, seq)`` like ``ids``, each in ``[0, type_vocab_size)``."""
    if type_vocab_size == 0:
        raise ValueError("token_type_ids: expected None, since the config has type_vocab_size=0 (no token types), "
                         f"got a {type(token_type_ids).__name__}")
    require_token_ids("token_type_ids", token_type_ids, type_vocab_size, what="types")
    if token_type_ids.shape != ids.shape:
        raise ValueError(f"token_type_ids: expected the shape of ids {shape_str(ids)}, got {shape_str(token_type_ids)}")


def _check_cache(cache, n_layers: int) -> None:
    """A :class:`~transformer.kv_cache.KVCache` with one layer per block."""
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list) or len(layers) != n_layers:
        raise TypeError(f"cache: expected a KVCache with {n_layers} layers (KVCache({n_layers})), "
                        f"got {type(cache).__name__}")


def _check_cache_batch(cache, ids: torch.Tensor) -> None:
    """The batch of ``ids`` is the cache's."""
    if len(cache) and cache.layers[0].k.shape[0] != ids.shape[0]:
        raise ValueError(f"ids: expected the cache's batch of {cache.layers[0].k.shape[0]} sequences, "
                         f"got shape {shape_str(ids)}")
