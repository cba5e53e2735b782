"""The sampling explorer (chapter 11): temperature, top-k and top-p on a model's next word after a prompt."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import torch

from ..sampling import sampling_distribution
from .attention import weight_bars
from .explorer import Explorer


class SamplingExplorer(Explorer):
    """Choose a prompt, a temperature, top-k (0: off) and top-p (1: off); see the next word's distribution,
    how many words the filters keep, and three sampled sentences.

    ``next_logits(prompt) -> (vocab,)`` and ``sample(prompt, temperature=, top_k=, top_p=) -> sentences``
    do the work; ``words[i]`` names token ``i``; ``is_good(sentence)`` marks a sample ✓ or ✗.
    """

    def __init__(self, prompts: Sequence[str], next_logits: Callable[[str], torch.Tensor],
                 sample: Callable[..., list[str]], words: Sequence[str], is_good: Callable[[str], bool]):
        import ipywidgets as w

        if not prompts:
            raise ValueError("prompts: expected at least one prompt, got none")
        self.next_logits, self.sample, self.words, self.is_good = next_logits, sample, list(words), is_good
        self.prompt = w.Dropdown(options=list(prompts), value=prompts[0], description="prompt")
        self.temperature = w.FloatSlider(value=1.0, min=0.5, max=2.0, step=0.5, description="temperature")
        self.top_k = w.IntSlider(value=0, min=0, max=10, description="top-k")
        self.top_p = w.FloatSlider(value=1.0, min=0.5, max=1.0, step=0.1, description="top-p")
        self.lay_out(self.prompt, [self.temperature, self.top_k, self.top_p])

    def _static_grid(self) -> dict:
        return {self.top_k: [0, 1, 3, 5, 8], self.top_p: [0.5, 0.8, 0.9, 1.0]}  # stored on the page; live: all

    @property
    def settings(self) -> dict:
        """The controls as keyword arguments of :func:`~transformer.sampling.sample_next` (off = None)."""
        return dict(temperature=self.temperature.value, top_k=self.top_k.value or None,
                    top_p=self.top_p.value if self.top_p.value < 1 else None)

    @property
    def probs(self) -> torch.Tensor:
        """The distribution the next word is drawn from, ``(vocab,)``."""
        return sampling_distribution(self.next_logits(self.prompt.value), **self.settings)

    @property
    def samples(self) -> list[str]:
        return self.sample(self.prompt.value, **self.settings)

    def _update(self, _change=None) -> None:
        order = self.next_logits(self.prompt.value).argsort(descending=True)[:10]  # the 10 likeliest words
        p = self.probs
        kept = int((p > 0).sum())
        lines = "".join(f"<li>{'✓' if self.is_good(s) else '✗'} {html.escape(s)}</li>" for s in self.samples)
        self.view.value = (f"<p>next word after <b>{html.escape(self.prompt.value)}</b>: {kept} of "
                           f"{len(self.words)} words kept</p>" + weight_bars([self.words[i] for i in order], p[order])
                           + f"<p>three samples (seed 0):</p><ul>{lines}</ul>")
