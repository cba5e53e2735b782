"""Longer contexts: RoPE's frequencies rescaled past the training length (chapter 14).

RoPE turns pair ``i`` of a head by ``position * omega_i`` with ``omega_i = base ** (-2i / d)``. A model trained
on ``L`` positions has never seen the angles of the slow pairs past ``L``. Each method here changes only the
inverse frequencies ``omega (d / 2,)`` (and YaRN also a factor on the attention scores):

- ``"linear"``, position interpolation (Chen et al. 2023): every ``omega_i / factor``, so ``factor * L``
  positions span the angles that ``L`` did;
- ``"dynamic"``, NTK-aware scaling: a larger base, ``base * (factor * T / L - (factor - 1)) ** (d / (d - 2))``
  for a sequence of ``T > L`` positions (plain RoPE up to ``L``), so fast pairs barely move and slow ones stretch;
- ``"yarn"`` (Peng et al. 2023): per pair, a ramp between keeping ``omega_i`` (pairs that turn more than
  ``beta_fast`` times in ``L``) and dividing it by ``factor`` (fewer than ``beta_slow`` turns), and the attention
  factor ``0.1 ln(factor) + 1`` on the cosines and sines (so the scores get its square);
- ``"llama3"`` (Llama 3.1): wavelengths ``2 pi / omega_i`` shorter than ``L / high_freq_factor`` are kept, longer
  than ``L / low_freq_factor`` divided by ``factor``, and the ones between interpolated smoothly.

The formulas and the settings' names are those of Hugging Face's ``transformers/modeling_rope_utils.py``
(``_compute_linear_scaling_rope_parameters``, ``_compute_dynamic_ntk_parameters``, ``_compute_yarn_parameters``,
``_compute_llama3_parameters``), computed here in float64 (Hugging Face computes them in float32).
``scaling`` is such a settings dict, e.g. ``{"rope_type": "yarn", "factor": 4.0,
"original_max_position_embeddings": 32}``; ``TransformerConfig(rope_scaling=...)`` takes the same dict.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_choice, require_number, require_positive_int
from .positional import ActsOn, RotaryEmbedding, positional_module

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")


def rope_frequencies(d: int, base: float = 10000.0, scaling: dict | None = None,
                     seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """RoPE's inverse frequencies ``(d / 2,)`` float64 for a head of size ``d``, and the attention factor.

    ``scaling`` None (or ``rope_type "default"``) gives ``base ** (-2i / d)`` and 1.0. ``seq_len``: the length
    a ``"dynamic"`` scaling is computed for (at most ``max_position_embeddings``: plain RoPE).
    """
    require_positive_int("d", d)
    require_number("base", base, low=0, open_low=True)
    scaling = dict(scaling or {"rope_type": "default"})
    kind = scaling.get("rope_type", "default")
    require_choice("scaling['rope_type']", kind, ROPE_TYPES)
    _check_settings(kind, scaling)
    return _rope_frequencies(d, base, scaling, seq_len)


def _rope_frequencies(d: int, base: float, scaling: dict, seq_len: int | None = None):
    kind = scaling.get("rope_type", "default")
    if kind == "linear":
        return _plain(d, base) / scaling["factor"], 1.0
    if kind == "dynamic":
        return _ntk_frequencies(d, base, scaling["factor"], seq_len, scaling["max_position_embeddings"]), 1.0
    if kind == "yarn":
        return _yarn_frequencies(d, base, scaling), _yarn_attention_factor(scaling)
    if kind == "llama3":
        return _llama3_frequencies(d, base, scaling), 1.0
    return _plain(d, base), 1.0


def _plain(d: int, base: float) -> torch.Tensor:
    """``omega_i = base ** (-2i / d)``, ``(d / 2,)`` float64: chapter 3's RoPE."""
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def _ntk_frequencies(d: int, base: float, factor: float, seq_len: int | None, max_len: int) -> torch.Tensor:
    """NTK-aware (dynamic) scaling: RoPE with the base raised for ``seq_len`` positions, trained on ``max_len``."""
    seq_len = max(seq_len or max_len, max_len)  # up to max_len, the plain frequencies
    return _plain(d, base * (factor * seq_len / max_len - (factor - 1)) ** (d / (d - 2)))


