"""Mask pictures and explorers: causal and padding masks (chapter 7), the source mask of cross-attention (chapter 8)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import torch

from .._validate import require_int
from ..masks import causal_mask, masked_softmax
from .attention import label_grid, weight_bars
from .explorer import Explorer

PAD = "<pad>"
BLOCKED = "-∞"


def mask_table(mask, cell: Callable[[int, int], str], row_labels: Sequence[str] | None = None,
               col_labels: Sequence[str] | None = None, blocked: str = BLOCKED) -> str:
    """A mask as a text table: ``cell(i, j)`` where ``mask[i, j]`` is True, ``blocked`` where it is False.

    ``mask (T_q, T_k)`` bool. With ``cell = lambda i, j: f"q{i+1}·k{j+1}"`` this is
    the table of masked scores of chapter 7.
    """
    m = torch.as_tensor(mask)
    if m.dim() != 2 or m.dtype != torch.bool:
        raise ValueError(f"mask: expected a (T_q, T_k) bool tensor, got shape {tuple(m.shape)} and dtype {m.dtype}")
    for name, labels, size in (("row_labels", row_labels, m.shape[0]), ("col_labels", col_labels, m.shape[1])):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name}: expected {size} labels, got {len(labels)}")
    body = [[cell(i, j) if m[i, j] else blocked for j in range(m.shape[1])] for i in range(m.shape[0])]
    rows = [list(row) for row in body]
    if col_labels is not None:
        rows.insert(0, list(col_labels))
    if row_labels is not None:
        labels = ([""] if col_labels is not None else []) + list(row_labels)
        rows = [[label, *row] for label, row in zip(labels, rows)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(s.ljust(w) for s, w in zip(r, widths)).rstrip() for r in rows)


def plot_mask(mask, queries: Sequence[str], keys: Sequence[str], ax=None, title: str | None = None):
    """Draw ``mask (T_q, T_k)``: allowed cells dark, blocked cells light and marked with -∞."""
    import matplotlib.pyplot as plt

    m = torch.as_tensor(mask)
    if m.dim() != 2 or m.shape != (len(queries), len(keys)):
        raise ValueError(f"mask: expected shape (T_q={len(queries)}, T_k={len(keys)}), got {tuple(m.shape)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * len(keys) + 2, 0.45 * len(queries) + 1.5))
    ax.imshow(m.float().numpy(), cmap="Blues", vmin=-0.25, vmax=1.25)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if not m[i, j]:
                ax.text(j, i, BLOCKED, ha="center", va="center", fontsize=9, color="0.35")
    return label_grid(ax, queries, keys, title)


def mask_grid_html(scores, mask, queries: Sequence[str], keys: Sequence[str], highlight: int | None = None) -> str:
    """An HTML grid: the score where the mask allows the key, -∞ where it does not; one row highlighted."""
    cells = ["<tr><td></td>" + "".join(f"<th style='padding:2px 6px;font-weight:normal'>{html.escape(k)}</th>"
                                       for k in keys) + "</tr>"]
    for i, q in enumerate(queries):
        border = "border:2px solid #d9822b;" if i == highlight else ""
        row = [f"<td style='text-align:right;padding-right:6px;{border}'>{html.escape(q)}</td>"]
        for j in range(len(keys)):
            if mask[i, j]:
                row.append(f"<td style='background:#cfe0f3;text-align:center;padding:2px 6px;{border}'>"
                           f"{float(scores[i, j]):.2f}</td>")
            else:
                row.append(f"<td style='background:#eeeeee;color:#555;text-align:center;padding:2px 6px;{border}'>"
                           f"{BLOCKED}</td>")
        cells.append("<tr>" + "".join(row) + "</tr>")
    return "<table style='border-collapse:collapse'>" + "".join(cells) + "</table>"


class MaskExplorer(Explorer):
    """A batch of sentences, padded to one length: toggle the causal mask, the padding mask and the
    padding side, pick a sentence, cut tokens off its end, pick a query (chapter 7).

    ``sentences`` are token lists; ``scores (batch, L, L)`` are the (already scaled) scores
    between their tokens, ``L`` the longest sentence. Padding keys score 0. The view shows one
    sentence: the "cut off" slider turns that many of its last tokens into ``<pad>`` (the other
    sentences keep their full length). Its range, up to the shortest sentence's length, is the same
    for every sentence, so the page shows one slider in its place whatever the sentence (a control
    whose range changed with the sentence would be copied into each sentence's views, after every
    other control in the order of the Tab key). ``sentence`` is the one shown first.
    """

    def __init__(self, sentences: Sequence[Sequence[str]], scores: torch.Tensor, causal: bool = True,
                 query: int = 0, sentence: int = 0):
        import ipywidgets as w

        self.sentences = [list(s) for s in sentences]
        self.seq_len = max(len(s) for s in self.sentences)
        self.scores = torch.as_tensor(scores).float()
        want = (len(self.sentences), self.seq_len, self.seq_len)
        if tuple(self.scores.shape) != want:
            raise ValueError(f"scores: expected shape (batch, L, L) = {want}, got {tuple(self.scores.shape)}")
        last = len(self.sentences) - 1
        require_int("sentence", sentence, 0, last, expected=f"an index in [0, {last}]")
        self.causal = w.Checkbox(value=causal, description="causal mask")
        self.mask_padding = w.Checkbox(value=True, description="padding mask")
        self.side = w.ToggleButtons(options=["right", "left"], value="right", description="pad on the")
        self.sentence = w.Dropdown(options=[(" ".join(s), b) for b, s in enumerate(self.sentences)],
                                   value=sentence, description="sentence")
        self.cut = w.IntSlider(value=0, min=0, max=min(len(s) for s in self.sentences), description="cut off")
        self.query = w.IntSlider(value=query, min=0, max=self.seq_len - 1, description="query")
        self.lay_out([self.causal, self.mask_padding], self.side, [self.sentence, self.cut], self.query)

    @property
    def lengths(self) -> list[int]:
        """Each sentence's length in the batch: the one shown without its last ``cut`` tokens, the others in full."""
        return [len(s) - (self.cut.value if b == self.sentence.value else 0) for b, s in enumerate(self.sentences)]

    def _offsets(self) -> list[int]:
        """Where each sentence's first token sits: 0 on the right side, after the padding on the left."""
        if self.side.value == "right":
            return [0] * len(self.sentences)
        return [self.seq_len - n for n in self.lengths]

    @property
    def tokens(self) -> list[list[str]]:
        """The padded batch, one list of ``seq_len`` tokens per sentence."""
        out = []
        for s, length, start in zip(self.sentences, self.lengths, self._offsets()):
            row = [PAD] * self.seq_len
            row[start:start + length] = s[:length]
            out.append(row)
        return out

    @property
    def is_real(self) -> torch.Tensor:
        """``(batch, seq)`` bool: True where the token is real, False where it is padding."""
        return torch.tensor([[t != PAD for t in row] for row in self.tokens])

    @property
    def mask(self) -> torch.Tensor:
        """The current mask, ``(batch, seq, seq)`` bool, True = may attend."""
        batch, t = len(self.sentences), self.seq_len
        mask = torch.ones(batch, t, t, dtype=torch.bool)
        if self.causal.value:
            mask = mask & causal_mask(t)  # (batch, seq, seq) & (seq, seq)
        if self.mask_padding.value:
            mask = mask & self.is_real[:, None, :]  # (batch, seq, seq) & (batch, 1, seq): hide the pad keys
        return mask

    @property
    def placed_scores(self) -> torch.Tensor:
        """``scores`` moved to the tokens' padded positions, ``(batch, seq, seq)``; 0 next to padding."""
        out = torch.zeros(len(self.sentences), self.seq_len, self.seq_len)
        for b, (n, start) in enumerate(zip(self.lengths, self._offsets())):
            out[b, start:start + n, start:start + n] = self.scores[b, :n, :n]
        return out

    @property
    def all_weights(self) -> torch.Tensor:
        """Attention weights of every query in the batch, ``(batch, seq, seq)``; a row with no key is all 0."""
        return masked_softmax(self.placed_scores, self.mask)

    @property
    def weights(self) -> torch.Tensor:
        """The chosen query's weights over the keys, ``(seq,)``."""
        return self.all_weights[self.sentence.value, self.query.value]

    def _update(self, _change=None) -> None:
        b, t = self.sentence.value, self.query.value
        tokens = self.tokens[b]
        labels = [f"{i}: {tok}" for i, tok in enumerate(tokens)]
        allowed = int(self.mask[b, t].sum())
        if allowed == 0:
            note = (f"query {t} ({html.escape(tokens[t])}) may attend to no key: the softmax would give 0/0 = NaN; "
                    "this package gives it zero weights and a zero output.")
        else:
            note = f"query {t} ({html.escape(tokens[t])}) may attend to {allowed} of {self.seq_len} keys."
        self.view.value = (mask_grid_html(self.placed_scores[b], self.mask[b], labels, labels, highlight=t)
                           + f"<p>{note}</p>" + weight_bars(labels, self.weights))


