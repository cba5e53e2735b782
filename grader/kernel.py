"""A Jupyter kernel inside the sandbox, driven from outside: execute code, collect outputs, time out.

Nothing the kernel sends is trusted: outputs are kept as data for the feedback page (bounded in
size), and a kernel that stops answering is interrupted, then killed with everything it started.
"""

from __future__ import annotations

import queue
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import zmq
from jupyter_client import KernelManager

from grader import sandbox

MAX_LINES = 1000          # lines of output kept per cell
MAX_CHARS = 200_000       # characters of output kept per cell
MAX_NOTEBOOK_CHARS = 4_000_000  # characters of output kept for one notebook's page, all cells together
READY_S = 60              # to start the kernel and import its libraries
MAX_MESSAGE_BYTES = 16 * 2**20  # one message from the kernel


class SandboxedKernelManager(KernelManager):
    """jupyter_client's manager, with the kernel command wrapped in the sandbox."""

    box: Path
    sock: Path
    limits: sandbox.Limits = sandbox.Limits()

    def format_kernel_cmd(self, extra_arguments=None):
        inner = super().format_kernel_cmd(extra_arguments)
        sandbox.give(Path(self.connection_file))  # written just now by the grader, into a new folder
        return sandbox.command(self.box, self.sock, inner, self.limits)


@dataclass
class Outcome:
    outputs: list = field(default_factory=list)
    status: str = "ok"          # ok, error, timeout, died
    flooded: bool = False
    error: str = ""             # "ZeroDivisionError: division by zero"
    chars: int = 0              # characters of output kept
    lines: int = 0              # lines of output kept


class Kernel:
    """One sandboxed kernel; ``start`` again after it died or was killed."""

    def __init__(self, box: Path, limits: sandbox.Limits | None = None):
        """``box``: a folder made by :func:`grader.sandbox.new_box`."""
        self.box, self.limits = box, limits or sandbox.Limits()
        self.starts = 0
        self.km: SandboxedKernelManager | None = None
        self.kc = None

    def start(self) -> None:
        """A fresh kernel in a fresh sandbox; one more try if the first does not answer."""
        for attempt in range(2):
            try:
                return self._start()
            except RuntimeError:
                if attempt:
                    raise

    def _start(self) -> None:
        self.stop()
        sandbox.reap()
        self.starts += 1
        sock = self.box / f"sock{self.starts}"  # new for every kernel: nothing the last one left in it
        sock.mkdir(mode=0o755)
        sandbox.give(sock)
        km = SandboxedKernelManager(kernel_name="python3", transport="ipc", ip=str(sock / "k"),
                                    connection_file=str(sock / "kernel.json"))
        km.box, km.sock, km.limits = self.box, sock, self.limits
        km.kernel_spec.interrupt_mode = "message"  # a signal would reach bwrap, not the kernel
        km.start_kernel(cwd=str(self.box), env={"PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        context = zmq.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)  # a larger message drops the connection, unread
        self.km, self.kc = km, km.client(context=context)
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=READY_S)

    def exit_code(self):
        """The sandbox's exit status once it stopped (bubblewrap passes on the kernel's), else None."""
        try:
            return self.km.provisioner.process.poll()
        except AttributeError:
            return None

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    def stop(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.km = self.kc = None
        sandbox.reap()

    def execute(self, code: str, timeout: float, max_chars: int = MAX_CHARS) -> Outcome:
        """Run ``code``; its outputs (at most ``max_chars`` characters kept), and whether it finished, raised,
        timed out or killed the kernel."""
        out = Outcome()
        if not self.alive():
            out.status = "died"
            return out
        msg_id = self.kc.execute(code, store_history=False, allow_stdin=False)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                out.status = "timeout"
                self._interrupt(msg_id)
                return out
            try:
                msg = self.kc.get_iopub_msg(timeout=min(left, 0.25))
            except queue.Empty:
                if not self.alive():
                    out.status = "died"
                    return out
                continue
            except Exception:  # noqa: BLE001 - a message the kernel forged (a replayed signature, bad parts): skipped
                continue
            parent, content = msg.get("parent_header"), msg.get("content")
            if not isinstance(parent, dict) or parent.get("msg_id") != msg_id or not isinstance(content, dict):
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"].get("execution_state") == "idle":
                return out
            if kind == "clear_output":
                out.outputs.clear()
            elif kind in ("stream", "display_data", "execute_result", "error"):
                _take(out, msg, max_chars)

    def _interrupt(self, msg_id: str) -> None:
        """Ask the kernel to stop; kill it if it does not become idle within a few seconds."""
        try:
            self.km.interrupt_kernel()
            end = time.monotonic() + 3
            while time.monotonic() < end:
                msg = self.kc.get_iopub_msg(timeout=max(0.05, end - time.monotonic()))
                if (msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "status"
                        and msg["content"].get("execution_state") == "idle"):
                    return
        except Exception:  # noqa: BLE001 - no answer: it is killed below
            pass
        self.stop()


def _take(out: Outcome, msg: dict, max_chars: int) -> None:
    """One output message of the cell into ``out``, within its limits; an output forged out of shape is dropped."""
    try:
        node = nbformat.v4.output_from_msg(msg)
    except Exception:  # noqa: BLE001 - a malformed output is the kernel's loss, never the grading's
        return
    if msg["msg_type"] == "error":
        out.status = "error"
        evalue = str(node.evalue)[:400].splitlines()  # cut before it is split: the kernel chose its length
        out.error = f"{str(node.ename)[:100]}: {evalue[0][:200] if evalue else ''}"
    size = len(str(msg["content"]))  # everything the output carries: text, data, metadata, traceback
    n = str(node.get("text", "")).count("\n")
    if out.lines + n > MAX_LINES or out.chars + size > max_chars:
        out.flooded = True
        return
    out.lines, out.chars = out.lines + n, out.chars + size
    last = out.outputs[-1] if out.outputs else None
    if (node.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
            and last.get("name") == node.get("name")
            and isinstance(last.get("text"), str) and isinstance(node.get("text"), str)):
        last["text"] += node["text"]  # one block, as a notebook shows it, however the kernel flushed it
    else:
        out.outputs.append(node)
