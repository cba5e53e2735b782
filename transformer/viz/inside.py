"""Looking inside (chapter 13): a head's pattern on a repeated sequence, and the logit lens, as explorers.

Both take tensors computed in the chapter (the explorers compute nothing of the model), so that every
view is stored for the static page: :class:`HeadPatternExplorer` picks a layer and a head,
:class:`LogitLensExplorer` a position and a depth.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import torch

from .attention import weight_bars
from .explorer import Explorer


def pattern_svg(weights: torch.Tensor, tokens: Sequence[str], label: str, cell: int = 11) -> str:
    """An SVG heatmap of ``weights (T, T)``, one row per query and one column per key, darker = more weight."""
    t = len(tokens)
    rects = []
    for i in range(t):
        for j in range(i + 1):
            w = float(weights[i, j])
            if w >= 0.02:  # lighter cells are left white
                rects.append(f"<rect x='{j * cell}' y='{i * cell}' width='{cell}' height='{cell}' "
                             f"fill='#1f4e8c' fill-opacity='{w:.2f}'/>")
    size = t * cell
    return (f"<svg width='{size}' height='{size}' role='img' aria-label='{html.escape(label)}'>"
            f"<rect width='{size}' height='{size}' fill='white' stroke='#767676'/>" + "".join(rects) + "</svg>")


class HeadPatternExplorer(Explorer):
    """Pick a layer and a head: its attention on a repeated sequence, and its scores.

    ``patterns (layers, heads, T, T)`` are the weights on one sequence of ``tokens``; ``scores`` maps a
    score's name to a ``(layers, heads)`` tensor (e.g. previous-token and induction scores).
    """

    def __init__(self, tokens: Sequence[str], patterns: torch.Tensor, scores: dict[str, torch.Tensor]):
        import ipywidgets as w

        self.tokens, self.patterns = list(tokens), torch.as_tensor(patterns).detach().double()
        layers, heads, t, _ = self.patterns.shape
        if t != len(self.tokens):
            raise ValueError(f"patterns: expected (layers, heads, T={len(self.tokens)}, T), "
                             f"got {tuple(self.patterns.shape)}")
        self.scores = {name: torch.as_tensor(s).detach() for name, s in scores.items()}
        self.layer = w.Dropdown(options=list(range(layers)), value=0, description="layer")
        self.head = w.Dropdown(options=list(range(heads)), value=0, description="head")
        self.lay_out([self.layer, self.head])

    @property
    def weights(self) -> torch.Tensor:
        """The chosen head's weights ``(T, T)``."""
        return self.patterns[self.layer.value, self.head.value]

    def _update(self, _change=None) -> None:
        layer, head = self.layer.value, self.head.value
        numbers = ", ".join(f"{name} {float(s[layer, head]):.2f}" for name, s in self.scores.items())
        label = f"Attention of layer {layer}, head {head} over {len(self.tokens)} tokens, one row per query: {numbers}"
        self.view.value = (f"<p>layer {layer}, head {head}: {html.escape(numbers)}</p>"
                           + pattern_svg(self.weights, self.tokens, label))


class LogitLensExplorer(Explorer):
    """Pick a position and a depth: the logit lens's likeliest next tokens there.

    ``lens (depths, T, vocab)`` holds the decoded stream (:func:`transformer.lens.logit_lens` of one sequence),
    ``tokens`` the sequence, ``vocab`` the name of every id, ``depth_names`` a name per depth.
    """

    def __init__(self, tokens: Sequence[str], lens: torch.Tensor, vocab: Sequence[str], depth_names: Sequence[str],
                 position: int = 0, k: int = 5):
        import ipywidgets as w

        self.tokens, self.vocab, self.k = list(tokens), list(vocab), k
        self.probs = torch.as_tensor(lens).detach().double().softmax(dim=-1)  # (depths, T, vocab)
        if self.probs.shape[:2] != (len(depth_names), len(self.tokens)):
            raise ValueError(f"lens: expected (depths={len(depth_names)}, T={len(self.tokens)}, vocab), "
                             f"got {tuple(self.probs.shape)}")
        self.position = w.Dropdown(options=[(f"{i}: {t}", i) for i, t in enumerate(self.tokens)], value=position,
                                   description="position")
        self.depth = w.Dropdown(options=[(name, i) for i, name in enumerate(depth_names)], value=0, description="after")
        self.lay_out([self.position, self.depth])

    @property
    def top(self) -> list[tuple[str, float]]:
        """The ``k`` likeliest next tokens at the chosen position and depth, with their probabilities."""
        p, ids = self.probs[self.depth.value, self.position.value].topk(self.k)
        return [(self.vocab[i], float(q)) for i, q in zip(ids.tolist(), p)]

    def _update(self, _change=None) -> None:
        top = self.top
        pos = self.position.value
        self.view.value = (f"<p>after {html.escape(self.depth.label)}, position {pos} "
                           f"(<b>{html.escape(self.tokens[pos])}</b>) predicts next: "
                           f"<b>{html.escape(top[0][0])}</b> ({top[0][1]:.2f})</p>"
                           + weight_bars([name for name, _ in top], torch.tensor([q for _, q in top])))
