"""Recurrence against attention, and the road map of the book (chapter 0).

An RNN reads a sentence one word at a time: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``.
Two numbers follow from that one line, and one layer of self-attention changes both:

- **sequential steps**: the steps that must happen one after another, because each
  needs the result of the one before. An RNN needs ``n`` for ``n`` words; a layer
  of self-attention computes all ``n`` outputs at once, in 1.
- **path length**: the hops the information of word 1 makes to reach word ``n``.
  In an RNN it passes through every hidden state in between, ``n - 1`` hops; in
  self-attention word ``n`` looks at word 1 directly, 1 hop.

If each hop keeps only a fraction ``factor < 1`` of a signal, ``factor ** hops``
of it arrives: it fades exponentially with the distance.
"""

from __future__ import annotations

import html

import torch

from .._validate import require_choice, require_int, require_number, require_positive_int
from .explorer import Explorer

MODELS = ("rnn", "attention")


def sequential_steps(n: int, model: str) -> int:
    """Steps that must run one after another to process ``n`` words: ``n`` for an RNN, 1 for self-attention."""
    require_positive_int("n", n)
    require_choice("model", model, MODELS)
    return n if model == "rnn" else 1


def path_length(n: int, model: str) -> int:
    """Hops from word 1 to word ``n``: ``n - 1`` through an RNN, 1 through self-attention (0 if ``n == 1``)."""
    require_positive_int("n", n)
    require_choice("model", model, MODELS)
    if n == 1:
        return 0
    return n - 1 if model == "rnn" else 1


def surviving_fraction(factor: float, hops: int) -> float:
    """``factor ** hops``: what is left of a signal multiplied by ``factor`` at every hop."""
    require_number("factor", factor, low=0)
    require_int("hops", hops, low=0)
    return float(factor) ** hops


def _strip(fractions: list[float], size: int = 14) -> str:
    cells = "".join(
        f"<span style='display:inline-block;width:{size}px;height:{size}px;margin-right:1px;"
        f"background:rgba(74,127,193,{f:.2f});border:1px solid #999'></span>"
        for f in fractions
    )
    return f"<div style='white-space:nowrap'>{cells}</div>"


class RecurrenceExplorer(Explorer):
    """Move the sentence length ``n`` and the per-hop factor; compare an RNN with self-attention (chapter 0).

    The view counts the sequential steps and the path from word 1 to word ``n``
    for both, and shows, word by word, how much of each word's signal reaches
    word ``n`` through the RNN if every hop multiplies it by ``factor``.
    """

    def __init__(self, n: int = 21, factor: float = 0.9, max_n: int = 60):
        import ipywidgets as w

        require_positive_int("max_n", max_n)
        require_int("n", n, 2, max_n)
        require_number("factor", factor, 0.5, 1.0)
        self.n = w.IntSlider(value=n, min=2, max=max_n, description="words n")
        self.factor = w.FloatSlider(value=factor, min=0.5, max=1.0, step=0.01, description="factor",
                                    readout_format=".2f")
        self.lay_out([self.n, self.factor])

    def _static_grid(self) -> dict:
        """The page stores every n and the factors the chapter discusses."""
        return {self.factor: [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0]}

    @property
    def counts(self) -> torch.Tensor:
        """``(2, 2)`` int64: rows RNN and self-attention, columns sequential steps and path from word 1 to word n."""
        n = self.n.value
        return torch.tensor([[sequential_steps(n, m), path_length(n, m)] for m in MODELS])

    @property
    def survival(self) -> torch.Tensor:
        """``(n,)``: the fraction of word ``j``'s signal that reaches word ``n`` through the RNN,
        ``factor ** (n - j)``."""
        n = self.n.value
        hops = torch.arange(n - 1, -1, -1, dtype=torch.float64)  # word 1 is n - 1 hops away, word n is 0
        return torch.full((n,), float(self.factor.value), dtype=torch.float64) ** hops

    def _update(self, _change=None) -> None:
        n, factor = self.n.value, self.factor.value
        (rnn_steps, rnn_path), (att_steps, att_path) = self.counts.tolist()
        first = float(self.survival[0])
        rows = [
            ("RNN", rnn_steps, rnn_path, f"{factor:.2f}<sup>{rnn_path}</sup> = {first:.3g}"),
            ("self-attention", att_steps, att_path, "one hop: no repeated factor"),
        ]
        cell = "style='padding:2px 8px;text-align:right'"
        table = ("<table><tr><th></th><th " + cell + ">sequential steps</th><th " + cell
                 + ">hops from word 1 to word n</th><th " + cell + ">word 1 arrives with</th></tr>"
                 + "".join(f"<tr><td>{html.escape(name)}</td><td {cell}>{s}</td><td {cell}>{p}</td>"
                           f"<td {cell}>{a}</td></tr>" for name, s, p, a in rows)
                 + "</table>")
        strip = (f"<p>RNN, word 1 to word {n}: how much of each word reaches word {n} "
                 f"(darker = more)</p>" + _strip(self.survival.tolist()))
        self.view.value = table + strip


# ---------------------------------------------------------------- the road map

_COLORS = {
    "input": "#eeeeee", "embed": "#f6d5d5", "attention": "#fbe0bd", "norm": "#f8f3b0",
    "ffn": "#cfe3f7", "output": "#d3ecd0",
}