class CrossAttentionExplorer(Explorer):
    """Pick a decoder position; see its cross-attention weights over the source words (chapter 8).

    ``scores (T_d, T_e)`` are the scaled scores of the decoder ``queries`` against the source
    ``keys``; source tokens equal to ``<pad>`` are hidden by the padding mask unless it is unticked.
    """

    def __init__(self, queries: Sequence[str], keys: Sequence[str], scores: torch.Tensor, query: int = 0):
        import ipywidgets as w

        self.queries, self.keys = list(queries), list(keys)
        self.scores = torch.as_tensor(scores).float()
        if tuple(self.scores.shape) != (len(self.queries), len(self.keys)):
            raise ValueError(f"scores: expected shape (T_d={len(self.queries)}, T_e={len(self.keys)}), "
                             f"got {tuple(self.scores.shape)}")
        self.query = w.Dropdown(options=[(q, i) for i, q in enumerate(self.queries)], value=query,
                                description="decoder")
        self.mask_padding = w.Checkbox(value=True, description="mask the source padding")
        self.lay_out([self.query, self.mask_padding])

    @property
    def mask(self) -> torch.Tensor:
        """``(1, T_e)`` bool: the source keys every decoder position may attend to."""
        real = torch.tensor([[k != PAD for k in self.keys]])
        return real if self.mask_padding.value else torch.ones_like(real)

    @property
    def weights(self) -> torch.Tensor:
        """The chosen decoder position's weights over the source, ``(T_e,)``; they sum to 1."""
        return masked_softmax(self.scores, self.mask)[self.query.value]

    def _update(self, _change=None) -> None:
        on_pad = float(self.weights[[k == PAD for k in self.keys]].sum())
        self.view.value = (weight_bars(self.keys, self.weights)
                           + f"<p>weight on &lt;pad&gt;: {on_pad:.2f}</p>")
