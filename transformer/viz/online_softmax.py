"""The online-softmax explorer (chapter 12): one row of scores read tile by tile, with its running maximum and sum."""

from __future__ import annotations

import html

import torch

from .._validate import require_choice, require_float, require_rank
from ..flash import online_steps  # the running maximum and sum after each tile, from the kernel's own step
from .explorer import Explorer

MAX_KEYS = 32


class OnlineSoftmaxExplorer(Explorer):
    """Read a row of scores in tiles of 1, 2, 4 or 8 keys and stop after any key (chapter 12).

    After each tile the explorer shows the running maximum ``m``, the factor ``exp(m_old - m)`` that rescaled the
    sum so far, and the running sum ``l``; below, the weights ``exp(s - m) / l`` of the keys read so far, which
    are the softmax of those keys, and after the last key the softmax of the whole row.
    """

    BLOCKS = (1, 2, 4, 8)

    def __init__(self, scores: torch.Tensor, block: int = 4):
        import ipywidgets as w

        require_float("scores", scores)
        require_rank("scores", scores, (1,), "(T_k,)")
        if not 2 <= scores.shape[0] <= MAX_KEYS:
            raise ValueError(f"scores: expected between 2 and {MAX_KEYS} keys, got {scores.shape[0]}")
        require_choice("block", block, self.BLOCKS)
        self.scores = scores.detach().double().clone()
        n = self.scores.shape[0]
        self.block = w.ToggleButtons(options=list(self.BLOCKS), value=block, description="tile size")
        self.read = w.IntSlider(value=n, min=1, max=n, description="keys read")
        self.lay_out([self.block, self.read])

    @property
    def steps(self) -> list[dict]:
        return online_steps(self.scores, self.block.value, self.read.value)

    @property
    def weights(self) -> torch.Tensor:
        """``exp(s - m) / l`` of the keys read so far ``(read,)``: their softmax."""
        last = self.steps[-1]
        return torch.exp(self.scores[: self.read.value] - last["m"]) / last["l"]

    def _update(self, _change=None) -> None:
        steps = self.steps
        rows = "".join(
            f"<tr><td>{i + 1}</td><td>{s['keys'][0]}..{s['keys'][1] - 1}</td><td>{s['m']:.2f}</td>"
            f"<td>{'—' if i == 0 else format(s['rescale'], '.4f')}"
            f"{' (the maximum grew)' if i and s['rescale'] < 1 else ''}</td><td>{s['l']:.4f}</td></tr>"
            for i, s in enumerate(steps))
        table = ("<table><tr><th>tile</th><th>keys</th><th>running max m</th><th>old sum times e^(m_old − m)</th>"
                 f"<th>running sum ℓ</th></tr>{rows}</table>")
        read, n = self.read.value, self.scores.shape[0]
        weights = self.weights
        bars = "".join(
            f"<tr><td style='text-align:right;padding-right:6px'>key {j}</td><td>{float(self.scores[j]):.2f}</td>"
            + (f"<td><div style='width:{round(200 * float(weights[j]))}px;height:10px;background:#4a7fc1'></div>"
               f"</td><td>{float(weights[j]):.3f}</td>" if j < read else "<td colspan='2'>not read yet</td>")
            + "</tr>" for j in range(n))
        done = ("all keys read: these are the softmax weights of the whole row" if read == n
                else f"{read} of {n} keys read: these weights are the softmax of the keys read so far")
        self.view.value = (f"{table}<p>{html.escape(done)}</p><table><tr><th></th><th>score</th>"
                           f"<th colspan='2'>weight e^(s − m) / ℓ</th></tr>{bars}</table>")