def _box(ax, x, y, text, kind, w=4.6, h=0.75, fontsize=8):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=_COLORS[kind], edgecolor="#444444", linewidth=1.0, zorder=2))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=3)


def _arrow(ax, start, end, color="#333333", style="-|>", lw=1.1):
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10, color=color, lw=lw,
                                 shrinkA=0, shrinkB=0, zorder=1))


def _column(ax, x, y0, layers, frame_label, side):
    """Stack ``layers`` (text, kind) upward from ``y0`` inside an N x frame; return the y of the top edge."""
    from matplotlib.patches import FancyBboxPatch

    step = 1.05
    top = y0 + step * (len(layers) - 1)
    ax.add_patch(FancyBboxPatch((x - 2.75, y0 - 0.7), 5.5, top - y0 + 1.4, boxstyle="round,pad=0.02,rounding_size=0.2",
                                facecolor="#fafafa", edgecolor="#777777", linewidth=1.2, linestyle="--", zorder=0))
    label_x = x - 2.95 if side == "left" else x + 2.95
    ax.text(label_x, (y0 + top) / 2, frame_label, ha="right" if side == "left" else "left", va="center",
            fontsize=10, fontweight="bold")
    for i, (text, kind) in enumerate(layers):
        y = y0 + step * i
        _box(ax, x, y, text, kind)
        if i:
            _arrow(ax, (x, y - step + 0.375), (x, y - 0.375))
    return top + 0.7


def _road_inputs(ax, enc_x: float, dec_x: float) -> None:
    """The road map's bottom: inputs, tokens, embeddings and positions (chapters 1-3), on both sides."""
    for x, text in ((enc_x, '"I ate an apple"'), (dec_x, '"<sos> Ich habe einen Apfel"  (shifted right)')):
        _box(ax, x, 0.4, text, "input", w=5.4)
        _box(ax, x, 1.5, "tokenization: words to ids (ch 1)", "embed")
        _box(ax, x, 2.6, "embedding (ch 2)  +  position encoding (ch 3)", "embed", w=5.4)
        _arrow(ax, (x, 0.775), (x, 1.125))
        _arrow(ax, (x, 1.875), (x, 2.225))
        _arrow(ax, (x, 2.975), (x, 3.5))


def _road_head(ax, dec_x: float, dec_top: float) -> float:
    """The road map's top right: the output head (chapter 9) above the decoder; returns the height reached."""
    head = [("linear: one score per vocabulary word (ch 9)", "output"), ("softmax: probabilities (ch 9)", "output"),
            ('next word: "gegessen"', "input")]
    y = dec_top + 0.6
    _arrow(ax, (dec_x, dec_top), (dec_x, y - 0.375))
    for i, (text, kind) in enumerate(head):
        _box(ax, dec_x, y, text, kind, w=5.4)
        if i < len(head) - 1:
            _arrow(ax, (dec_x, y + 0.375), (dec_x, y + 1.05 - 0.375))
        y += 1.05
    return y


def plot_road_map(ax=None):
    """The encoder-decoder Transformer as a block diagram, each part labelled with its chapter."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 11))
    enc_x, dec_x = 3.4, 11.8

    _road_inputs(ax, enc_x, dec_x)  # chapters 1-3
    enc_top = _column(ax, enc_x, 4.2, [
        ("multi-head self-attention (ch 4, 5)", "attention"), ("add & norm (ch 6)", "norm"),
        ("feed-forward (ch 6)", "ffn"), ("add & norm (ch 6)", "norm"),
    ], "N ×\nencoder\nblock", "left")
    dec_top = _column(ax, dec_x, 4.2, [
        ("masked self-attention (ch 7)", "attention"), ("add & norm (ch 6)", "norm"),
        ("cross-attention (ch 8)", "attention"), ("add & norm (ch 6)", "norm"),
        ("feed-forward (ch 6)", "ffn"), ("add & norm (ch 6)", "norm"),
    ], "N ×\ndecoder\nblock", "right")

    # the encoder's output feeds the cross-attention of every decoder block
    mem_y = enc_top + 0.7
    _box(ax, enc_x, mem_y, "encoder output: one vector per source word", "input", w=5.4)
    _arrow(ax, (enc_x, enc_top), (enc_x, mem_y - 0.375))
    cross_y = 4.2 + 1.05 * 2
    mid_x = (enc_x + dec_x) / 2
    ax.plot([enc_x + 2.7, mid_x, mid_x], [mem_y, mem_y, cross_y], color="#b35900", lw=1.4, zorder=1)
    _arrow(ax, (mid_x, cross_y), (dec_x - 2.3, cross_y), color="#b35900", lw=1.4)
    ax.text(mid_x + 0.15, (mem_y + cross_y) / 2, "keys and\nvalues", fontsize=8, color="#b35900", va="center")

    y = _road_head(ax, dec_x, dec_top)  # chapter 9
    ax.text(enc_x, -0.75, "ENCODER\nreads the whole source sentence", ha="center", va="center", fontsize=9.5)
    ax.text(dec_x, -0.75, "DECODER\nwrites the translation, one word at a time", ha="center", va="center",
            fontsize=9.5)
    ax.set_xlim(-0.8, 16.0)
    ax.set_ylim(-1.4, y - 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("The road map: the Transformer, part by part (chapter 10 trains the whole)", fontsize=11)
    return ax
