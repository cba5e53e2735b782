"""Progress of a grading run: a live bar on a terminal, occasional plain lines in a log, nothing with ``quiet``.

The bar (rich's) shows done/total, the elapsed time, the rate and an estimate of the time left; a submission
that needs attention gets its own line as soon as it is graded. When the output is not a terminal (a CI log, a
redirect), a plain line is printed every ``PLAIN_EVERY_S`` seconds and at the end. Every estimate made is kept
(``estimates``), so ``make bench`` can say how far it was off.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

PLAIN_EVERY_S = 30.0  # seconds between two plain progress lines when the output is not a terminal


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


@dataclass
class Progress:
    """``start(total)``, then ``advance(attention)`` once per finished submission, then ``close()``."""

    quiet: bool = False
    stream: object = None
    total: int = 0
    done: int = 0
    started: float = 0.0
    estimates: list[tuple[float, float]] = field(default_factory=list)  # (elapsed s, estimated s left) per step
    _bar: object = None
    _task: object = None
    _printed: float = 0.0
    _finished: float | None = None  # elapsed seconds when the last submission finished

    def __post_init__(self):
        self.stream = self.stream or sys.stdout

    @property
    def live(self) -> bool:
        return not self.quiet and getattr(self.stream, "isatty", lambda: False)()

    def start(self, total: int, what: str = "grading") -> None:
        self.total, self.done, self.started = total, 0, time.perf_counter()
        self._printed = self.started
        if self.live and total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            # Refreshed by ``advance`` only: no thread runs while the grading workers are forked.
            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[rate]}  left {task.fields[left]}"),
                            console=Console(file=self.stream), auto_refresh=False, transient=False)
            self._bar.start()
            self._task = self._bar.add_task(what, total=total, rate="", left="--:--")
            self._bar.refresh()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left at the mean rate so far (submissions are graded side by side, so the mean is the rate)."""
        return None if not self.done else self.elapsed() / self.done * (self.total - self.done)

    def rate(self) -> str:
        return "" if not self.done else f"{self.elapsed() / self.done:.2f} s/submission"

    def advance(self, attention: str = "") -> None:
        """One more submission finished; ``attention``: a line to show for it at once ("" for none)."""
        self.done += 1
        if self.done == self.total:
            self._finished = self.elapsed()
        left = self.left()
        if left is not None and self.done < self.total:
            self.estimates.append((self.elapsed(), left))
        if self.quiet:
            return
        if self._bar is not None:
            if attention:
                self._bar.console.print(attention, markup=False, highlight=False)
            self._bar.update(self._task, completed=self.done, rate=self.rate(), left=_clock(left))
            self._bar.refresh()
            return
        if attention:
            print(attention, file=self.stream, flush=True)
        now = time.perf_counter()
        if now - self._printed >= PLAIN_EVERY_S or self.done == self.total:
            self._printed = now
            print(f"{self.done}/{self.total} graded, {_clock(self.elapsed())} elapsed, {self.rate()}, "
                  f"about {_clock(left)} left", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def estimate_errors(self) -> dict[str, float]:
        """How far the estimate of the time left was off, as a share of the true time left, when a quarter, half
        and three quarters of the submissions were graded (positive: it said more time was left than there was)."""
        end, out = self._finished if self._finished is not None else self.elapsed(), {}
        for share in (0.25, 0.5, 0.75):
            at = max(1, round(share * self.total)) - 1  # estimates[i] was made when i + 1 were graded
            if at < len(self.estimates) and end > self.estimates[at][0]:
                t, left = self.estimates[at]
                out[f"{share:.0%}"] = (left - (end - t)) / (end - t)
        return out
