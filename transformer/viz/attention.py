"""Attention pictures: heatmaps, weight bars, and the soft-to-hard lookup explorer (chapter 4)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import torch

from .explorer import Explorer


def plot_attention(weights, queries: Sequence[str], keys: Sequence[str], ax=None, title: str | None = None,
                   annotate: bool = True):
    """Heatmap of ``weights (T_q, T_k)``: one row per query, one column per key."""
    import matplotlib.pyplot as plt

    w = torch.as_tensor(weights).detach().float()
    if w.dim() != 2 or w.shape != (len(queries), len(keys)):
        raise ValueError(f"weights: expected shape (T_q={len(queries)}, T_k={len(keys)}), got {tuple(w.shape)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * len(keys) + 2, 0.5 * len(queries) + 1.5))
    ax.imshow(w.numpy(), cmap="Blues", vmin=0.0, vmax=1.0)
    if annotate:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if w[i, j] > 0.6 else "black")
    return label_grid(ax, queries, keys, title)


def label_grid(ax, queries: Sequence[str], keys: Sequence[str], title: str | None = None):
    """Name the columns of a ``(T_q, T_k)`` picture on ``ax`` by key and its rows by query; returns ``ax``."""
    ax.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    return ax


def weight_bars(tokens: Sequence[str], weights, width: int = 240) -> str:
    """An HTML bar chart of one row of attention weights (used inside explorers)."""
    rows = []
    for tok, w in zip(tokens, torch.as_tensor(weights).tolist()):
        rows.append(
            f"<tr><td style='text-align:right;padding-right:6px'>{html.escape(tok)}</td>"
            f"<td><div style='background:#4a7fc1;height:12px;width:{round(w * width)}px'></div></td>"
            f"<td style='padding-left:6px'>{w:.2f}</td></tr>"
        )
    return "<table>" + "".join(rows) + "</table>"


class AttentionExplorer(Explorer):
    """Pick a query and stretch its scores; watch the softmax weights over the keys (chapter 4).

    ``scores (T_q, T_k)`` are raw dot products ``q . k``. The view shows
    ``softmax(stretch * scores[query] / sqrt(d_k))``: stretch 1 is scaled
    dot-product attention, a large stretch approaches a hard lookup (argmax),
    a small one approaches a plain average.
    """

    def __init__(self, tokens: Sequence[str], scores: torch.Tensor, d_k: int, query: int = 0):
        import ipywidgets as w

        self.tokens, self.scores, self.d_k = list(tokens), torch.as_tensor(scores).float(), d_k
        if self.scores.shape != (len(self.tokens), len(self.tokens)):
            raise ValueError(f"scores: expected shape ({len(self.tokens)}, {len(self.tokens)}), "
                             f"got {tuple(self.scores.shape)}")
        self.query = w.Dropdown(options=[(t, i) for i, t in enumerate(self.tokens)], value=query,
                                description="query")
        self.stretch = w.FloatLogSlider(value=1.0, base=10, min=-1, max=1.5, step=0.05,
                                        description="stretch", readout_format=".2f")
        self.lay_out([self.query, self.stretch])

    @property
    def weights(self) -> torch.Tensor:
        """The current query's weights over the keys, ``(T_k,)``; they sum to 1."""
        row = self.scores[self.query.value] * self.stretch.value / self.d_k ** 0.5
        return row.softmax(dim=-1)

    def _update(self, _change=None) -> None:
        self.view.value = weight_bars(self.tokens, self.weights)
