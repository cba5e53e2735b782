"""Step 2: run one submission in its sandbox, then ask its functions about the hidden inputs.

The notebook runs cell by cell in a fresh sandboxed kernel (its outputs become the feedback page).
A cell that runs too long is interrupted; a cell that kills the kernel is replaced by an error, the
kernel is started again and the cells before it replayed. Then, for every grade cell, the grader
writes the hidden inputs into the sandbox's folder as plain data and the kernel runs the probes of
``grader/kernel_side/``; each reply is read as hostile data (``grader.running.replies``) and judged at once,
outside the kernel (``grader.judging.verdicts``), so no more than one reply is held at a time.

Everything is bounded: each cell by the cell timeout, the whole submission (cells, replays and
probes together) by its time budget, the kernel's deaths (in cells and in probes) by ``MAX_DEATHS``,
the output kept for the page by ``MAX_NOTEBOOK_CHARS`` (all in ``grader/limits.py``). The kernel-side code
gets the sizes it needs from here, written into the code that calls it (``setup_code``, ``ask``).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import hidden, limits
from grader.judging import verdicts
from grader.kernel_side import plain
from grader.running import replies
from grader.running.kernel import OVERSIZED, Kernel
from grader.running.sandbox import HOME
from layout import nbmeta
from layout.paths import ROOT

KILLED = 'raise RuntimeError("this cell stopped the kernel when it was graded, so the grader replaced it")'


# The sizes the kernel side answers under (runner.answer), from grader/limits.py: it cannot import them.
KERNEL_SIZES = {"request": limits.REQUEST_BUDGET, "reply_items": limits.REPLY_BUDGET["items"],
                "error_chars": limits.KERNEL_ERROR_CHARS}


@dataclass
class Run:
    notebook: nbformat.NotebookNode
    verdicts: dict = field(default_factory=dict)       # grade_id -> Verdict
    ran: dict = field(default_factory=dict)            # grade_id -> forbidden names the kernel reported
    off: dict = field(default_factory=dict)            # grade_id -> what of its recorder the kernel found off
    problems: list[str] = field(default_factory=list)
    sandbox: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.problems and len(self.problems) < limits.MAX_PROBLEMS:
            self.problems.append(text)


class Clock:
    """The submission's time budget: cells, replays and probes together; and its kernel deaths."""

    def __init__(self, budget: float):
        self.budget, self.end, self.deaths = budget, time.monotonic() + budget, 0

    def left(self) -> float:
        return self.end - time.monotonic()

    def cap(self, timeout: float) -> float:
        return max(0.0, min(timeout, self.left()))


def _in_kernel(source: str, **names) -> str:
    """Code that runs ``source`` in the kernel in a namespace of its own, with ``names`` bound."""
    bound = ", ".join(f"{k!r}: {v}" for k, v in names.items())
    return f"exec({source!r}, {{{bound}}})"


def setup_code(box: Path, read_roots: tuple) -> str:
    """Runs before the student's first cell: the monitor installed, the forbidden-call recorder's hooks kept as they
    are before any of the student's code (and the folders of library code it tells the student's frames from)."""
    # kernel_side is on the sandbox's PYTHONPATH (grader/running/sandbox.py)
    source = (f"from kernel_side import forbidden_calls, monitor\n"
              f"monitor.install({str(box)!r}, {tuple(read_roots)!r}, {str(ROOT)!r}, {HOME!r}, "
              f"{limits.MAX_KERNEL_EVENTS!r})\n"
              f"forbidden_calls.prepare({tuple(read_roots)!r})")
    return _in_kernel(source)


# What a refusal of the sandbox looks like in a cell's outputs (seen from outside, whatever the kernel recorded).
REFUSALS = [("MemoryError", "memory limit"), ("Cannot allocate memory", "memory limit"),
            ("can't start new thread", "process limit"), ("Resource temporarily unavailable", "process limit"),
            ("File too large", "file size limit"), ("Read-only file system", "write outside its folders"),
            ("No space left on device", "its folder's size limit"),
            ("Network is unreachable", "network"), ("Temporary failure in name resolution", "network"),
            ("Name or service not known", "network")]


