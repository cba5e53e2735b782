"""Byte-pair encoding, seen merge by merge: the merges explorer (chapter 1)."""

from __future__ import annotations

import html

import torch

from .._validate import require_int
from ..tokenization import UNK, BPETokenizer
from .explorer import Explorer

# Two alternating fills, so that neighbouring tokens of one word stay apart; <unk> is red.
_FILLS = ("#dbe8f6", "#f9e3c8")
_UNK_FILL = "#f4b6b6"


def token_boxes(words: list[list[str]], unknown: set[str] | frozenset[str] = frozenset()) -> str:
    """HTML: each word's tokens as adjacent boxes, a gap between words; tokens in ``unknown`` show as <unk>."""
    parts = []
    for word in words:
        boxes = []
        for i, tok in enumerate(word):
            fill, label = (_UNK_FILL, UNK) if tok in unknown else (_FILLS[i % 2], tok)
            boxes.append(f"<span style='background:{fill};border:1px solid #888;padding:1px 4px;"
                         f"font-family:monospace'>{html.escape(label)}</span>")
        parts.append("<span style='margin-right:10px;white-space:nowrap'>" + "".join(boxes) + "</span>")
    return "<div style='line-height:2'>" + "".join(parts) + "</div>"


class BPEExplorer(Explorer):
    """Choose how many of a trained tokenizer's merges to use; watch a text split (chapter 1).

    With 0 merges every character is a token; each merge glues one frequent pair
    of symbols into a new token, so the vocabulary grows by one and a text
    needs fewer (longer) tokens. Characters the tokenizer never saw become <unk>.
    """

    def __init__(self, tokenizer: BPETokenizer, text: str, merges: int | None = None):
        import ipywidgets as w

        if not isinstance(tokenizer, BPETokenizer):
            raise TypeError(f"tokenizer: expected a BPETokenizer, got {type(tokenizer).__name__}")
        if not isinstance(text, str):
            raise TypeError(f"text: expected str, got {type(text).__name__}")
        self.full = tokenizer
        n = len(tokenizer.merges)
        start = n if merges is None else merges
        require_int("merges", start, 0, n)
        self.merges = w.IntSlider(value=start, min=0, max=n, description="merges")
        self.text = w.Text(value=text, description="text", continuous_update=False)
        self.lay_out([self.merges, self.text])

    @property
    def tokenizer(self) -> BPETokenizer:
        """The tokenizer with the first ``merges.value`` merges."""
        return self.full.truncated(self.merges.value)

    @property
    def tokens(self) -> list[str]:
        """The tokens of the current text (a character the tokenizer never saw stays a token of its own)."""
        return self.tokenizer.tokenize(self.text.value)

    @property
    def ids(self) -> torch.Tensor:
        """The ids of the current text, ``(n_tokens,)`` int64; unknown characters get the id of <unk>."""
        return torch.tensor(self.tokenizer.encode(self.text.value), dtype=torch.long)

    def _update(self, _change=None) -> None:
        tok = self.tokenizer
        k = self.merges.value
        words = [tok.tokenize_word(word) for word in self.text.value.split()]
        unknown = {t for word in words for t in word if t not in tok.vocab}
        n_tokens = sum(len(word) for word in words)
        last = f"last merge: {html.escape(' + '.join(tok.merges[-1]))}" if k else "no merges: one token per character"
        head = (f"<p>{k} merges &middot; vocabulary {len(tok.vocab)} tokens &middot; "
                f"this text: {n_tokens} tokens for {len(words)} words &middot; {last}</p>")
        self.view.value = head + token_boxes(words, unknown)
