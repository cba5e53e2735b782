"""The explorer of chapter 2: the scale of the embeddings, and of the logits of the tied output layer.

It keeps its state in plain tensors (properties) and draws its view as HTML, so the text of the view
is stable and tests can read it.
"""

from __future__ import annotations

import math

import torch

from .._validate import require_positive_int
from .explorer import Explorer

__all__ = ["EmbeddingScaleExplorer"]


class EmbeddingScaleExplorer(Explorer):
    """Pick the standard deviation of the embedding matrix ``E (vocab, d_model)``; read the RMS of the
    embedded vectors and of the output logits (chapter 2).

    The embedded vectors are rows of ``E``, multiplied by ``sqrt(d_model)`` when ``scale`` is ticked.
    The output layer is tied to ``E``: ``logits = h E^T`` for vectors ``h`` of RMS exactly 1 (standing
    in for the last block's output). The RMS argument asks for RMS 1 on both sides.
    """

    def __init__(self, vocab_size: int = 2000, d_models=(64, 256, 1024), n_tokens: int = 16, seed: int = 0):
        import ipywidgets as w

        require_positive_int("vocab_size", vocab_size)
        require_positive_int("n_tokens", n_tokens)
        self.d_models = tuple(d_models)
        for d in self.d_models:
            require_positive_int("d_models", d)
        g = torch.Generator().manual_seed(seed)
        d_max = max(self.d_models)
        self._z = torch.randn(vocab_size, d_max, generator=g)  # (vocab, d_max), entries N(0, 1)
        self._h = torch.randn(n_tokens, d_max, generator=g)  # (tokens, d_max)
        self._ids = torch.randint(0, vocab_size, (n_tokens,), generator=g)  # (tokens,)
        self._unit_logits: dict[int, torch.Tensor] = {}
        self.d_model = w.Dropdown(options=list(self.d_models), value=self.d_models[len(self.d_models) // 2],
                                  description="d_model")
        self.std = w.FloatLogSlider(value=1.0, base=10, min=-3, max=0.5, step=0.05, description="std of E",
                                    readout_format=".4f")
        self.scale = w.Checkbox(value=False, description="lookup × sqrt(d_model)")
        self.lay_out([self.d_model, self.std, self.scale])

    @property
    def weight(self) -> torch.Tensor:
        """The embedding matrix ``E`` of shape ``(vocab, d_model)`` with entries of the chosen std."""
        return self._z[:, : self.d_model.value] * self.std.value

    @property
    def embedded(self) -> torch.Tensor:
        """The embedded vectors of ``n_tokens`` seeded ids, ``(tokens, d_model)``."""
        x = self.weight[self._ids]  # (tokens, d_model)
        return x * math.sqrt(self.d_model.value) if self.scale.value else x

    @property
    def hidden(self) -> torch.Tensor:
        """Vectors ``h`` of RMS exactly 1, ``(tokens, d_model)``: the input of the output layer."""
        h = self._h[:, : self.d_model.value]
        return h / h.pow(2).mean(-1, keepdim=True).sqrt()

    @property
    def logits(self) -> torch.Tensor:
        """``h E^T``, ``(tokens, vocab)``: the scores the tied output layer gives every token."""
        d = self.d_model.value
        if d not in self._unit_logits:  # h Z^T for entries of std 1: E = std * Z, so h E^T = std * h Z^T
            self._unit_logits[d] = self.hidden @ self._z[:, :d].T  # (tokens, d_model) @ (d_model, vocab)
        return self._unit_logits[d] * self.std.value

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """RMS of the embedded vectors and of the logits, and the average largest softmax probability."""
        return {
            "rms_embedded": self.embedded.pow(2).mean().sqrt(),
            "rms_logits": self.logits.pow(2).mean().sqrt(),
            "max_prob": self.logits.softmax(-1).max(-1).values.mean(),
        }

    def _update(self, _change=None) -> None:
        s = {k: float(v) for k, v in self.state.items()}
        d = self.d_model.value
        width = 240

        def log_bar(value: float) -> str:
            # RMS on a log scale from 0.001 to 100, with a black tick at the target, 1
            x = round(min(max((math.log10(max(value, 1e-12)) + 3) / 5, 0.0), 1.0) * width)
            tick = round(3 / 5 * width)
            return (f"<div style='position:relative;width:{width}px;height:12px;background:#eee'>"
                    f"<div style='background:#4a7fc1;height:12px;width:{x}px'></div>"
                    f"<div style='position:absolute;left:{tick}px;top:-2px;width:2px;height:16px;"
                    f"background:#000'></div></div>")

        def linear_bar(value: float) -> str:
            return (f"<div style='width:{width}px;height:12px;background:#eee'>"
                    f"<div style='background:#4a7fc1;height:12px;width:{round(min(value, 1.0) * width)}px'>"
                    f"</div></div>")

        rows = [("RMS of the embedded vectors", s["rms_embedded"], log_bar, "want about 1 (black tick)"),
                ("RMS of the logits", s["rms_logits"], log_bar, "want about 1 (black tick)"),
                ("largest softmax probability", s["max_prob"], linear_bar,
                 f"uniform would be {1 / self._z.shape[0]:.4f}")]
        cells = []
        for name, value, bar, note in rows:
            cells.append(
                f"<tr><td style='text-align:right;padding-right:6px'>{name}</td><td>{bar(value)}</td>"
                f"<td style='padding-left:6px;text-align:right'>{value:.3f}</td>"
                f"<td style='padding-left:10px;color:#555'>{note}</td></tr>"
            )
        self.view.value = (
            f"<p>std of E = {self.std.value:.4f}; 1/sqrt(d_model) = {1 / math.sqrt(d):.4f} "
            "(RMS bars on a log scale, 0.001 to 100)</p>"
            "<table>" + "".join(cells) + "</table>"
        )
