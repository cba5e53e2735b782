"""Grading past one machine (``--cluster ADDRESS``): each submission's sandboxed run sent to a worker of a
``dask.distributed`` scheduler, and its result gathered here, where the gradebook, the pages, the report and the
exports are written, as on one machine.

The cluster is only another place for the grading pool of ``grader/running/workers.py`` to run: one task is one
submission, which a worker grades with that pool (:func:`_remote`): one grading process for each of the worker's
threads, kept from task to task (:func:`_kept`), a new box for each submission, a sandbox uid of its own and the
deadline, as on this machine. A submission that kills its grading process costs only itself there too. A worker lost
mid-run (its machine gone, its process killed) loses nothing: the scheduler runs its tasks again elsewhere, and a task
is safe to run twice (a new box each time; it returns a value and writes nothing that lasts). Results are taken as they
come (``as_completed``) and saved here at once, so ``--resume`` works across clusters. A task that fails on a worker
becomes its submission's problem, never the run's.

The seed reaches a worker only in the task's arguments, held in memory (the scheduler's, the worker's and its grading
process's), outside the sandbox, as on this machine, and never logged (a task never raises); the course's secret
never leaves this machine (the seed is derived here). ``distributed`` is imported here only, and only for ``--cluster``.
"""

from __future__ import annotations

import re
import threading
import uuid
from functools import lru_cache
from typing import Callable

from grader import limits

FORM = "tcp://HOST:PORT, a dask scheduler's address as `dask scheduler` prints it"
_ADDRESS = re.compile(r"(?:(?:tcp|tls)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):[0-9]{1,5}")


def check(address: str) -> str:
    """``address`` when it has the form of a scheduler's address (``tcp://`` is implied), else a ValueError."""
    if not isinstance(address, str) or not _ADDRESS.fullmatch(address):
        raise ValueError(f"--cluster: expected {FORM}, got {address!r}")
    return address if "://" in address else f"tcp://{address}"


class Cluster:
    """The grading pool on the workers of the dask scheduler at ``address``; the interface of ``workers.Local``.

    Connecting says at once, in a ValueError naming ``--cluster``, when no scheduler answers or none of its workers
    joined."""

    def __init__(self, address: str):
        self.address = check(address)
        try:
            from distributed import Client
        except ImportError as exc:
            raise ValueError(f"--cluster: expected the package distributed (the course extra installs it), got "
                             f"{type(exc).__name__}: {exc}") from None
        try:
            self.client = Client(self.address, timeout=limits.CLUSTER_CONNECT_S, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"--cluster: expected {FORM}, with a scheduler running there, got {address!r}: none "
                             f"answered within {limits.CLUSTER_CONNECT_S} s ({type(exc).__name__})") from None
        try:
            self.client.wait_for_workers(1, timeout=limits.CLUSTER_WORKERS_S)
        except (OSError, TimeoutError):
            self.client.close()
            raise ValueError(f"--cluster: expected a scheduler with workers, got {address!r}, which had none after "
                             f"{limits.CLUSTER_WORKERS_S} s (start one with `make worker CLUSTER={self.address}`)"
                             ) from None
        self.where = f"on the dask cluster at {self.address}"

    @property
    def size(self) -> int:
        """Submissions graded at once: the workers' threads, each grading one."""
        return max(1, sum(self.client.nthreads().values()))

    def run_all(self, jobs: list, work: Callable, done: Callable, failed: Callable,
                deadline: float | None = None) -> None:
        """As ``workers.run_all``: ``done(key, result)`` or ``failed(key, why)`` for each ``(key, kwargs)`` of
        ``jobs``, in the order they finish, each as soon as it does."""
        from distributed import as_completed

        from grader.running import sandbox

        run = uuid.uuid4().hex  # task names of this run only: another run on the same scheduler has its own
        name = f"{work.__module__}:{work.__qualname__}"  # imported there by name, where a failed import can be said
        futures = {self.client.submit(_remote, name, kwargs, deadline, sandbox.unsafe(), key=f"grade-{run}-{n}",
                                      pure=False): key for n, (key, kwargs) in enumerate(jobs)}
        try:
            for future in as_completed(list(futures), loop=self.client.loop):
                key = futures.pop(future)
                got = outcome(future, deadline)
                future.release()
                if "result" in got:
                    done(key, got["result"])
                else:
                    failed(key, got["why"])
        finally:
            if futures:  # stopped early (Ctrl-C): the cluster does not go on grading for no one
                self.client.cancel(list(futures))

    def limits_line(self) -> str:
        """The limits that hold on the workers (``sandbox.limits_line`` there), each different line once."""
        try:
            lines = sorted(set(self.client.run(_limits_here).values()))
        except Exception as exc:  # noqa: BLE001 - a worker that cannot say is said
            return f"limits: not known, the cluster's workers did not say ({type(exc).__name__})"
        return "; on other workers: ".join(lines) + f" ({len(self.client.nthreads())} worker(s))"

    def close(self) -> None:
        self.client.close()


