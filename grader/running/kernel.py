"""A Jupyter kernel inside the sandbox, driven from outside: execute code, collect outputs, time out.

Nothing the kernel sends is trusted: outputs are kept as data for the feedback page (bounded in
size), and a kernel that stops answering is interrupted, then killed with everything it started.

The grader runs the kernel itself, with jupyter_client's public API only: it writes the connection file
(``write_connection_file``), signs and checks messages with a ``Session``, starts the sandbox's command as a
process of its own session, interrupts with a message on the control channel (a signal would reach bubblewrap,
not the kernel), and stops a kernel by killing that session (bubblewrap, and with it everything inside). It
uses no ``KernelManager``: bounding what a kernel sends through one meant overriding its private methods, which
an upgrade of jupyter_client may rename or call differently, while the connection file, the session and the
wire protocol are published and versioned. ``tests/test_jupyter_client_public.py`` keeps it so.

The grader speaks ZeroMQ's wire protocol (ZMTP 3.0) to the kernel's sockets itself, over their unix
sockets, and holds no ZeroMQ socket of its own (``grader/running/wire.py`` says why). Of the kernel's channels
the grader reads only IOPub; it writes requests to the shell and control sockets and never reads
them (what the kernel sends there waits in the operating system's socket buffer, a few hundred KiB,
then in the kernel's own memory); stdin and the heartbeat are never connected.
"""

from __future__ import annotations

import os
import queue
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client import write_connection_file
from jupyter_client.session import Session

from grader import limits
from grader.running import sandbox
from grader.running.wire import Refused, Wire

# fixed words: nothing the kernel chose
OVERSIZED = (f"sent a message larger than {limits.MAX_MESSAGE_BYTES // 2**20} MiB or of more than "
             f"{limits.MAX_FRAMES} parts; the grader stopped reading and stopped the kernel")
# The kernel's channels and their "ports": over ipc, the kernel binds the unix socket ``<ip>-<port>`` for each.
PORTS = {"shell": 1, "iopub": 2, "stdin": 3, "control": 4, "hb": 5}
WIRES = (("iopub", b"SUB"), ("shell", b"DEALER"), ("control", b"DEALER"))  # the channels the grader connects


@dataclass
class Outcome:
    outputs: list = field(default_factory=list)
    status: str = "ok"          # ok, error, timeout, died
    flooded: bool = False
    oversized: bool = False     # the kernel sent a message past MAX_MESSAGE_BYTES or MAX_FRAMES: it was stopped
    error: str = ""             # "ZeroDivisionError: division by zero"
    chars: int = 0              # characters of output kept
    lines: int = 0              # lines of output kept


