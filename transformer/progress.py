"""A progress bar for training in a notebook (chapter 10).

:class:`TrainingProgress` is a callback for :func:`transformer.train.fit`:
``fit(..., callback=TrainingProgress(steps))``, or ``progress=True`` for short.
It is a widget rather than text on stderr, so the stored output of a chapter
(the bar as it was when displayed) is the same on every run and strict nbval
can check it.
"""

from __future__ import annotations

import time
from collections import deque


class TrainingProgress:
    """An ``IntProgress`` and an ``HTML`` label: the step, and the mean loss of the last ``every`` steps.

    Call it as ``bar(step, loss)`` after every step (what :func:`~transformer.train.fit` does
    with a callback); it redraws every ``every`` steps and at the last one.
    """

    def __init__(self, steps: int, description: str = "training", every: int = 10):
        import ipywidgets as w

        self.bar = w.IntProgress(value=0, min=0, max=steps, description=description)
        self.label = w.HTML(value=f"step 0 / {steps}")
        self.widget = w.HBox([self.bar, self.label])
        self.steps, self.every = steps, every
        self._recent: deque[float] = deque(maxlen=every)
        self._start = time.perf_counter()

    def __call__(self, step: int, loss: float) -> None:
        """The callback: record the loss of ``step``; every ``every`` steps, show their mean."""
        self._recent.append(loss)
        if step % self.every == 0 or step == self.steps:
            self.update(step, sum(self._recent) / len(self._recent))

    def update(self, step: int, loss: float) -> None:
        """Show ``step`` of ``steps`` and the loss ``loss``."""
        self.bar.value = step
        seconds = time.perf_counter() - self._start
        self.label.value = f"step {step} / {self.steps} &middot; loss {loss:.4f} &middot; {seconds:.0f} s"

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
