"""One small dataclass holds every choice a Transformer makes (chapter 10).

The defaults are the 2017 base model: d_model 512, 8 heads, d_ff 2048, 6
layers, post-norm, sinusoidal positions, output layer tied to the embedding.
With ``share_embeddings=True`` the source and the target also share that one
matrix, as in the paper (a 37000-token vocabulary common to both languages).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import require_choice, require_divisible, require_positive_int
from .feedforward import ACTIVATIONS
from .positional import check_positional


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
    pad_id: int = 0
    fast: bool = False  # attention through F.scaled_dot_product_attention

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
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a probability in [0, 1), got {self.dropout}")
        if self.share_embeddings and self.src_vocab_size not in (None, self.vocab_size):
            raise ValueError(
                f"src_vocab_size: expected None or vocab_size={self.vocab_size} with share_embeddings=True "
                f"(one vocabulary for both languages), got {self.src_vocab_size}"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def decoder_layers(self) -> int:
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers

    @property
    def use_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm
