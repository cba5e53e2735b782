"""Step 2: run one submission in its sandbox, then ask its functions about the hidden inputs.

The notebook runs cell by cell in a fresh sandboxed kernel (its outputs become the feedback page).
A cell that runs too long is interrupted; a cell that kills the kernel is replaced by an error, the
kernel is started again and the cells before it replayed. Then, for every grade cell, the grader
writes the hidden inputs into the sandbox's folder as plain data and runs its probes; the replies
come back as files, which only the grader reads and judges (``grader/verdicts.py``).
"""

from __future__ import annotations

import inspect
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import hidden, plain
from grader.kernel import MAX_CHARS, MAX_LINES, Kernel

REPO = str(Path(__import__("transformer").__file__).resolve().parent.parent)  # the repository, the package's parent
KILLED = 'raise RuntimeError("this cell stopped the kernel when it was graded, so the grader replaced it")'
MAX_DEATHS = 3

# Runs in the kernel before the student's first cell: a record of what the code tried that the
# sandbox refuses (for the instructor's report only; it decides nothing).
MONITOR = r'''
import sys, types
def _install():
    # Its own: /tmp, HOME, its answers folder. Not its own, even where they lie under /tmp on the host:
    # the folders the grader binds in (the package, the environment, the box) and the repository.
    mine = ("/tmp/", "/home/student", BOX + "/out", "/dev/null", "/dev/shm")
    not_mine = READ_ROOTS + (BOX, REPO)
    allowed_read = mine + READ_ROOTS + ("/usr", "/dev", "/proc/self", "/proc/thread-self", "/etc", "/sys")
    seen = sys.modules.setdefault("__grader_events__", types.SimpleNamespace(events=[])).events
    log = open(BOX + "/out/events.log", "a", buffering=1)  # written as it happens: a kernel that dies keeps its record
    def note(text):
        if text not in seen and len(seen) < 50:
            seen.append(text)
            try:
                log.write(text.replace("\n", " ") + "\n")
            except (OSError, ValueError):  # a forked child that closed its files: the record stays as it is
                pass
    def hook(event, args):
        try:
            look(event, args)
        except Exception:  # the record must never change what the student's code does
            pass
    def look(event, args):
        if event == "open" and isinstance(args[0], str):
            path, mode, flags = args[0], args[1] or "", args[2] or 0
            write = any(c in str(mode) for c in "wax+") or bool(flags & 0o3103)
            outside = path.startswith("/") and (not path.startswith(mine) or path.startswith(not_mine))
            if write and outside and not path.startswith(BOX + "/out"):
                note("write outside its folders: " + path[:120])
            elif not write and path.startswith("/") and not path.startswith(allowed_read):
                note("read outside its folders: " + path[:120])
        elif event in ("socket.connect", "socket.bind", "socket.sendto"):
            note("network: " + event.split(".")[1] + " " + repr(args[1])[:100])
        elif event == "socket.getaddrinfo":
            note("network: look up " + repr(args[0])[:100])
        elif event in ("subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec"):
            note("started a process: " + event)
        elif event in ("os.kill", "os.killpg"):
            note("sent a signal: " + repr(args)[:80])
    sys.addaudithook(hook)
_install()
del _install
'''

# Runs in the kernel after the notebook: one grade cell's probes, replies written as plain data.
RUNNER = r'''
import os
user = USER
for i in range(N):
    where = os.path.join(BOX, "in", GID, str(i))
    there = os.path.join(BOX, "out", GID, str(i))
    os.makedirs(there, exist_ok=True)
    try:
        req = decode(read_json(where, "request.json"), where, True)
        reply = {"ok": encode(globals()[req["probe"]](user, **req["inputs"]), there)}
    except Exception as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        reply = {"error": type(exc).__name__ + (": " + text if text else "")}
    with open(os.path.join(there, "reply.json"), "w") as f:
        import json
        json.dump(reply, f, allow_nan=True)
'''


@dataclass
class Run:
    notebook: nbformat.NotebookNode
    replies: dict[str, list] = field(default_factory=dict)   # grade_id -> per case: ("ok", value) or ("error", text)
    problems: list[str] = field(default_factory=list)
    sandbox: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


def _in_kernel(source: str, **names) -> str:
    """Code that runs ``source`` in the kernel in a namespace of its own, with ``names`` bound."""
    bound = ", ".join(f"{k!r}: {v}" for k, v in names.items())
    return f"exec({source!r}, {{{bound}}})"


# What a refusal of the sandbox looks like in a cell's outputs (seen from outside, whatever the kernel recorded).
REFUSALS = [("MemoryError", "memory limit"), ("Cannot allocate memory", "memory limit"),
            ("can't start new thread", "process limit"), ("Resource temporarily unavailable", "process limit"),
            ("File too large", "file size limit"), ("Read-only file system", "write outside its folders"),
            ("Network is unreachable", "network"), ("Temporary failure in name resolution", "network"),
            ("Name or service not known", "network")]


def refusals(outputs: list) -> list[str]:
    """The sandbox's refusals that show in ``outputs`` (errors and printed tracebacks)."""
    text = " ".join(f"{o.get('ename', '')} {o.get('evalue', '')} {o.get('text', '')}" for o in outputs)[:100_000]
    return sorted({what for sign, what in REFUSALS if sign in text})


def _label(cell, index: int) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"


def run_notebook(kernel: Kernel, nb, timeout: float, run: Run, box: Path, read_roots: tuple) -> None:
    monitor = _in_kernel(MONITOR, BOX=repr(str(box)), READ_ROOTS=repr(read_roots), REPO=repr(REPO))
    deaths, done = 0, []
    kernel.start()
    kernel.execute(monitor, timeout)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        result = kernel.execute(cell.source, timeout)
        cell.outputs = result.outputs
        where = _label(cell, index)
        for what in refusals(result.outputs):
            _event(run, f"{what} ({where})")
        if result.flooded:
            run.note(f"{where} printed more than {MAX_LINES} lines or {MAX_CHARS} characters; the rest was cut")
        if result.status == "timeout":
            _event(run, f"time limit ({where})")
            run.note(f"{where} ran longer than {timeout:g} s and was stopped")
            cell.outputs.append(_error("TimeoutError", f"stopped by the grader after {timeout:g} s"))
        elif result.status == "error" and cell.metadata.get("nbgrader", {}).get("solution"):
            if not result.error.startswith("NotImplementedError"):
                run.note(f"{where} raised {result.error}")
        if result.status in ("died", "timeout") and not kernel.alive():
            deaths += 1
            if result.status == "died":
                _event(run, f"the kernel stopped ({where}, exit code {kernel.exit_code()})")
                run.note(f"{where} stopped the kernel (os._exit, a crash or a limit); it was replaced by an error "
                         "and the rest graded")
                cell.source = KILLED
                cell.outputs = [_error("RuntimeError", "this cell stopped the kernel when it was graded")]
            if deaths > MAX_DEATHS:
                run.note("the kernel stopped too often; the remaining cells were not run")
                return
            _restart(kernel, monitor, done, timeout)
        if cell.source != KILLED and result.status != "timeout":
            done.append(cell.source)


def _event(run: Run, text: str) -> None:
    if text not in run.sandbox and len(run.sandbox) < 20:
        run.sandbox.append(text)


def _restart(kernel: Kernel, monitor: str, sources: list[str], timeout: float) -> None:
    kernel.start()
    kernel.execute(monitor, timeout)
    for src in sources:
        kernel.execute(src, timeout)


def _error(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def ask(kernel: Kernel, nb, box: Path, assignment: str, timeout: float, run: Run, replay: list[str],
        monitor: str) -> None:
    """Every grade cell's probes, one request per grade cell; the replies into ``run.replies``."""
    all_cases = hidden.cases(assignment)  # imports the assignment's module, which registers its probes
    runner = "\n".join([inspect.getsource(plain), hidden.probe_source(), RUNNER])
    for gid, cases in all_cases.items():
        folder = box / "in" / gid
        for i, case in enumerate(cases):
            (folder / str(i)).mkdir(parents=True, exist_ok=True)
            tree = plain.encode({"probe": case.request.probe, "inputs": case.request.inputs}, folder / str(i))
            (folder / str(i) / "request.json").write_text(json.dumps(tree))
        if not kernel.alive():
            _restart(kernel, monitor, replay, timeout)
        result = kernel.execute(_in_kernel(runner, USER="globals()", BOX=repr(str(box)), GID=repr(gid),
                                           N=str(len(cases))), timeout)
        run.replies[gid] = [read_reply(box, f"out/{gid}/{i}") for i in range(len(cases))]
        if result.status == "timeout":
            _event(run, f"time limit ({gid} hidden tests)")
            run.note(f"{gid}: the hidden tests ran longer than {timeout:g} s and were stopped")
            run.replies[gid] = [r if r[0] != "missing" else ("missing", f"ran longer than {timeout:g} s")
                                for r in run.replies[gid]]
        elif result.status == "died":
            _event(run, f"the kernel stopped ({gid} hidden tests, exit code {kernel.exit_code()})")
            run.note(f"{gid}: the kernel stopped during the hidden tests")


def read_reply(root: Path, rel: str = ".") -> tuple[str, object]:
    """("ok", value), ("error", what the student's code raised), or ("missing"/"malformed", why).

    The reply lies in ``root/rel``, a folder the kernel wrote: it is read without following links
    or waiting on pipes (``plain.open_under``), and only as plain data.
    """
    folder = (str(root), rel)
    try:
        tree = plain.read_json(root, f"{rel}/reply.json")
    except FileNotFoundError:
        return ("missing", "no reply")
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - anything unreadable is malformed
        return ("malformed", f"unreadable reply ({type(exc).__name__})")
    try:
        if isinstance(tree, dict) and set(tree) == {"error"}:
            return ("error", str(tree["error"])[:300])
        if isinstance(tree, dict) and set(tree) == {"ok"}:
            return ("ok", plain.decode(tree["ok"], folder, tensors=True))
        return ("malformed", "a reply that is neither a value nor an error")
    except (Exception, RecursionError) as exc:  # noqa: BLE001
        return ("malformed", f"a reply that is not plain data ({type(exc).__name__}: {str(exc)[:100]})")


def grade_in_sandbox(nb, assignment: str, box: Path, timeout: float, read_roots: tuple) -> Run:
    """Steps 2 and the kernel half of 3: the notebook, then the probes, in one sandbox."""
    run = Run(nb)
    kernel = Kernel(box)
    try:
        run_notebook(kernel, nb, timeout, run, box, read_roots)
        replay = [c.source for c in nb.cells if c.cell_type == "code" and c.source != KILLED]
        monitor = _in_kernel(MONITOR, BOX=repr(str(box)), READ_ROOTS=repr(read_roots), REPO=repr(REPO))
        ask(kernel, nb, box, assignment, timeout, run, replay, monitor)
        try:
            with plain.open_under(box, "out/events.log") as f:
                for line in f.read(64_000).decode("utf-8", "replace").splitlines()[:50]:
                    _event(run, line[:160])
        except Exception:  # noqa: BLE001 - no record: nothing to report
            pass
    finally:
        kernel.stop()
        shutil.rmtree(box / "in", ignore_errors=True)
    return run
