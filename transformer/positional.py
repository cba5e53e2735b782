"""Positional encodings (chapter 3).

Attention by itself treats its input as a set. Five ways to tell it about order are taught here:

- ``sinusoidal``: fixed sines and cosines added to the embeddings (the 2017 paper);
- ``learned``: one trained vector per absolute position, added to the embeddings;
- ``relative``: a trained bias ``b[t - i]`` added to the attention score of query ``t`` and key ``i``;
- ``rope``: queries and keys rotated by an angle proportional to their position;
- ``none``: nothing at all (NoPE); only a causal mask can then break the symmetry.

:data:`POSITIONAL_SCHEMES` maps each name to the module that carries it; every module says where it acts
(``acts_on``, an :class:`ActsOn`) and how a :class:`~transformer.config.TransformerConfig` builds it
(``from_config``). The rest of the package asks :func:`positional_module` and never looks at the name itself.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

import torch
from torch import nn

from ._validate import (
    require_choice,
    require_enum,
    require_int,
    require_last_dim,
    require_max_len,
    require_min_rank,
    require_number,
    require_positive_int,
    require_rank,
    require_tensor,
    shape_str,
)


class ActsOn(Enum):
    """Where a positional scheme acts (each module's ``acts_on``); the values describe it, a string is no ActsOn."""

    EMBEDDINGS = "embeddings"  # added to the token embeddings before the first block
    QUERIES_AND_KEYS = "queries and keys"  # rotates the queries and keys of every self-attention
    SCORES = "scores"  # a bias added to every self-attention score


def _frequencies(d_model: int, base: float) -> torch.Tensor:
    """``omega_i = base ** (-2i / d_model)`` for ``i = 0 .. ceil(d_model / 2) - 1``."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return base ** (-two_i / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed table ``P`` of shape ``(n_positions, d_model)`` (chapter 3).

    ``P[pos, 2i] = sin(pos / base**(2i/d_model))`` and
    ``P[pos, 2i+1] = cos(pos / base**(2i/d_model))``.
    """
    require_positive_int("n_positions", n_positions)
    require_positive_int("d_model", d_model)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (positions, 1)
    angles = pos * _frequencies(d_model, base)[None, :]  # (positions, ceil(d_model / 2))
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return table.float()


def shift_matrix(c: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``M_c (d_model, d_model)`` with ``P[t + c] = M_c @ P[t]`` for every ``t`` (chapter 3): block diagonal, each
    (sin, cos) pair rotated by ``c * omega_i``; it does not depend on ``t``, which makes the encoding relative."""
    _require_shift(c, d_model)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(_frequencies(d_model, base)):
        cos, sin = torch.cos(c * w), torch.sin(c * w)
        # sin(x + a) = sin x cos a + cos x sin a ;  cos(x + a) = cos x cos a - sin x sin a, with a = c w
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.stack([torch.stack([cos, sin]), torch.stack([-sin, cos])])
    return m.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed table: ``(batch, seq, d_model) -> (batch, seq, d_model)``."""

    acts_on: ClassVar[ActsOn] = ActsOn.EMBEDDINGS

    @classmethod
    def from_config(cls, cfg) -> SinusoidalPositionalEncoding:
        return cls(cfg.d_model, cfg.max_len)

    def __init__(self, d_model: int, max_len: int = 512, base: float = 10000.0):
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_len, d_model, base), persistent=False)
        self.max_len, self.d_model = max_len, d_model

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_rows(x, offset, self.max_len, self.d_model)
        return self.add_to(x, offset)

    def add_to(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:  # forward on x already checked (a model)
        return x + self.table[offset : offset + x.shape[1]]  # (batch, seq, d_model)


class LearnedPositionalEncoding(nn.Module):
    """One trained vector per absolute position, added: ``(batch, seq, d_model)`` in and out."""

    acts_on: ClassVar[ActsOn] = ActsOn.EMBEDDINGS

    @classmethod
    def from_config(cls, cfg) -> LearnedPositionalEncoding:
        return cls(cfg.d_model, cfg.max_len)

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        require_positive_int("max_len", max_len)
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        self.max_len, self.d_model = max_len, d_model

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_rows(x, offset, self.max_len, self.d_model)
        return self.add_to(x, offset)

    def add_to(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:  # forward on x already checked (a model)
        return x + self.weight[offset : offset + x.shape[1]]  # (batch, seq, d_model)


class RelativePositionBias(nn.Module):
    """A trained scalar ``b[t - i]`` per head, added to the score of query ``t`` and key ``i``.

    Distances beyond ``max_distance`` share its bias. ``forward(T_q, T_k)`` returns the bias ``(heads, T_q, T_k)``.
    """

    acts_on: ClassVar[ActsOn] = ActsOn.SCORES

    @classmethod
    def from_config(cls, cfg) -> RelativePositionBias:
        return cls(cfg.n_heads, cfg.max_len)

    def __init__(self, n_heads: int, max_distance: int = 128):
        super().__init__()
        require_positive_int("n_heads", n_heads)
        require_positive_int("max_distance", max_distance)
        self.max_distance = max_distance
        self.bias = nn.Parameter(torch.zeros(n_heads, 2 * max_distance + 1))

    def forward(self, t_q: int, t_k: int, offset: int = 0) -> torch.Tensor:
        t = torch.arange(t_q, device=self.bias.device)[:, None] + offset  # (T_q, 1)
        i = torch.arange(t_k, device=self.bias.device)[None, :]  # (1, T_k)
        dist = (t - i).clamp(-self.max_distance, self.max_distance)  # (T_q, T_k)
        return self.bias[:, dist + self.max_distance]  # (heads, T_q, T_k)


def rotation_matrix(angle: float) -> torch.Tensor:
    """The 2 x 2 rotation ``R = [[cos, -sin], [sin, cos]]`` used by RoPE."""
    _require_angle(angle)
    a = torch.as_tensor(angle, dtype=torch.float64)
    return torch.stack([torch.stack([a.cos(), -a.sin()]), torch.stack([a.sin(), a.cos()])]).float()


ROPE_PAIRS = ("interleaved", "half")
"""How RoPE pairs the features it rotates together: ``"interleaved"`` rotates ``(x[2i], x[2i+1])``, as the RoFormer
paper, Meta's Llama code and this book; ``"half"`` rotates ``(x[i], x[i + d/2])``, as Hugging Face's Llama (whose
conversion permutes W_q, W_k) and GPT-NeoX. Both turn pair ``i`` by ``position * omega_i``, on permuted features."""


def _rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairs: str = "interleaved") -> torch.Tensor:
    """Rotate each pair of ``x (..., seq, d)`` (see :data:`ROPE_PAIRS`) by the angle with ``cos, sin (seq, d / 2)``."""
    if pairs == "half":
        x1, x2 = x.chunk(2, dim=-1)  # (..., seq, d / 2) each: the first half and the second half
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., seq, d)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., seq, d / 2) each
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., seq, d / 2, 2)
    return out.flatten(-2)  # (..., seq, d)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0,
               pairs: str = "interleaved") -> torch.Tensor:
    """Rotate each pair ``(x[2i], x[2i+1])`` of ``x`` ``(..., seq, d)`` by ``position * omega_i`` (chapter 3).

    Then ``<apply_rope(q)[t], apply_rope(k)[i]>`` depends on ``t - i`` only.
    ``pairs="half"`` rotates ``(x[i], x[i + d/2])`` instead, as Hugging Face's Llama does (:data:`ROPE_PAIRS`).
    """
    _require_rope(x, positions, pairs)
    seq, d = x.shape[-2:]
    if positions is None:
        positions = torch.arange(seq, device=x.device)
    angles = positions.to(torch.float64)[..., None] * _frequencies(d, base).to(x.device)  # (seq, d / 2)
    return _rotate_pairs(x, angles.cos().to(x.dtype), angles.sin().to(x.dtype), pairs)


