"""Explorers for the positional encodings (chapter 3): the sinusoidal table and RoPE.

Each explorer keeps its state in plain tensors (properties) and draws its view as HTML with inline
SVG, so the text of the view is stable and tests can read it. The explorer of chapter 2,
``EmbeddingScaleExplorer``, lives in :mod:`transformer.viz.embeddings` and is importable from here too.
"""

from __future__ import annotations

import html
import math

import torch

from .._validate import require_positive_int, require_tensor, shape_str
from ..positional import apply_rope, sinusoidal_encoding
from .embeddings import EmbeddingScaleExplorer
from .explorer import Explorer

__all__ = ["EmbeddingScaleExplorer", "RopeExplorer", "SinusoidalExplorer", "value_bars"]


def _fmt(x: float, digits: int = 3) -> str:
    """``x`` rounded, without a minus sign on zero."""
    s = f"{x:.{digits}f}"
    return s.lstrip("-") if float(s) == 0.0 else s


def value_bars(labels, values, width: int = 120, limit: float = 1.0) -> str:
    """An HTML table of signed bars: one row per value, the bar grows right for + and left for -."""
    rows = []
    for label, v in zip(labels, torch.as_tensor(values).tolist()):
        w = round(min(abs(v) / limit, 1.0) * width)
        left = f"<div style='background:#c1564a;height:12px;width:{w}px;margin-left:auto'></div>" if v < 0 else ""
        right = f"<div style='background:#4a7fc1;height:12px;width:{w}px'></div>" if v > 0 else ""
        rows.append(
            f"<tr><td style='text-align:right;padding-right:6px'>{html.escape(str(label))}</td>"
            f"<td style='width:{width}px'>{left}</td><td style='width:{width}px'>{right}</td>"
            f"<td style='padding-left:6px;text-align:right'>{_fmt(v)}</td></tr>"
        )
    return "<table>" + "".join(rows) + "</table>"


def _polyline(values, width: int, height: int, lo: float = -1.0, hi: float = 1.0) -> str:
    n = len(values)
    pts = []
    for j, v in enumerate(values):
        x = width * j / max(n - 1, 1)
        y = height * (hi - v) / (hi - lo)
        pts.append(f"{x:.0f},{y:.0f}")  # whole units: the drawing's units are half pixels (viewBox)
    return " ".join(pts)


class SinusoidalExplorer(Explorer):
    """Pick a position, a dimension and the base; see the encoding vector ``P[position]`` and the curve
    of one dimension over all positions (chapter 3).

    ``P[pos, 2i] = sin(pos / base**(2i/d_model))``, ``P[pos, 2i+1] = cos(...)``: dimension pair ``i``
    repeats every ``2 pi base**(2i/d_model)`` positions, so low dimensions turn fast and high ones slowly.
    """

    def __init__(self, d_model: int = 16, n_positions: int = 64, position: int = 5, dimension: int = 0):
        import ipywidgets as w

        require_positive_int("d_model", d_model)
        require_positive_int("n_positions", n_positions)
        self.d_model_size, self.n_positions = d_model, n_positions
        self.position = w.IntSlider(value=position, min=0, max=n_positions - 1, description="position")
        self.dimension = w.IntSlider(value=dimension, min=0, max=d_model - 1, description="dimension")
        self.base = w.FloatLogSlider(value=10000.0, base=10, min=1, max=5, step=0.25, description="base",
                                     readout_format=".0f")
        self.lay_out([self.position, self.dimension, self.base])

    def _static_grid(self) -> dict:
        """The page stores every dimension, the first positions and a few far ones, and the bases
        10 and 10,000 (live, every value)."""
        last = self.n_positions - 1
        positions = sorted({p for p in [*range(0, 6), 8, 16, 32, last] if p <= last})
        return {self.base: [10.0, 10000.0], self.position: positions}

    @property
    def table(self) -> torch.Tensor:
        """The whole table ``P`` for the current base, ``(n_positions, d_model)``."""
        return sinusoidal_encoding(self.n_positions, self.d_model_size, self.base.value)

    @property
    def vector(self) -> torch.Tensor:
        """``P[position]``, ``(d_model,)``: what is added to the embedding of the token at that position."""
        return self.table[self.position.value]

    @property
    def curve(self) -> torch.Tensor:
        """``P[:, dimension]``, ``(n_positions,)``: one dimension across all positions."""
        return self.table[:, self.dimension.value]

    @property
    def wavelength(self) -> float:
        """How many positions the chosen dimension takes to repeat: ``2 pi base**(2i/d_model)``."""
        i = self.dimension.value // 2
        return 2 * math.pi * self.base.value ** (2 * i / self.d_model_size)

    def _update(self, _change=None) -> None:
        pos, dim = self.position.value, self.dimension.value
        kind = "sin" if dim % 2 == 0 else "cos"
        width, height = 360, 90
        x_marker = width * pos / max(self.n_positions - 1, 1)
        y_marker = height * (1.0 - float(self.curve[pos])) / 2.0
        lo, hi = float(self.curve.min()), float(self.curve.max())
        label = (f"Curve of dimension {dim} ({kind}) over positions 0 to {self.n_positions - 1}, about a grey zero "
                 f"line: it repeats every {self.wavelength:.1f} positions and here runs from {_fmt(lo, 2)} to "
                 f"{_fmt(hi, 2)}. A red dot marks position {pos}, where it is {_fmt(float(self.curve[pos]))}.")
        svg = (  # drawn in half pixels, so that whole numbers stay crisp on a 2x screen
            f"<svg width='{width + 10}' height='{height + 10}' viewBox='0 0 {2 * width + 20} {2 * height + 20}' "
            f"style='overflow:visible' role='img' aria-label='{html.escape(label)}'>"
            f"<line x1='0' y1='{height}' x2='{2 * width}' y2='{height}' stroke='#bbb' stroke-width='2'/>"
            f"<polyline fill='none' stroke='#4a7fc1' stroke-width='4' "
            f"points='{_polyline(self.curve.tolist(), 2 * width, 2 * height)}'/>"
            f"<circle cx='{2 * x_marker:.0f}' cy='{2 * y_marker:.0f}' r='10' fill='#c1564a'/></svg>"
        )
        self.view.value = (
            f"<p>dimension {dim} = {kind}(pos / base<sup>{2 * (dim // 2)}/{self.d_model_size}</sup>): "
            f"repeats every {self.wavelength:.1f} positions; at position {pos} it is {_fmt(float(self.curve[pos]))}</p>"
            + svg
            + f"<p>P[{pos}], the vector added at position {pos}:</p>"
            + value_bars([f"dim {j}" for j in range(self.d_model_size)], self.vector)
        )