class Kernel:
    """One sandboxed kernel; ``start`` again after it died or was killed."""

    def __init__(self, box: Path, limits: sandbox.Limits | None = None):
        """``box``: a folder made by :func:`grader.running.sandbox.new_box`."""
        self.box, self.limits = box, limits or sandbox.Limits()
        self.starts = 0
        self.process: subprocess.Popen | None = None  # the sandbox's command, leader of its own session
        self.session: Session | None = None  # signs the grader's requests and checks the kernel's messages
        self.wires: dict[str, Wire] = {}
        self.last_exit = None  # the exit status of the last kernel stopped

    def start(self) -> None:
        """A fresh kernel in a fresh sandbox; one more try if the first does not answer."""
        for attempt in range(limits.KERNEL_STARTS):
            try:
                return self._start()
            except RuntimeError:
                if attempt == limits.KERNEL_STARTS - 1:
                    raise

    def _start(self) -> None:
        self.stop()
        sandbox.reap()
        self.starts += 1
        sock = self.box / f"sock{self.starts}"  # new for every kernel: nothing the last one left in it
        sock.mkdir(mode=0o755)
        sandbox.give(sock)
        self.session = Session(key=secrets.token_hex(32).encode(), signature_scheme="hmac-sha256")
        connection, ip = sock / "kernel.json", str(sock / "k")
        write_connection_file(str(connection), ip=ip, key=self.session.key, transport="ipc",
                              signature_scheme="hmac-sha256", kernel_name="python3",
                              **{f"{name}_port": port for name, port in PORTS.items()})
        sandbox.give(connection)
        inner = [sys.executable, "-m", "kernel_side.launcher", "-f", str(connection)]  # ipykernel, no debugger
        self.process = subprocess.Popen(sandbox.command(self.box, sock, inner, self.limits), cwd=self.box,
                                        env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + limits.READY_S
        try:
            for name, kind in WIRES:
                self.wires[name] = Wire(f"{ip}-{PORTS[name]}", kind, deadline, self.alive)
            self.wires["iopub"].send([b"\x01"])  # subscribe to every topic (ZMTP 3.0: a message)
            self._wait_ready(deadline)
        except (OSError, EOFError, Refused, queue.Empty) as e:
            raise RuntimeError(f"the kernel did not answer ({type(e).__name__})") from e

    def _wait_ready(self, deadline: float) -> None:
        """Until the kernel answers a request (its IOPub reports on it): every second a new request, since a
        subscription takes a moment to reach it."""
        while True:
            msg_id = self._request("shell", "kernel_info_request", {})
            end = min(deadline, time.monotonic() + 1)
            try:
                while _parent_id(self._next(end - time.monotonic()) or {}) != msg_id:
                    pass
                return
            except queue.Empty:
                pass
            if not self.alive():
                raise RuntimeError("the kernel died before it answered")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"the kernel did not answer in {limits.READY_S} s")

    def _request(self, channel: str, kind: str, content: dict) -> str:
        """Send a request on the shell or control channel; its id."""
        msg = self.session.msg(kind, content)
        self.wires[channel].send(self.session.serialize(msg))
        return msg["header"]["msg_id"]

    def _next(self, timeout: float) -> dict | None:
        """The next IOPub message, read within its bounds, its content left as bytes past MAX_DECODED_BYTES; None for
        one that cannot be read (forged, replayed, a header past MAX_HEADER_BYTES); queue.Empty when none came in
        time, Refused past the bounds, EOFError once the kernel closed IOPub."""
        frames = self.wires["iopub"].recv(timeout)
        try:
            _, parts = self.session.feed_identities(frames)
            if any(len(part) > limits.MAX_HEADER_BYTES for part in parts[1:4]):  # header, parent header, metadata
                return None
            small = len(parts) < 5 or len(parts[4]) <= limits.MAX_DECODED_BYTES
            return self.session.deserialize(parts, content=small)
        except Exception:  # noqa: BLE001 - a message the kernel forged (a replayed signature, bad parts): skipped
            return None

    def exit_code(self):
        """The sandbox's exit status once it stopped (bubblewrap passes on the kernel's), else None."""
        return self.last_exit if self.process is None else self.process.poll()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """The kernel killed with its whole sandbox: its session (bubblewrap outside), whose death ends the
        sandbox's processes inside (``--die-with-parent``, its own pid namespace); then :func:`sandbox.reap`."""
        for wire in self.wires.values():
            wire.close()
        self.wires = {}
        if self.process is not None:
            if self.process.poll() is None:  # not yet waited for: its pid is still its session's
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.last_exit = self.process.wait(limits.REAP_S)
            except subprocess.TimeoutExpired:
                self.last_exit = None
        self.process = None
        sandbox.reap()

    def execute(self, code: str, timeout: float, max_chars: int = limits.MAX_OUTPUT_CHARS) -> Outcome:
        """Run ``code``; its outputs (at most ``max_chars`` characters kept), and whether it finished, raised,
        timed out or killed the kernel (or was killed for a message past the bounds: ``oversized``)."""
        out = Outcome()
        if not self.alive():
            out.status = "died"
            return out
        deadline = time.monotonic() + timeout
        try:
            msg_id = self._request("shell", "execute_request", {
                "code": code, "silent": False, "store_history": False, "user_expressions": {},
                "allow_stdin": False, "stop_on_error": True})
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    out.status = "timeout"
                    self._interrupt(msg_id)
                    return out
                try:
                    msg = self._next(min(left, limits.POLL_S))
                except queue.Empty:
                    if not self.alive():
                        out.status = "died"
                        return out
                    continue
                if msg is not None and _parent_id(msg) == msg_id and _apply(out, msg, max_chars):
                    return out
        except Refused:
            out.oversized = True
        except (EOFError, OSError):  # the kernel closed its sockets: it is ending, or of no more use
            self._wait_end(limits.ENDING_S)
        out.status = "died"
        self.stop()
        return out

    def _wait_end(self, seconds: float) -> None:
        """Give a kernel that is ending (its sockets closed) a moment to end, so that its exit status is known."""
        end = time.monotonic() + seconds
        while self.alive() and time.monotonic() < end:
            time.sleep(0.05)

    def _interrupt(self, msg_id: str) -> None:
        """Ask the kernel to stop; kill it if it does not become idle within a few seconds."""
        try:
            self._request("control", "interrupt_request", {})
            end = time.monotonic() + limits.INTERRUPT_S
            while time.monotonic() < end:
                msg = self._next(max(0.05, end - time.monotonic()))
                if (msg is not None and _parent_id(msg) == msg_id and msg["msg_type"] == "status"
                        and isinstance(msg.get("content"), dict) and msg["content"].get("execution_state") == "idle"):
                    return
        except Exception:  # noqa: BLE001 - no answer (or past the bounds): it is killed below
            pass
        self.stop()


def _parent_id(msg: dict):
    parent = msg.get("parent_header")
    return parent.get("msg_id") if isinstance(parent, dict) else None


OUTPUTS = ("stream", "display_data", "execute_result", "error")


def _apply(out: Outcome, msg: dict, max_chars: int) -> bool:
    """One IOPub message of the cell into ``out``; True once the kernel says the cell is done."""
    kind, content = msg.get("msg_type"), msg.get("content")
    if isinstance(content, bytes) and kind in OUTPUTS:  # too large to decode, and so to keep
        out.flooded = True
        if kind == "error":
            out.status, out.error = "error", "an error too large to read"
    if not isinstance(content, dict):
        return False
    if kind == "status":
        return content.get("execution_state") == "idle"
    if kind == "clear_output":
        out.outputs.clear()
    elif kind in OUTPUTS:
        _take(out, msg, max_chars)
    return False


def _take(out: Outcome, msg: dict, max_chars: int) -> None:
    """One output message of the cell into ``out``, within its limits; an output forged out of shape is dropped."""
    try:
        node = nbformat.v4.output_from_msg(msg)
    except Exception:  # noqa: BLE001 - a malformed output is the kernel's loss, never the grading's
        return
    if msg["msg_type"] == "error":
        out.status = "error"
        evalue = str(node.evalue)[:limits.MAX_ERROR_CHARS].splitlines()  # cut before it is split: the kernel's length
        line = evalue[0][:limits.ERROR_LINE_CHARS] if evalue else ""
        out.error = f"{str(node.ename)[:limits.ERROR_NAME_CHARS]}: {line}"
    size = len(str(msg["content"]))  # everything the output carries: text, data, metadata, traceback
    n = str(node.get("text", "")).count("\n")
    if out.lines + n > limits.MAX_OUTPUT_LINES or out.chars + size > max_chars:
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