def refusals(outputs: list) -> list[str]:
    """The sandbox's refusals that show in ``outputs`` (errors and printed tracebacks)."""
    text = " ".join(f"{o.get('ename', '')} {o.get('evalue', '')} {o.get('text', '')}" for o in outputs)
    text = text[:limits.MAX_REFUSAL_CHARS]
    return sorted({what for sign, what in REFUSALS if sign in text})


def _label(cell, index: int) -> str:
    return nbmeta.grade_id(cell) or f"cell {index}"


def _is_answer(cell) -> bool:
    return nbmeta.is_solution(cell)


def run_notebook(kernel: Kernel, nb, timeout: float, run: Run, clock: Clock, setup: str) -> list[str]:
    """Every code cell of ``nb`` in order; the sources that ran (to replay after a death)."""
    done: list[str] = []
    kernel.start()
    kernel.execute(setup, timeout)
    room = limits.MAX_NOTEBOOK_CHARS
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = _label(cell, index)
        if clock.left() <= 0:
            run.note(f"the submission used its whole time budget ({clock.budget:g} s) before {where}; "
                     "the rest was not run")
            cell.outputs = []
            return done
        limit = clock.cap(timeout)
        result = kernel.execute(cell.source, limit, max_chars=min(limits.MAX_OUTPUT_CHARS, room))
        room -= result.chars
        cell.outputs = result.outputs
        for what in refusals(result.outputs):
            _event(run, f"{what} ({where})")
        if result.flooded:
            run.note(f"{where} printed more than {limits.MAX_OUTPUT_LINES} lines or {limits.MAX_OUTPUT_CHARS} "
                     f"characters, or the notebook more than {limits.MAX_NOTEBOOK_CHARS}; the rest was cut")
        if result.oversized:
            run.note(f"{where} {OVERSIZED}")
        if result.status == "timeout":
            _event(run, _stopped(where, limit, timeout))
            run.note(f"{where} ran longer than {timeout:g} s (or than the time left) and was stopped")
            cell.outputs.append(_error("TimeoutError", "stopped by the grader"))
        elif result.status == "error" and _is_answer(cell):
            if not result.error.startswith("NotImplementedError"):  # its type only: the message is the student's
                run.note(f"{where} raised {verdicts.exception_name(result.error)} (its message is on the page)")
        if result.status in ("died", "timeout") and not kernel.alive():
            if result.status == "died":
                _event(run, f"the kernel stopped ({where}, exit code {kernel.exit_code()})")
                run.note(f"{where} stopped the kernel (os._exit, a crash or a limit); it was replaced by an error "
                         "and the rest graded")
                cell.source = KILLED
                cell.outputs = [_error("RuntimeError", "this cell stopped the kernel when it was graded")]
            if not _restart(kernel, setup, done, timeout, run, clock):
                return done
        if cell.source != KILLED and result.status != "timeout":
            done.append(cell.source)
    return done


def _stopped(where: str, limit: float, timeout: float) -> str:
    """The sandbox column's words for a cell the grader interrupted: at its time limit, or at the budget's end."""
    if limit < timeout:
        return f"stopped by the grader when the submission's time budget ran out ({where})"
    return f"stopped by the grader at the {timeout:g} s time limit ({where})"


def _event(run: Run, text: str) -> None:
    if text not in run.sandbox and len(run.sandbox) < limits.MAX_SANDBOX_EVENTS:
        run.sandbox.append(text)


def _restart(kernel: Kernel, setup: str, sources: list[str], timeout: float, run: Run, clock: Clock) -> bool:
    """A new kernel with ``sources`` replayed, within the budget; False once the kernel died too often."""
    clock.deaths += 1
    if clock.deaths > limits.MAX_DEATHS:
        run.note(f"the kernel stopped more than {limits.MAX_DEATHS} times; the rest was not run")
        return False
    if clock.left() <= 0:  # no new kernel once the budget is spent
        run.note(f"the submission used its whole time budget ({clock.budget:g} s)")
        return False
    kernel.start()
    kernel.execute(setup, clock.cap(timeout))
    for src in sources:
        if clock.left() <= 0:
            run.note(f"the submission used its whole time budget ({clock.budget:g} s)")
            return False
        kernel.execute(src, clock.cap(timeout), max_chars=0)
    return True


