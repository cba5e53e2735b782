"""A grading kernel's life as ``grader/running/kernel.py`` drives it, in one sandbox after another.

A cell past its timeout is interrupted by a message on the control channel and the kernel lives on; a kernel
that exits is noticed, with its own exit status; a kernel the grader stops is killed with its sandbox (SIGKILL);
``start`` after any of these gives a fresh kernel in a new socket folder, whose namespace is empty.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from grader.running import sandbox
from grader.running.kernel import Kernel

pytestmark = pytest.mark.slow


@pytest.fixture
def kernel():
    box = sandbox.new_box()
    sandbox.give(box / "out")
    kernel = Kernel(box)
    kernel.start()
    yield kernel
    kernel.stop()
    sandbox.remove_box(box)


def text(outcome) -> str:
    return "".join(str(o.get("text", "")) for o in outcome.outputs)


def test_a_cell_past_its_timeout_is_interrupted_and_the_kernel_lives_on(kernel):
    kernel.execute("x = 41", 30)
    began = time.monotonic()
    out = kernel.execute("while True:\n    pass", 1)
    assert out.status == "timeout" and time.monotonic() - began < 5
    assert kernel.alive() and kernel.starts == 1
    out = kernel.execute("print(x + 1)", 30)
    assert (out.status, text(out)) == ("ok", "42\n")  # the same kernel: its namespace kept


def test_a_kernel_that_exits_is_noticed_with_its_exit_status(kernel):
    out = kernel.execute("import os; os._exit(3)", 30)
    assert out.status == "died" and not kernel.alive()
    assert kernel.exit_code() == 3


def test_a_kernel_the_grader_stops_is_killed_with_its_sandbox(kernel):
    kernel.execute("import time", 30)
    kernel.stop()
    assert not kernel.alive() and kernel.exit_code() == -signal.SIGKILL


def test_a_new_start_is_a_fresh_kernel_in_a_new_socket_folder(kernel):
    kernel.execute("x = 1", 30)
    kernel.execute("import os; os._exit(0)", 30)
    kernel.start()
    assert kernel.alive() and kernel.starts == 2
    assert sorted(p.name for p in kernel.box.iterdir() if p.name.startswith("sock")) == ["sock1", "sock2"]
    out = kernel.execute("print('x' in dir())", 30)
    assert (out.status, text(out)) == ("ok", "False\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox has a uid of its own only when the grader is root")
def test_nothing_of_a_stopped_kernel_is_left_running(kernel):
    kernel.execute("import subprocess; subprocess.Popen(['sleep', '600'])", 30)
    kernel.stop()
    assert sandbox.reap(wait=0) == 0