class RopeExplorer(Explorer):
    """Place a query at position ``t`` and a key at position ``i``, then move both by ``shift``: the RoPE
    score ``<R_t q, R_i k>`` stays the same, because it depends on ``t - i`` only (chapter 3).

    ``q`` and ``k`` have an even size ``d``; pair ``j`` turns by ``omega_j = base**(-2j/d)`` per position.
    """

    def __init__(self, q: torch.Tensor, k: torch.Tensor, base: float = 10000.0, max_position: int = 20,
                 t: int = 3, i: int = 1):
        import ipywidgets as w

        for name, x in (("q", q), ("k", k)):
            require_tensor(name, x)
            if x.dim() != 1 or x.shape[0] % 2:
                raise ValueError(f"{name}: expected one vector of even size (d,), got shape {shape_str(x)}")
        if q.shape != k.shape:
            raise ValueError(f"k: expected the shape of q {shape_str(q)}, got {shape_str(k)}")
        require_positive_int("max_position", max_position)
        self.q, self.k, self.base = q.float(), k.float(), base
        self.t = w.IntSlider(value=t, min=0, max=max_position, description="query t")
        self.i = w.IntSlider(value=i, min=0, max=max_position, description="key i")
        self.shift = w.IntSlider(value=0, min=0, max=max_position, description="move both")
        self.lay_out([self.t, self.i, self.shift])

    def _static_grid(self) -> dict:
        """The page stores positions 0 to 8 for each slider (live, 0 to ``max_position``)."""
        return {s: list(range(0, min(s.max, 8) + 1)) for s in (self.t, self.i, self.shift)}

    @property
    def positions(self) -> tuple[int, int]:
        """The positions of the query and the key after moving both by ``shift``."""
        return self.t.value + self.shift.value, self.i.value + self.shift.value

    @property
    def omegas(self) -> torch.Tensor:
        """The turning speed of each pair, ``(d / 2,)``: ``base**(-2j/d)`` radians per position."""
        d = self.q.shape[0]
        return self.base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)

    @property
    def rotated(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``R_t q`` and ``R_i k``, each ``(d,)``."""
        t, i = self.positions
        q = apply_rope(self.q[None], torch.tensor([t]), self.base)[0]  # (1, d) -> (d,)
        k = apply_rope(self.k[None], torch.tensor([i]), self.base)[0]
        return q, k

    @property
    def score(self) -> torch.Tensor:
        """``<R_t q, R_i k>``, a scalar tensor."""
        q, k = self.rotated
        return (q.double() * k.double()).sum()

    @property
    def relative_angles(self) -> torch.Tensor:
        """The angle between the key's pair and the query's pair added by the rotations: ``(t - i) omega_j``."""
        t, i = self.positions
        return (t - i) * self.omegas

    def _update(self, _change=None) -> None:
        t, i = self.positions
        q, k = self.rotated
        size, r = 150, 60
        c = size / 2
        scale = r / max(float(self.q[:2].norm()), float(self.k[:2].norm()), 1e-9)

        def arrow(v, color, label):
            x, y = c + scale * float(v[0]), c - scale * float(v[1])
            return (f"<line x1='{c}' y1='{c}' x2='{x:.1f}' y2='{y:.1f}' stroke='{color}' stroke-width='3'/>"
                    f"<text x='{x:.1f}' y='{y:.1f}' fill='{color}' font-size='13'>{label}</text>")

        apart = math.atan2(float(q[0] * k[1] - q[1] * k[0]), float(q[0] * k[0] + q[1] * k[1]))
        label = (f"The first pair of the rotated query and key as two arrows from the centre of a grey circle: "
                 f"blue q turned by {t} rad (its position), red k by {i} rad (its position); they are "
                 f"{abs(apart):.2f} rad apart. Moving both by the same amount turns both arrows together.")
        svg = (f"<svg width='{size}' height='{size}' role='img' aria-label='{html.escape(label)}'>"
               f"<circle cx='{c}' cy='{c}' r='{r}' fill='none' stroke='#ccc'/>"
               + arrow(q, "#4a7fc1", "q") + arrow(k, "#c1564a", "k") + "</svg>")
        angles = ", ".join(f"{a:.2f}" for a in self.relative_angles.tolist())
        self.view.value = (
            f"<p>query at position {t}, key at position {i}, distance t - i = {t - i}</p>"
            f"<p>score &lt;R<sub>{t}</sub> q, R<sub>{i}</sub> k&gt; = <b>{_fmt(float(self.score), 4)}</b></p>"
            f"<p>extra angle between the pairs, (t - i) &omega;<sub>j</sub>: {angles} rad</p>"
            f"<p>the first pair (&omega;<sub>0</sub> = 1 rad per position):</p>" + svg
        )