def _error(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def ask(kernel: Kernel, box: Path, cases: dict, max_points: dict, watch: dict, timeout: float, run: Run,
        clock: Clock, replay: list[str], setup: str) -> None:
    """Every grade cell's probes, one kernel request per grade cell; each reply judged as it is read."""
    alive = True
    for gid, group in cases.items():
        folder = box / "in" / gid
        problems: list[str | None] = []
        for i, case in enumerate(group):
            (folder / str(i)).mkdir(parents=True, exist_ok=True)
            tree = plain.encode({"probe": case.request.probe, "inputs": case.request.inputs}, folder / str(i),
                                limits.REQUEST_BUDGET["items"])
            (folder / str(i) / "request.json").write_text(json.dumps(tree))
        if alive and not kernel.alive():
            alive = _restart(kernel, setup, replay, timeout, run, clock)
        if not alive or clock.left() <= 0:
            why = "the kernel stopped too often" if not alive else "the submission used its whole time budget"
            run.verdicts[gid] = verdicts.judge_cell(group, [f"not asked: {why}"] * len(group), max_points[gid])
            continue
        code = _in_kernel("from kernel_side import runner\nrunner.answer(user, box, gid, n, watch, sizes)",
                          user="globals()", box=repr(str(box)), gid=repr(gid), n=str(len(group)),
                          watch=repr(dict(watch.get(gid, {}))), sizes=repr(KERNEL_SIZES))
        limit = clock.cap(timeout)
        result = kernel.execute(code, limit, max_chars=0)
        seen, off = set(), set()
        for i, case in enumerate(group):
            reply = replies.read_reply(box, f"out/{gid}/{i}", tuple(watch.get(gid, {})))
            if reply.kind == "missing" and result.status == "timeout":
                reply = replies.Reply("missing", "the hidden tests ran out of time")
            problems.append(verdicts.problem_of(case, reply.kind, reply.value))
            seen.update(reply.ran)
            off.update(reply.off)
        run.verdicts[gid] = verdicts.judge_cell(group, problems, max_points[gid])
        run.ran[gid], run.off[gid] = sorted(seen), sorted(off)
        shutil.rmtree(box / "out" / gid, ignore_errors=True)  # the next cell's replies get the room
        if result.oversized:
            run.note(f"{gid}: during the hidden tests the kernel {OVERSIZED}")
        if result.status == "timeout":
            _event(run, _stopped(f"{gid} hidden tests", limit, timeout))
            run.note(f"{gid}: the hidden tests ran longer than {timeout:g} s (or than the time left) and were stopped")
        elif result.status == "died":
            _event(run, f"the kernel stopped ({gid} hidden tests, exit code {kernel.exit_code()})")
            run.note(f"{gid}: the kernel stopped during the hidden tests")


def _events(box: Path, run: Run) -> None:
    try:
        with plain.open_under(box, "out/events.log", limits.MAX_EVENTS_BYTES) as f:
            text = f.read(limits.MAX_EVENTS_CHARS).decode("utf-8", "replace")
            for line in text.splitlines()[:limits.MAX_EVENT_LINES]:
                _event(run, line[:limits.MAX_EVENT_CHARS])
    except Exception:  # noqa: BLE001 - no record: nothing to report
        pass


def grade_in_sandbox(nb, assignment: str, seed: int, box: Path, timeout: float, budget: float, read_roots: tuple,
                     max_points: dict, watch: dict | None = None) -> Run:
    """Steps 2 and 3 in one sandbox: the notebook, then the probes, each reply judged as it comes.

    ``watch``: grade_id -> the forbidden callables the kernel should watch for while probing that cell, each with the
    dotted names of its routes (``grader.judging.forbidden.watched``).
    """
    run, clock = Run(nb), Clock(budget)
    cases = hidden.cases(assignment, seed)  # drawn once: the requests and the judging use the same cases
    kernel = Kernel(box)
    setup = setup_code(box, read_roots)
    try:
        replay = run_notebook(kernel, nb, timeout, run, clock, setup)
        ask(kernel, box, cases, max_points, watch or {}, timeout, run, clock, replay, setup)
        _events(box, run)
    finally:
        kernel.stop()
        shutil.rmtree(box / "in", ignore_errors=True)
    return run
