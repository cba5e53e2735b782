"""Every message a kernel sends is bounded before the grader holds it, on every channel.

ZeroMQ's own bound (``MAXMSGSIZE``) is per frame: one IOPub message of 120 frames of 15 MiB (views of one buffer, so
the sandbox's memory limits never see it) took the grading process to 2 GiB, and messages the kernel sent on the
shell, stdin and control channels, which the grader never reads, piled up in its process; and a message within the
bounds on the wire was decoded whole, however much its JSON grows in memory. Each test grades cells in a process of
its own and reads that process's peak resident memory (``VmHWM``): the grading process is the one that would hold the
messages.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, venv_env

pytestmark = pytest.mark.slow

PEAK_BYTES = 2**29  # the grading process's peak resident memory, all of it (its own libraries included)

GRADE = r"""
import json, sys
import nbformat
from grader.running import sandbox
from grader.running.kernel import Kernel
from grader.running.run import Clock, Run, run_notebook

def peak():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmHWM"].split()[0]) * 1024

nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in json.loads(sys.argv[1])])
base = peak()
box = sandbox.new_box()
sandbox.give(box / "out")
kernel, run = Kernel(box), Run(nb)
try:
    run_notebook(kernel, nb, 60, run, Clock(300), "pass")
finally:
    kernel.stop()
    sandbox.remove_box(box)
print(json.dumps({"problems": run.problems, "outputs": [c.outputs for c in nb.cells], "base": base, "peak": peak()}))
"""


def grade(*cells: str) -> dict:
    """``cells`` graded as one notebook in a process of its own: its notes, each cell's outputs, and its peak memory
    before grading (``base``: the libraries) and at the end (``peak``)."""
    done = subprocess.run([sys.executable, "-c", GRADE, json.dumps(cells)], cwd=ROOT, env=venv_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def texts(outputs: list) -> str:
    return "".join(str(o.get("text", "")) for o in outputs)


# One display_data message of 121 frames (its 6 parts, then 120 views of one 15 MiB buffer): 1.8 GiB on the wire.
HUGE_IOPUB = """
_k = get_ipython().kernel
_buf = bytearray(15 * 2**20)
_k.session.send(_k.iopub_socket, "display_data", {"data": {"text/plain": "huge"}, "metadata": {}},
                parent=_k.get_parent("shell"), ident=_k._topic("display_data"), buffers=[_buf] * 120)
import time; time.sleep(5)
print("not reached")
"""


def test_one_huge_message_is_refused_unread_and_the_grading_goes_on():
    """Before: the grading process held all 1.8 GiB of the message, and the cell passed with nothing noted."""
    got = grade("print('before')", HUGE_IOPUB, "print('after')")
    assert got["peak"] < PEAK_BYTES, f"peak {got['peak'] / 2**30:.2f} GiB"
    assert any("sent a message larger than" in p for p in got["problems"]), got["problems"]
    assert "not reached" not in texts(got["outputs"][1])
    assert texts(got["outputs"][0]) == "before\n" and texts(got["outputs"][2]) == "after\n", got["outputs"]


# 40 messages of 15 MiB on each of the shell, stdin and control sockets, to the identity the grader's requests came
# from (on stdin and control, the session's id, which jupyter_client's channels use as their identity). Each sent in
# the thread that owns the socket.
CHANNEL_FLOOD = """
import threading
_k = get_ipython().kernel
_buf = bytearray(15 * 2**20)
_ids = {"shell": list(_k._parent_ident["shell"]), "session": [_k.get_parent("shell")["header"]["session"].encode()]}

def _blast(socket, ident, done):
    for _ in range(40):
        socket.send_multipart(ident + [b"<IDS|MSG>", b"", b"{}", b"{}", b"{}", b"{}", _buf], copy=False)
    done.set()

_sent = []
for _stream, _ident in ((_k.shell_stream, _ids["shell"]), (_k.control_stream, _ids["session"])):
    _sent.append(threading.Event())
    _stream.io_loop.add_callback(_blast, _stream.socket, _ident, _sent[-1])
_sent.append(threading.Event())
_blast(_k.stdin_socket, _ids["session"], _sent[-1])
print("sent", all(e.wait(60) for e in _sent))
"""


def test_a_flood_on_the_channels_the_grader_does_not_read_costs_it_nothing():
    """Before: the shell, stdin and control channels queued 1.8 GiB in the grading process (jupyter_client connects
    them, ZeroMQ reads them into its queues, and nothing empties them)."""
    got = grade(CHANNEL_FLOOD, "import time; time.sleep(5); print('after')")
    assert texts(got["outputs"][0]) == "sent True\n", got["outputs"]
    assert texts(got["outputs"][1]) == "after\n", got["outputs"]
    assert got["peak"] < PEAK_BYTES, f"peak {got['peak'] / 2**30:.2f} GiB"


# One display_data message of 15 MB of JSON, within the bounds on the wire: decoded, 3 million numbers.
DENSE_JSON = """
_k = get_ipython().kernel
_k.session.send(_k.iopub_socket, "display_data", {"data": {"text/plain": "x"}, "metadata": {"m": [0.5] * 3_000_000}},
                parent=_k.get_parent("shell"), ident=_k._topic("display_data"))
print("sent")
"""


def test_a_message_whose_json_could_never_be_kept_is_not_decoded():
    """Before: its 15 MB were decoded into 200 MiB of Python objects, then cut as a flood anyway (a cell keeps
    MAX_OUTPUT_CHARS characters, and JSON spends at most 6 bytes on one)."""
    got = grade(DENSE_JSON, "print('after')")
    assert got["peak"] - got["base"] < 64 * 2**20, f"grading took {(got['peak'] - got['base']) / 2**20:.0f} MiB"
    assert any("printed more than" in p for p in got["problems"]), got["problems"]
    assert [texts(o) for o in got["outputs"]] == ["sent\n", "after\n"]
