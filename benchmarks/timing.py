"""Side-by-side timing for ``make bench``: both sides called in turn, so that both see the same machine state."""

from __future__ import annotations

import statistics
import time

MIN_SECONDS = 3.0  # each side-by-side comparison samples for at least this long (``--quick``: 0.3)


def interleaved(ours, theirs, repeats: int, warmup: int = 3, min_seconds: float | None = None) -> tuple[float, float]:
    """Median seconds of each callable, alternating calls so both see the same machine state.

    Runs at least ``repeats`` pairs and keeps going until ``min_seconds`` have passed, so
    that a short burst of other work on the machine spoils only a few of many samples.
    """
    min_seconds = MIN_SECONDS if min_seconds is None else min_seconds
    for _ in range(warmup):
        ours(), theirs()
    a, b = [], []
    start = time.perf_counter()
    while len(a) < repeats or time.perf_counter() - start < min_seconds:
        for fn, acc in ((ours, a), (theirs, b)):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)
