"""nbval's kernels start over unix sockets, with their stderr kept: a kernel that dies at start-up is
started once more, and a second death names what the kernel printed (tests/nbval_kernels.py)."""

from __future__ import annotations

import ast
import json
import sys

import pytest

import nbval_kernels


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A kernelspec ``dying`` whose kernel prints to stderr and exits, and one ``python`` that works."""
    spec = tmp_path / "kernels" / "dying"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", "import sys; sys.stderr.write('no such module: torch_oops'); sys.exit(3)",
            "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "dying", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setattr(nbval_kernels, "_FOLDERS", [str(tmp_path)])


def test_a_kernel_that_dies_twice_shows_its_stderr(kernels):
    with pytest.warns(UserWarning, match="(?s)died at start-up.*no such module: torch_oops"):
        with pytest.raises(RuntimeError, match="(?s)twice.*stderr:\nno such module: torch_oops"):
            nbval_kernels.start_new_kernel(startup_timeout=20, kernel_name="dying")


def test_a_kernel_talks_over_unix_sockets_in_its_own_folder(kernels, tmp_path):
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME

    km, kc = nbval_kernels.start_new_kernel(startup_timeout=60, kernel_name=CURRENT_ENV_KERNEL_NAME)
    try:
        assert km.transport == "ipc" and km.ip.startswith(str(tmp_path))
        reply = kc.execute_interactive("6 * 7", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)



def test_only_the_kernel_gets_the_notebook_environment(kernels, monkeypatch):
    """The notebooks run on two threads and AVX2 code (``KERNEL_ENV``), whatever the test process has."""
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME

    for name in nbval_kernels.KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    km, kc = nbval_kernels.start_new_kernel(startup_timeout=60, kernel_name=CURRENT_ENV_KERNEL_NAME)
    printed = []
    try:
        names = sorted(nbval_kernels.KERNEL_ENV)
        kc.execute_interactive(f"import os; print({{k: os.environ.get(k) for k in {names}}})", timeout=30,
                               output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert ast.literal_eval("".join(printed)) == nbval_kernels.KERNEL_ENV
