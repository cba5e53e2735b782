"""Decoding pictures: next-token distributions at several temperatures, and the sampling explorer (chapter 9)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import torch

from ..decoding import generate, softmax_with_temperature
from .attention import weight_bars
from .explorer import Explorer


def plot_temperatures(logits, tokens: Sequence[str], temperatures: Sequence[float], axes=None,
                      title: str | None = None):
    """One bar chart per temperature τ of ``softmax(logits / τ)``; ``logits (vocab,)``. Returns the axes."""
    import matplotlib.pyplot as plt

    z = torch.as_tensor(logits).detach().float()
    if z.dim() != 1 or z.shape[0] != len(tokens):
        raise ValueError(f"logits: expected shape (vocab={len(tokens)},), got {tuple(z.shape)}")
    if len(temperatures) == 0:
        raise ValueError("temperatures: expected at least one temperature, got none")
    if axes is None:
        fig, axes = plt.subplots(1, len(temperatures), figsize=(2.9 * len(temperatures), 3.2), sharey=True,
                                 squeeze=False)
        axes = axes[0]
        if title:
            fig.suptitle(title)
    for ax, t in zip(axes, temperatures):
        p = softmax_with_temperature(z, t)
        top = int(p.argmax())
        colors = ["tab:orange" if i == top else "tab:blue" for i in range(len(tokens))]
        ax.bar(range(len(tokens)), p.numpy(), color=colors)
        ax.axhline(1 / len(tokens), color="k", linestyle=":", linewidth=1)
        ax.set_xticks(range(len(tokens)), tokens, rotation=60, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"τ = {t:g}")
        ax.set_xlabel("next token")
    axes[0].set_ylabel("probability")
    return axes


class DecodingExplorer(Explorer):
    """Move the temperature and the seed; watch the next-token distribution and a sampled continuation.

    ``logits_fn(ids (1, seq)) -> (1, seq, vocab)`` is a language model;
    ``prefix`` is the list of ids it starts from. The view shows the ``top``
    most probable next tokens under ``softmax(logits / temperature)``, the
    continuation sampled with ``torch.Generator().manual_seed(seed)``, and the
    greedy (argmax) continuation for comparison (chapter 9).
    """

    def __init__(self, tokens: Sequence[str], logits_fn: Callable[[torch.Tensor], torch.Tensor],
                 prefix: Sequence[int], eos_id: int | None = None, max_new_tokens: int = 8,
                 top: int | None = None, seed: int = 0):
        import ipywidgets as w

        self.tokens, self.logits_fn = list(tokens), logits_fn
        self.prefix = torch.as_tensor(list(prefix), dtype=torch.long)[None]  # (1, seq)
        self.eos_id, self.max_new_tokens = eos_id, max_new_tokens
        self.top = len(self.tokens) if top is None else min(top, len(self.tokens))
        if self.prefix.shape[1] == 0:
            raise ValueError("prefix: expected at least one token id, got none")
        logits = self._next_logits()
        if logits.shape != (len(self.tokens),):
            raise ValueError(f"logits_fn: expected logits of shape (1, T, vocab={len(self.tokens)}), "
                             f"got a last row of shape {tuple(logits.shape)}")
        self.temperature = w.FloatLogSlider(value=1.0, base=10, min=-1.5, max=1.0, step=0.05,
                                            description="temperature", readout_format=".2f")
        self.seed = w.IntSlider(value=seed, min=0, max=99, description="seed")
        self.lay_out([self.temperature, self.seed])

    def _static_grid(self) -> dict:
        """The page stores temperatures by tenths of a decade and seeds 0 to 19 (live, finer and 0 to 99)."""
        return {self.temperature: [10 ** (k / 10) for k in range(-15, 11)],
                self.seed: list(range(0, min(self.seed.max, 19) + 1))}

    def _next_logits(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.as_tensor(self.logits_fn(self.prefix))[0, -1].float()  # (vocab,)

    @property
    def probs(self) -> torch.Tensor:
        """The next token's distribution after the prefix, ``(vocab,)``, at the current temperature."""
        return softmax_with_temperature(self._next_logits(), self.temperature.value)

    @property
    def sample(self) -> torch.Tensor:
        """The prefix and a continuation sampled at the current temperature and seed, ``(seq,)`` ids."""
        g = torch.Generator().manual_seed(self.seed.value)
        return generate(self.logits_fn, self.prefix, self.max_new_tokens, self.eos_id,
                        temperature=self.temperature.value, generator=g)[0]

    @property
    def greedy(self) -> torch.Tensor:
        """The prefix and its greedy (argmax) continuation, ``(seq,)`` ids; it ignores temperature and seed."""
        return generate(self.logits_fn, self.prefix, self.max_new_tokens, self.eos_id)[0]

    def text(self, ids) -> str:
        """The tokens of ``ids``, joined by spaces."""
        return " ".join(self.tokens[int(i)] for i in ids)

    def _update(self, _change=None) -> None:
        p = self.probs
        order = p.argsort(descending=True, stable=True)[: self.top]  # most probable first
        context = html.escape(self.text(self.prefix[0]))
        self.view.value = (
            f"<p>next token after <b>{context}</b>, temperature {self.temperature.value:.2f}:</p>"
            + weight_bars([self.tokens[int(i)] for i in order], p[order])
            + f"<p>sampled (seed {self.seed.value}): <b>{html.escape(self.text(self.sample))}</b><br>"
            + f"greedy: {html.escape(self.text(self.greedy))}</p>"
        )
