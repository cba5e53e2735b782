"""One small dataclass holds every choice a Transformer makes (chapter 10).

The defaults are the 2017 base model: d_model 512, 8 heads, d_ff 2048, 6
layers, post-norm, sinusoidal positions, output layer tied to the embedding.
With ``share_embeddings=True`` the source and the target also share that one
matrix, as in the paper (a 37000-token vocabulary common to both languages).

GPT-2 and BERT are configurations too (see :mod:`transformer.hf`): GPT-2 is
pre-norm with learned positions, ``activation="gelu_tanh"`` and
``scale_embeddings=False``; BERT adds ``type_vocab_size=2``,
``embedding_norm=True``, ``head_transform=True`` and ``head_bias=True``.
Llama (chapter 12) is one too: pre-norm with ``norm="rms"``, ``ffn="gated"`` with
``activation="silu"`` (SwiGLU), ``positional="rope"`` with ``rope_pairs="half"``,
``linear_bias=False``, and ``n_kv_heads`` below ``n_heads`` for grouped-query attention.
Every such field defaults to the 2017 model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import (
    require_bool,
    require_choice,
    require_divisible,
    require_int,
    require_kv_heads,
    require_number,
    require_optional_bool,
    require_positive_int,
    require_probability,
)
from .feedforward import ACTIVATIONS, FFN_KINDS
from .latent_attention import LatentConfig
from .moe import MoEConfig
from .positional import check_positional
from .rope_scaling import check_rope_scaling


@dataclass
class TransformerConfig:
    vocab_size: int = 37000  # target vocabulary (and source, unless src_vocab_size is set)
    src_vocab_size: int | None = None  # encoder-decoder only
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_layers: int = 6  # encoder layers; decoder layers too unless n_decoder_layers is set
    n_decoder_layers: int | None = None
    dropout: float = 0.1
    max_len: int = 512
    norm_first: bool = False  # False = post-norm (2017); True = pre-norm (today)
    norm: str = "layer"  # "layer" or "rms"
    norm_eps: float = 1e-5
    final_norm: bool | None = None  # a norm after the last block; None = only with pre-norm
    activation: str = "relu"
    positional: str = "sinusoidal"  # sinusoidal | learned | relative | rope | none
    tie_weights: bool = True  # output layer shares the (target) embedding matrix
    share_embeddings: bool = False  # encoder-decoder: source and target share one embedding (one vocabulary)
    pad_id: int | None = 0  # the id of <pad>, hidden from attention; None = no padding mask
    fast: bool = False  # PyTorch's fused paths, same numbers: attention, q/k/v as one product, LayerNorm
    scale_embeddings: bool = True  # token embeddings times sqrt(d_model) (2017); GPT-2 and BERT: False
    embedding_norm: bool = False  # a norm after the summed embeddings (BERT)
    type_vocab_size: int = 0  # token-type (segment) embeddings added to the tokens (BERT: 2); 0 = none
    head_transform: bool = False  # dense, activation and norm before the output layer (BERT's MLM head)
    head_bias: bool = False  # a bias per vocabulary entry on the logits (BERT)
    rope_pairs: str = "interleaved"  # which features RoPE rotates: "interleaved" (paper) or "half" (HF's Llama)
    # chapter 12: what changed since 2017
    # key/value heads as set: None = n_heads; a divisor = grouped-query; 1 = multi-query. The setting may be None;
    # the number it stands for, what the layers are built with, is the property kv_heads.
    n_kv_heads: int | None = None
    ffn: str = "mlp"  # "mlp": W2 act(W1 x + b1) + b2; "gated": W2 (act(W1 x) * W3 x), SwiGLU with activation="silu";
    # "none": no feed-forward, attention-only blocks (chapter 13)
    linear_bias: bool = True  # biases in the attention and feed-forward projections (Llama: False)
    rope_base: float = 10000.0  # RoPE's base: omega_i = rope_base ** (-2i / d_h) (Llama's rope_theta)
    # chapter 14: today's open models
    rope_scaling: dict | None = None  # RoPE's frequencies for longer contexts, e.g. {"rope_type": "yarn", ...}
    sliding_window: int | tuple | None = None  # each layer's window: an int for all, or an int or None per layer
    qk_norm: bool = False  # an RMSNorm on each head's queries and keys (Qwen3)
    moe: MoEConfig | None = None  # a mixture of experts in place of the feed-forward (Mixtral, DeepSeek-V3)
    latent: LatentConfig | None = None  # multi-head latent attention in place of multi-head (DeepSeek-V2, V3)

    @property
    def d_h(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads: ``n_kv_heads``, or ``n_heads`` when it is None."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    def layer_window(self, layer: int) -> int | None:
        """Layer ``layer``'s sliding window (chapter 14), or None: it attends to the whole past."""
        windows = self.sliding_window
        return windows[layer] if isinstance(windows, tuple) else windows

    @property
    def decoder_layers(self) -> int:
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers

    @property
    def use_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    # ----------------------------------------------------------------- argument checks, when a config is made

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            require_positive_int(name, getattr(self, name))
        for name in ("src_vocab_size", "n_decoder_layers"):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))
        require_divisible(self.d_model, self.n_heads)
        check_positional(self)  # a known scheme that fits these sizes (RoPE needs an even d_h)
        require_choice("norm", self.norm, ("layer", "rms"))
        require_choice("activation", self.activation, ACTIVATIONS)
        require_probability("dropout", self.dropout, open_high=True)
        self._check_modern()
        for name in ("norm_first", "tie_weights", "share_embeddings", "fast", "scale_embeddings", "embedding_norm",
                     "head_transform", "head_bias", "linear_bias"):
            require_bool(name, getattr(self, name))
        require_optional_bool("final_norm", self.final_norm, "a final norm only with pre-norm")
        require_int("type_vocab_size", self.type_vocab_size, low=0, expected="an int >= 0 (0 = no token types)")
        self._check_pad_id()
        if self.share_embeddings and self.src_vocab_size not in (None, self.vocab_size):
            raise ValueError(
                f"src_vocab_size: expected None or vocab_size={self.vocab_size} with share_embeddings=True "
                f"(one vocabulary for both languages), got {self.src_vocab_size}"
            )

    def _check_modern(self) -> None:
        """The fields of chapter 12: key/value heads that divide the heads, a known feed-forward, a RoPE base."""
        if self.n_kv_heads is not None:
            require_kv_heads(self.n_kv_heads, self.n_heads)
        require_choice("ffn", self.ffn, FFN_KINDS)
        require_number("rope_base", self.rope_base, low=0, open_low=True)
        self._check_open_models()

    def _check_open_models(self) -> None:
        """The fields of chapter 14: a fixed RoPE scaling, windows of positive sizes (one per layer in a tuple)."""
        check_rope_scaling(self.rope_scaling)
        require_bool("qk_norm", self.qk_norm)
        windows = self.sliding_window
        if isinstance(windows, tuple) and len(windows) != self.n_layers:
            raise ValueError(f"sliding_window: expected an int, None or a tuple of n_layers={self.n_layers} windows, "
                             f"got {len(windows)} of them")
        for w in windows if isinstance(windows, tuple) else (windows,):
            if w is not None:
                require_positive_int("sliding_window", w)
        for name, kind in (("moe", MoEConfig), ("latent", LatentConfig)):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name}: expected None or a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if self.moe is not None and self.moe.layers is not None and len(self.moe.layers) != self.n_layers:
            raise ValueError(f"moe.layers: expected None or n_layers={self.n_layers} bools, got {len(self.moe.layers)}")

    def _check_pad_id(self) -> None:
        """``pad_id`` is None or a token id of every vocabulary the model embeds."""
        if self.pad_id is not None:
            size = min(self.vocab_size, self.src_vocab_size or self.vocab_size)
            require_int("pad_id", self.pad_id, 0, size - 1,
                        expected=f"None (no padding) or an int that is a token id in [0, {size})")
