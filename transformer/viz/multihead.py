"""Multi-head pictures: heads side by side, the head-and-query explorer and the head-count explorer (chapter 5)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import torch

from ..multihead import MultiHeadAttention
from .attention import plot_attention, weight_bars
from .explorer import Explorer


def plot_heads(weights, tokens: Sequence[str], titles: Sequence[str] | None = None, annotate: bool = False,
               suptitle: str | None = None, size: float = 4.2):
    """Heatmaps of ``weights (heads, seq, seq)`` side by side, one per head; returns ``(fig, axes)``."""
    import matplotlib.pyplot as plt

    w = torch.as_tensor(weights).detach().float()
    if w.dim() != 3 or w.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"weights: expected shape (heads, T_q={len(tokens)}, T_k={len(tokens)}), "
                         f"got {tuple(w.shape)}")
    if titles is not None and len(titles) != w.shape[0]:
        raise ValueError(f"titles: expected one title per head ({w.shape[0]}), got {len(titles)}")
    fig, axes = plt.subplots(1, w.shape[0], figsize=(size * w.shape[0], size), squeeze=False)
    for i, ax in enumerate(axes[0]):
        plot_attention(w[i], tokens, tokens, ax=ax, annotate=annotate,
                       title=titles[i] if titles is not None else f"head {i + 1}")
        if i > 0:
            ax.set_ylabel("")
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig, axes[0]


class HeadExplorer(Explorer):
    """Pick a head and a query; see that query's weights over the keys in that head (chapter 5).

    ``patterns`` maps a name (e.g. ``"head 1"``) to attention weights ``(seq, seq)``
    over ``tokens``: one entry per head, and possibly a single-head model to
    compare with. The view lists, for the chosen head and query, every key's
    weight and names the key with the largest one.
    """

    def __init__(self, tokens: Sequence[str], patterns: Mapping[str, torch.Tensor], query: int = 0):
        import ipywidgets as w

        self.tokens = list(tokens)
        self.patterns = {name: torch.as_tensor(p).detach().float() for name, p in patterns.items()}
        if not self.patterns:
            raise ValueError("patterns: expected at least one (T, T) tensor of weights, got none")
        for name, p in self.patterns.items():
            if p.shape != (len(self.tokens), len(self.tokens)):
                raise ValueError(f"patterns[{name!r}]: expected shape ({len(self.tokens)}, {len(self.tokens)}), "
                                 f"got {tuple(p.shape)}")
        names = list(self.patterns)
        self.head = w.Dropdown(options=names, value=names[0], description="head")
        self.query = w.Dropdown(options=[(t, i) for i, t in enumerate(self.tokens)], value=query,
                                description="query")
        self.lay_out([self.head, self.query])

    @property
    def weights(self) -> torch.Tensor:
        """The chosen query's weights over the keys in the chosen head, ``(T_k,)``; they sum to 1."""
        return self.patterns[self.head.value][self.query.value]

    @property
    def top(self) -> tuple[str, float]:
        """The key with the largest weight, and that weight."""
        j = int(self.weights.argmax())
        return self.tokens[j], float(self.weights[j])

    def _update(self, _change=None) -> None:
        key, weight = self.top
        head = html.escape(self.head.value)
        query = html.escape(self.tokens[self.query.value])
        self.view.value = (f"<p>In <b>{head}</b>, <b>{query}</b> looks most at <b>{html.escape(key)}</b> "
                           f"(weight {weight:.2f}).</p>" + weight_bars(self.tokens, self.weights))


def _divisors(n: int) -> list[int]:
    return [h for h in range(1, n + 1) if n % h == 0]


class HeadCountExplorer(Explorer):
    """Choose the number of heads for a fixed ``d_model``: d_h, every shape, the parameter count (chapter 5).

    The view is a table of the tensors of one multi-head self-attention layer
    for a batch of ``batch`` sequences of ``seq`` tokens, and the number of
    parameters, counted on a real :class:`~transformer.multihead.MultiHeadAttention`.
    """

    def __init__(self, d_model: int = 512, batch: int = 1, seq: int = 10, n_heads: int = 8):
        import ipywidgets as w

        if d_model % n_heads:
            raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
        self.d_model, self.batch, self.seq = d_model, batch, seq
        self.n_heads = w.Dropdown(options=_divisors(d_model), value=n_heads, description="heads h")
        self._counts: dict[int, int] = {}
        self.lay_out(self.n_heads)

    @property
    def d_h(self) -> int:
        return self.d_model // self.n_heads.value

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Step -> shape, from the input to the output of the layer."""
        b, t, d, h, d_h = self.batch, self.seq, self.d_model, self.n_heads.value, self.d_h
        return {
            "input x": (b, t, d),
            "Q = x W^Q (also K, V)": (b, t, d),
            "split into heads": (b, h, t, d_h),
            "scores and weights": (b, h, t, t),
            "each head's output": (b, h, t, d_h),
            "concatenated": (b, t, h * d_h),
            "output = concat W^O": (b, t, d),
        }

    @property
    def n_params(self) -> int:
        """Parameters of the layer, counted on a real module (the same for every h)."""
        h = self.n_heads.value
        if h not in self._counts:
            with torch.device("meta"):  # shapes only: no memory, no random numbers drawn
                module = MultiHeadAttention(self.d_model, h)
            self._counts[h] = sum(p.numel() for p in module.parameters())
        return self._counts[h]

    @property
    def n_weights(self) -> int:
        """How many attention weights the layer computes for the batch: ``batch * h * seq * seq``."""
        return self.batch * self.n_heads.value * self.seq * self.seq

    def _update(self, _change=None) -> None:
        rows = "".join(f"<tr><td style='padding-right:12px'>{html.escape(step)}</td>"
                       f"<td><code>{shape}</code></td></tr>" for step, shape in self.shapes.items())
        self.view.value = (
            f"<p>d_model = {self.d_model}, h = {self.n_heads.value}: "
            f"<b>d_h = {self.d_model} / {self.n_heads.value} = {self.d_h}</b></p>"
            f"<table>{rows}</table>"
            f"<p>parameters: <b>{self.n_params:,}</b> (4 d_model² + 4 d_model, whatever h is); "
            f"attention weights computed: {self.n_weights:,}</p>"
        )