class RotaryEmbedding(nn.Module):
    """RoPE for the queries and keys of one attention layer: ``(batch, heads, seq, d_h)`` in and out.

    The cosines and sines of every position's angles, ``(max_len, d_h / 2)``, are computed
    once, in float64, and kept as buffers; a call only picks its rows and casts them to ``x``'s dtype.
    ``pairs`` chooses which features rotate together (:data:`ROPE_PAIRS`): ``"interleaved"``
    (the paper, the default) or ``"half"`` (Hugging Face's Llama; ``TransformerConfig(rope_pairs="half")``).
    """

    acts_on: ClassVar[ActsOn] = ActsOn.QUERIES_AND_KEYS

    @classmethod
    def from_config(cls, cfg) -> RotaryEmbedding:
        return cls(cfg.d_h, cfg.max_len, base=float(cfg.rope_base), pairs=cfg.rope_pairs)

    def __init__(self, d_h: int, max_len: int = 512, base: float = 10000.0, pairs: str = "interleaved"):
        super().__init__()
        _require_rotary(d_h, max_len, pairs)
        self.d_h, self.max_len, self.base, self.pairs = d_h, max_len, base, pairs
        positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
        angles = positions * _frequencies(d_h, base)  # (max_len, d_h / 2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_rows(x, offset, self.max_len, self.d_h, "d_h", (2, 3, 4), "(batch, [heads,] seq, d_h)")
        return self.rotate(x, offset)

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:  # forward on x already checked (attention)
        rows = slice(offset, offset + x.shape[-2])
        cos, sin = self.cos[rows].to(x.dtype), self.sin[rows].to(x.dtype)  # (seq, d_h / 2) each
        return _rotate_pairs(x, cos, sin, self.pairs)  # (..., seq, d_h)

    def extra_repr(self) -> str:
        pairs = "" if self.pairs == "interleaved" else f", pairs={self.pairs!r}"
        return f"d_h={self.d_h}, max_len={self.max_len}, base={self.base:g}{pairs}"


