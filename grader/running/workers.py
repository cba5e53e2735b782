"""Grading workers: processes that each grade one submission at a time, in its own sandbox.

The parent makes every submission's box, hands the submission to a free worker, and takes the
result back. A worker that dies (killed, out of memory) costs only the submission it was grading:
that submission is named as not graded, its box is removed by the parent, and a new worker takes
the rest. Workers are forked (quick to start: they inherit the imported libraries) and each forgets
the parent's sandbox uid and control groups, so each claims its own. A job that outlives its
``deadline`` (the submission's budget, a cell timeout and a grace for a last kernel start: past it, only
a fault of the grader's own side can keep a job going) has its worker killed, with the sandboxes it
started (``--die-with-parent``), and is named as not graded. A worker dies with the process that forked it, however
that process ended (killed, too), and its sandboxes with it.

:class:`Local` is this pool behind the interface a grading run uses; ``grader/running/cluster.py``'s ``Cluster`` is the
same interface on the workers of a dask cluster, each grading its submission with this pool.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Callable

from grader import limits
from grader.running import sandbox


@dataclass
class Local:
    """The grading pool on this machine, ``size`` workers: what ``grader/grade.py`` runs a class on."""

    size: int
    where: str = "on this machine"

    def run_all(self, jobs: list, work: Callable, done: Callable, failed: Callable,
                deadline: float | None = None) -> None:
        run_all(jobs, work, self.size, done, failed, deadline)

    def limits_line(self) -> str:
        return sandbox.limits_line()

    def close(self) -> None:
        pass


def _die_with_parent(parent: int) -> None:
    """This process is killed when ``parent`` (the thread that forked it) ends (Linux's ``PR_SET_PDEATHSIG``)."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: a worker outlives a killed parent until its job ends
        return
    if os.getppid() != parent:  # the parent died before the call
        os._exit(1)


def _serve(conn, work: Callable, parent: int) -> None:
    """A worker's loop: ``(key, kwargs)`` in, ``(key, result or None, error text)`` out, until ``None``."""
    _die_with_parent(parent)
    sandbox.forget_uid()
    while True:
        job = conn.recv()
        if job is None:
            return
        key, kwargs = job
        try:
            conn.send((key, work(**kwargs), ""))
        except Exception as exc:  # noqa: BLE001 - one broken submission never stops the worker
            conn.send((key, None, type(exc).__name__))  # its message may quote the submission: the type only


class _Worker:
    def __init__(self, ctx, work: Callable):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, work, os.getpid()), daemon=True)
        self.process.start()
        child.close()
        self.job = None  # (key, box) being graded
        self.started = 0.0  # time.monotonic() when the job was handed over

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(limits.WORKER_STOP_S)
        if self.process.is_alive():
            self.kill()

    def kill(self) -> None:
        self.process.kill()
        self.process.join(limits.WORKER_KILL_S)  # one stuck in the kernel may not go at once: the run goes on


def run_all(jobs: list, work: Callable, workers: int, done: Callable, failed: Callable,
            deadline: float | None = None, kept: list | None = None) -> None:
    """Grade every ``(key, kwargs)`` of ``jobs`` with ``work(box=..., **kwargs)`` on ``workers`` processes.

    ``done(key, result)`` for each result, ``failed(key, why)`` for a submission that could not be graded
    (its worker died, or it ran past ``deadline`` seconds). Each job gets a new box (``sandbox.new_box``),
    removed here once the job is over, however it ended. ``kept``: a pool of an earlier call, whose processes are
    used again and kept when this call ends (a cluster's worker grades one submission a call).
    """
    ctx = multiprocessing.get_context("fork")
    pool = kept if kept is not None else []
    pool[:] = [w for w in pool if w.process.is_alive()]  # one that died between calls is not handed a job
    pool.extend(_Worker(ctx, work) for _ in range(max(1, min(workers, len(jobs))) - len(pool)))
    todo = list(jobs)
    try:
        while todo or any(w.job for w in pool):
            _hand_out(pool, todo)
            busy = [w for w in pool if w.job]
            left = None if deadline is None else max(0.0, min(w.started for w in busy) + deadline - time.monotonic())
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=left)
            over = []
            for w in list(busy):
                if w.conn in ready or w.process.sentinel in ready:
                    over.append(_receive(w, ctx, work, pool))
                elif deadline is not None and time.monotonic() - w.started >= deadline:
                    _overdue(w, ctx, work, pool, deadline, failed)
            _hand_out(pool, todo)  # the next jobs start before the results are recorded (pages take the parent time)
            for key, box, result, why in over:
                try:
                    if why is None:
                        done(key, result)
                    else:
                        failed(key, why)
                finally:
                    sandbox.remove_box(box)
    finally:
        for w in pool if kept is None else [w for w in pool if w.job]:  # a kept one still grading is stopped
            w.stop()
            if kept is not None:
                kept.remove(w)


def _hand_out(pool: list, todo: list) -> None:
    """A job, in a new box, for every free worker."""
    for w in pool:
        if w.job is None and todo:
            key, kwargs = todo.pop(0)
            box = sandbox.new_box()
            w.job, w.started = (key, box), time.monotonic()
            w.conn.send((key, {**kwargs, "box": box}))


def _overdue(w: _Worker, ctx, work, pool: list, deadline: float, failed: Callable) -> None:
    """``w``'s job ran past the deadline: the worker is killed and replaced, the job named, its box removed."""
    key, box = w.job
    w.kill()
    try:
        failed(key, f"grading this file took longer than {deadline:g} s and was stopped; it was not graded")
    finally:
        sandbox.remove_box(box)
        pool[pool.index(w)] = _Worker(ctx, work)


def _receive(w: _Worker, ctx, work, pool: list) -> tuple:
    """``(key, box, result, None)`` of ``w``'s job, or ``(key, box, None, why)`` if it failed or its worker died
    (the worker is replaced); ``w`` is free again. The caller records it and removes the box."""
    key, box = w.job
    w.job = None
    try:
        got, result, error = w.conn.recv()
    except (EOFError, OSError):  # the worker died while grading this submission
        w.process.join(limits.WORKER_STOP_S)
        pool[pool.index(w)] = _Worker(ctx, work)
        return key, box, None, (f"the grading worker stopped while grading this file (exit code "
                                f"{w.process.exitcode}); it was not graded")
    return key, box, (None if error else result), (f"grading failed: {error}" if error else None)


def default_jobs() -> int:
    """One submission per core: each is graded in its own kernel."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
