"""Add & norm pictures: the residual stream of a token and the scale-and-shift norm explorer (chapter 6)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import torch

from .._validate import require_float, require_rank
from ..norm import LayerNorm, RMSNorm
from .explorer import Explorer


def signed_bars(labels: Sequence[str], columns: dict[str, torch.Tensor], width: int = 80) -> str:
    """An HTML table: one row per label and, per column, a bar left (negative) or right of zero.

    Each column is drawn to its own scale, its largest absolute value filling ``width`` pixels.
    """
    head = "".join(f"<th colspan='3' style='padding:0 8px'>{html.escape(name)}</th>" for name in columns)
    scales = {name: max(float(torch.as_tensor(v).abs().max()), 1e-12) for name, v in columns.items()}
    rows = []
    for i, label in enumerate(labels):
        cells = []
        for name, values in columns.items():
            v = float(values[i])
            length = round(abs(v) / scales[name] * width)
            bar = f"<div style='width:{length}px;height:10px;background:{{}};{{}}'></div>"
            left = bar.format("#c1604a", f"margin-left:{width - length}px") if v < 0 else ""
            right = bar.format("#4a7fc1", "") if v >= 0 else ""
            cells.append(f"<td style='width:{width}px;border-right:1px solid #888'>{left}</td>"
                         f"<td style='width:{width}px'>{right}</td>"
                         f"<td style='padding:0 8px;text-align:right'>{v:.2f}</td>")
        rows.append(f"<tr><td style='text-align:right;padding-right:6px'>{html.escape(label)}</td>"
                    + "".join(cells) + "</tr>")
    return f"<table><tr><th></th>{head}</tr>" + "".join(rows) + "</table>"


class NormExplorer(Explorer):
    """Scale and shift one token vector; watch what LayerNorm and RMSNorm make of it (chapter 6).

    The input is ``scale * x + shift``. LayerNorm subtracts the mean and divides
    by the standard deviation, so its output does not move at all (up to
    ``eps``); RMSNorm only divides by the root mean square, so it ignores the
    scale but not the shift. Both are used with ``gamma = 1`` and ``beta = 0``.
    """

    NORMS = ("LayerNorm", "RMSNorm")

    def __init__(self, x: torch.Tensor, norm: str = "LayerNorm", eps: float = 1e-5):
        import ipywidgets as w

        require_float("x", x)
        require_rank("x", x, (1,), "(d_model,)")
        if norm not in self.NORMS:
            raise ValueError(f"norm: expected one of {list(self.NORMS)}, got {norm!r}")
        self.x = x.detach().clone()
        d = x.shape[0]
        self._norms = {"LayerNorm": LayerNorm(d, eps), "RMSNorm": RMSNorm(d, eps)}
        self.norm = w.ToggleButtons(options=list(self.NORMS), value=norm, description="norm")
        self.scale = w.FloatLogSlider(value=1.0, base=10, min=-2, max=2, step=0.05, description="scale",
                                      readout_format=".2f")
        self.shift = w.FloatSlider(value=0.0, min=-10.0, max=10.0, step=0.1, description="shift")
        self.lay_out(self.norm, [self.scale, self.shift])

    def _static_grid(self) -> dict:
        """The page stores scales 0.01 to 100 by decades and shifts -10 to 10 by 1 (live, finer)."""
        return {self.scale: [10.0 ** k for k in range(-2, 3)], self.shift: [float(s) for s in range(-10, 11)]}

    @property
    def input(self) -> torch.Tensor:
        """``scale * x + shift``, ``(d_model,)``."""
        return self.scale.value * self.x + self.shift.value

    @property
    def output(self) -> torch.Tensor:
        """The chosen norm of the input, ``(d_model,)``."""
        with torch.no_grad():
            return self._norms[self.norm.value](self.input)

    @property
    def change(self) -> float:
        """The largest change of the output compared with the unscaled, unshifted ``x``."""
        with torch.no_grad():
            return float((self.output - self._norms[self.norm.value](self.x)).abs().max())

    def _update(self, _change=None) -> None:
        xin, out = self.input, self.output
        stats = (f"input: mean {float(xin.mean()):.2f}, std {float(xin.std(unbiased=False)):.2f}, "
                 f"rms {float(xin.pow(2).mean().sqrt()):.2f} &nbsp;|&nbsp; output: mean {float(out.mean()):.2f}, "
                 f"std {float(out.std(unbiased=False)):.2f}, rms {float(out.pow(2).mean().sqrt()):.2f}")
        labels = [f"feature {i}" for i in range(len(self.x))]
        self.view.value = (f"<p>{stats}</p>"
                           f"<p>largest change of the {self.norm.value} output since scale 1, shift 0: "
                           f"<b>{self.change:.4f}</b></p>"
                           + signed_bars(labels, {"input": xin, f"{self.norm.value}(input)": out}))