# ----------------------------------------------------------------------------- the registry

POSITIONAL_SCHEMES: dict[str, type[nn.Module] | None] = {
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEncoding,
    "relative": RelativePositionBias,
    "rope": RotaryEmbedding,
    "none": None,  # NoPE: nothing to build
}
"""Every positional scheme by name: the module class that carries it (None for ``"none"``)."""


def check_positional(cfg) -> None:
    """Refuse, when a config is made, a scheme unknown or unfit for its sizes (nothing is built)."""
    require_choice("positional", cfg.positional, POSITIONAL_SCHEMES)
    require_choice("rope_pairs", cfg.rope_pairs, ROPE_PAIRS)
    if POSITIONAL_SCHEMES[cfg.positional] is RotaryEmbedding and cfg.d_h % 2:
        raise ValueError(f"d_model: expected an even d_h = d_model / n_heads for RoPE, got d_h={cfg.d_h}")


def positional_module(cfg, acts_on: ActsOn) -> nn.Module | None:
    """The module of the scheme ``cfg.positional`` if it acts on ``acts_on`` (an :class:`ActsOn`), else None.

    ``positional_module(cfg, ActsOn.EMBEDDINGS)`` is what a model adds to its token embeddings;
    ``ActsOn.QUERIES_AND_KEYS`` and ``ActsOn.SCORES`` are what each self-attention layer gets. ``cfg`` is a
    :class:`~transformer.config.TransformerConfig`, checked when it was made (:func:`check_positional`), not here.
    """
    require_enum("acts_on", acts_on, ActsOn)
    scheme = POSITIONAL_SCHEMES[cfg.positional]
    if scheme is None or scheme.acts_on != acts_on:
        return None
    return scheme.from_config(cfg)


# ----------------------------------------------------------------------------- argument checks


def _require_shift(c, d_model) -> None:
    require_int("c", c, expected="an int offset")
    if require_positive_int("d_model", d_model) % 2:
        raise ValueError(f"d_model: expected an even d_model so every sine has its cosine, got {d_model}")


def _require_angle(angle) -> None:
    """A number or a one-element tensor, in radians."""
    if not (isinstance(angle, torch.Tensor) and angle.numel() == 1):
        require_number("angle", angle, expected="a number (radians) or a one-element tensor")


def _require_rope(x, positions, pairs: str) -> None:
    """:func:`apply_rope`'s input: ``x (..., seq, d)`` with an even ``d``; ``positions`` None or ``seq`` of them."""
    require_min_rank("x", x, 2, "(..., seq, d)")
    require_choice("pairs", pairs, ROPE_PAIRS)
    if x.shape[-1] % 2:
        raise ValueError(f"x: expected an even last dimension (pairs are rotated), got {x.shape[-1]}")
    if positions is not None and require_tensor("positions", positions).shape[-1] != x.shape[-2]:
        raise ValueError(f"positions: expected {x.shape[-2]} positions to match x, got shape {shape_str(positions)}")


def _require_rotary(d_h, max_len, pairs: str) -> None:
    require_positive_int("max_len", max_len)
    require_choice("pairs", pairs, ROPE_PAIRS)
    if require_positive_int("d_h", d_h) % 2:
        raise ValueError(f"d_h: expected an even head size for RoPE, got {d_h}")


def _check_rows(x, offset, max_len, size, size_name="d_model", ranks=(3,), layout="(batch, seq, d_model)") -> None:
    """``x (..., seq, size)``, whose first row is at position ``offset``, needs a row of the table for each row."""
    require_rank("x", x, ranks, layout)
    require_int("offset", offset, low=0, expected="an int >= 0 (the position of the first row)")
    require_max_len("x", offset + x.shape[-2], max_len)
    require_last_dim("x", x, size, size_name)