def _yarn_attention_factor(scaling: dict) -> float:
    """YaRN's factor on the cosines and sines: ``0.1 ln(s) + 1`` (or DeepSeek's ratio with ``mscale``)."""
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])

    def m(s: float, mscale: float = 1.0) -> float:
        return 1.0 if s <= 1 else 0.1 * mscale * math.log(s) + 1.0

    factor, mscale, all_dim = scaling["factor"], scaling.get("mscale"), scaling.get("mscale_all_dim")
    return float(m(factor, mscale) / m(factor, all_dim)) if mscale and all_dim else m(factor)


def _yarn_frequencies(d: int, base: float, scaling: dict) -> torch.Tensor:
    """YaRN's ``(d / 2,)``: ``omega_i`` kept for fast pairs, ``omega_i / factor`` for slow ones, a ramp between."""
    factor, original = scaling["factor"], scaling["original_max_position_embeddings"]
    fast, slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

    def pair_turning(turns: float) -> float:  # the pair index i whose omega_i * original / (2 pi) = turns
        return d * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_turning(fast), pair_turning(slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    high = high + 0.001 if low == high else high  # no division by zero
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)  # 0: keep, 1: interpolate
    omega = _plain(d, base)
    return omega / factor * ramp + omega * (1 - ramp)


def _llama3_frequencies(d: int, base: float, scaling: dict) -> torch.Tensor:
    """Llama 3.1's ``(d / 2,)``: long wavelengths divided by ``factor``, short ones kept, the middle smoothed."""
    factor, original = scaling["factor"], scaling["original_max_position_embeddings"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    omega = _plain(d, base)
    wavelength = 2 * math.pi / omega  # (d / 2,)
    smooth = (original / wavelength - low) / (high - low)  # 0 at wavelength original / low, 1 at original / high
    scaled = torch.where(wavelength > original / low, omega / factor, omega)
    middle = (wavelength >= original / high) & (wavelength <= original / low)
    return torch.where(middle, (1 - smooth) * scaled / factor + smooth * scaled, scaled)


class ScaledRotaryEmbedding(RotaryEmbedding):
    """:class:`~transformer.positional.RotaryEmbedding` with the frequencies of ``scaling`` (a settings dict) and
    its attention factor on the cosines and sines: ``(batch, heads, seq, d_h)`` in and out."""

    def __init__(self, d_h: int, max_len: int, base: float, pairs: str, scaling: dict):
        super().__init__(d_h, max_len, base, pairs)
        omega, factor = rope_frequencies(d_h, base, scaling)  # (d_h / 2,), a float
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] * omega  # (max_len, d_h / 2)
        self.cos, self.sin = angles.cos() * factor, angles.sin() * factor  # the buffers, (max_len, d_h / 2) each
        self.scaling = dict(scaling)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, scaling={self.scaling}"


def rotary_for(cfg) -> RotaryEmbedding | None:
    """The RoPE of a :class:`~transformer.config.TransformerConfig`'s self-attention: scaled when
    ``cfg.rope_scaling`` is set, else :func:`~transformer.positional.positional_module`'s (None without RoPE)."""
    rope = positional_module(cfg, ActsOn.QUERIES_AND_KEYS)
    if rope is None or cfg.rope_scaling is None:
        return rope
    return ScaledRotaryEmbedding(rope.d_h, rope.max_len, rope.base, rope.pairs, cfg.rope_scaling)


def check_rope_scaling(scaling) -> None:
    """None, or a settings dict of a fixed kind (a ``"dynamic"`` one changes with the length: no fixed table)."""
    if scaling is None:
        return
    if not isinstance(scaling, dict):
        raise TypeError(f"rope_scaling: expected None or a dict of settings, got {type(scaling).__name__}")
    require_choice("rope_scaling['rope_type']", scaling.get("rope_type", "default"),
                   tuple(kind for kind in ROPE_TYPES if kind != "dynamic"))
    _check_settings(scaling.get("rope_type", "default"), scaling)


# ----------------------------------------------------------------------------- argument checks

NEEDS = {"default": (), "linear": ("factor",), "dynamic": ("factor", "max_position_embeddings"),
         "yarn": ("factor", "original_max_position_embeddings"),
         "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor")}


def _check_settings(kind: str, scaling: dict) -> None:
    """The settings a kind of scaling reads, each present."""
    missing = [name for name in NEEDS[kind] if scaling.get(name) is None]
    if missing:
        raise ValueError(f"scaling: expected the settings {list(NEEDS[kind])} for rope_type {kind!r}, "
                         f"got none for {missing}")