def sweep_boxes() -> int:
    """Remove the boxes left by grading processes that died with their worker (a killed worker's box outlives it):
    those whose maker, named in the box's name (``sandbox.new_box``), is no longer alive. How many."""
    import tempfile
    from pathlib import Path

    from grader.running import sandbox

    gone = 0
    for box in Path(tempfile.gettempdir()).glob("grader-box-*-*"):
        maker = box.name.split("-")[2]
        if maker.isdigit() and not Path(f"/proc/{maker}").exists():
            sandbox.remove_box(box)
            gone += 1
    return gone


def _limits_here() -> str:
    from grader.running import sandbox

    return sandbox.limits_line()


def outcome(future, deadline: float | None = None) -> dict:
    """``{"result": ...}`` or ``{"why": ...}`` of a task ``as_completed`` gave, whatever became of it on the cluster.

    A task can be given as done and then lose its result with its worker (killed before the result was read): the
    scheduler runs it again, and this waits for that run, ``deadline`` seconds at most."""
    try:
        raised = future.exception(timeout=deadline)  # at once for a task that ended; else waits for its new run
    except BaseException:  # noqa: BLE001 - cancelled, or not done again in time: no exception to read
        raised = None
    if future.status != "finished":
        error = future.status if raised is None else type(raised).__name__  # its type: the message may quote a student
        if error == "KilledWorker":
            return {"why": "the cluster's workers died while grading this file, more often than the scheduler "
                           "allows; it was not graded"}
        return {"why": f"grading on the cluster failed: {error}; it was not graded"}
    try:
        got = future.result()
    except Exception as exc:  # noqa: BLE001 - a result that cannot be read back is that submission's problem
        return {"why": f"its result could not be read back from the cluster: {type(exc).__name__}"}
    if not isinstance(got, dict) or len(got) != 1 or not ("result" in got or isinstance(got.get("why"), str)):
        return {"why": "grading on the cluster returned no result; it was not graded"}
    return got


def _remote(work: str, kwargs: dict, deadline: float | None, unsafe: bool) -> dict:
    """On a worker: one submission graded by the pool of one process (``grader/running/workers.py``) with ``work``
    (``module:function``), in its own box and under ``deadline``: ``{"result": ...}`` or ``{"why": ...}``.
    ``unsafe``: whether this run grades without a sandbox."""
    import importlib

    got: dict = {}
    try:  # never raises: dask would log a failed task with its arguments, the seed among them
        module, function = work.split(":")
        if why := _prepared(unsafe, module):
            return {"why": why}
        from grader.running import workers

        workers.run_all([(0, kwargs)], getattr(importlib.import_module(module), function), 1,
                        lambda key, result: got.update(result=result),
                        lambda key, why: got.update(why=why), deadline=deadline, kept=_kept(work))
    except Exception as exc:  # noqa: BLE001 - the grader's fault on that worker is this submission's row
        return {"why": f"grading on the cluster failed on its worker: {type(exc).__name__}; it was not graded"}
    return got or {"why": "grading on the cluster returned no result; it was not graded"}


_KEPT = threading.local()


def _kept(work: str) -> list:
    """This worker thread's grading process for ``work``, kept from one task to the next (as the local pool keeps
    its processes for a whole class), rather than one forked for each submission."""
    pools = _KEPT.__dict__.setdefault("pools", {})
    return pools.setdefault(work, [])


@lru_cache(maxsize=4)
def _prepared(unsafe: bool, module: str) -> str | None:
    """Once per worker process: why it cannot grade this run (no sandbox here, or ``module``, the one whose function
    grades a submission, cannot be imported), else None, with the worker made
    ready as ``grade.grade`` makes this machine: bytecode compiled, the environment's tools on ``PATH``, and leave
    to fork its grading process (a nanny starts workers as daemons, which ``multiprocessing`` forbids children lest
    they outlive them; ours die with the worker, ``workers._die_with_parent``)."""
    import importlib
    import multiprocessing
    import os
    import platform

    here = platform.node()
    try:
        import nbformat  # noqa: F401 - imported once here, by every forked grading process with it
        import torch  # noqa: F401

        from grader.running import sandbox
        from layout.env import venv_env

        importlib.import_module(module)  # the grading side, whole: imported once, before the fork
    except ImportError as exc:
        return (f"the cluster's worker on {here} cannot import the grader ({type(exc).__name__}: {exc}); start it "
                f"in the repository with `make worker CLUSTER=...`; it was not graded")
    if sandbox.unsafe() != unsafe:
        return (f"the cluster's worker on {here} {'grades' if sandbox.unsafe() else 'does not grade'} without a "
                f"sandbox ({sandbox.UNSAFE}), unlike this run; it was not graded")
    if not unsafe and (why := sandbox.why_unavailable()):
        return f"the cluster's worker on {here} cannot sandbox it: {why}; it was not graded"
    sandbox.compile_bytecode()
    sweep_boxes()
    os.environ["PATH"] = venv_env()["PATH"]
    multiprocessing.current_process().daemon = False
    return None
