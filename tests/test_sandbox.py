"""Properties of the sandbox a submission's kernel runs in, asked from inside one kernel.

These hold whatever the submission does, because the kernel can only see and reach what the
sandbox gives it (``grader/running/sandbox.py``): they are checked here with plain Python, no tricks.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from grader.running import sandbox
from grader.running.kernel import Kernel

from conftest import ROOT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")]

PROBE = r"""
import json, os, socket, sys
open("/tmp/scratch", "w").write("a student may use /tmp")
facts = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
         "repo": sorted(os.listdir(REPO)), "grader": sorted(os.listdir(REPO + "/grader")),
         "home": sorted(os.listdir(os.path.expanduser("~"))),
         "secret": os.environ.get("GRADER_SECRET"), "hostname": os.uname().nodename,
         "debugger": sorted(m for m in sys.modules if m.startswith(("debugpy.", "_pydevd")))[:3]}
import checks
facts["checks"] = checks.__file__
for path in (REPO + "/transformer/x.py", REPO + "/checks/x.py", os.path.dirname(os.__file__) + "/x.py", "/usr/x",
             REPO + "/x"):
    try:
        open(path, "w").close()
        facts.setdefault("wrote", []).append(path)
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2)
    facts["connected"] = True
except OSError as e:
    facts["connected"] = False
try:
    open("/proc/1/environ").read()
    facts["host_environ"] = True
except OSError:
    facts["host_environ"] = False
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def facts():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    os.environ["GRADER_SECRET"] = "do not pass me on"
    box = sandbox.new_box()
    sandbox.give(box / "out")
    kernel = Kernel(box)
    try:
        kernel.start()
        code = PROBE.replace("REPO", repr(str(ROOT))).replace("PORT", str(port))
        out = kernel.execute(code, 30)
    finally:
        kernel.stop()
        sandbox.remove_box(box)
        del os.environ["GRADER_SECRET"]
    try:
        listener.accept()
        reached = True
    except OSError:
        reached = False
    listener.close()
    text = "".join(o.get("text", "") for o in out.outputs)
    assert out.status == "ok", (out.status, out.error, text)
    return {**json.loads(text), "reached": reached}


def test_the_repository_shows_only_the_package_the_checks_and_the_kernel_side_code(facts):
    visible = [name for name in facts["repo"] if name != ".venv"]  # the environment, when it lives in the repo
    assert visible == ["checks", "grader", "transformer"], facts["repo"]
    assert facts["grader"] == ["kernel_side"], facts["grader"]  # not the hidden tests, not the grader's own code


def test_the_kernel_starts_without_a_debugger(facts):
    """grader/kernel_side/launcher.py: nobody attaches to a graded kernel, and debugpy was a third of its start."""
    assert facts["debugger"] == []


def test_the_kernel_imports_the_checks_from_the_repository(facts):
    assert facts["checks"] == str(ROOT / "checks" / "__init__.py")


def test_nothing_outside_its_folders_can_be_written(facts):
    assert "wrote" not in facts, facts.get("wrote")
    assert not (ROOT / "transformer" / "x.py").exists() and not (ROOT / "checks" / "x.py").exists()
    assert not (ROOT / "x").exists()


def test_no_network_not_even_the_hosts_loopback(facts):
    assert facts["connected"] is False and facts["reached"] is False


def test_its_own_processes_only(facts):
    assert max(facts["pids"]) < 50, facts["pids"]   # a fresh pid namespace: no grader, no classmate
    assert facts["hostname"] == "sandbox"


def test_a_private_home_and_none_of_the_graders_environment(facts):
    assert facts["home"] in ([], [".ipython"], [".ipython", ".matplotlib"], [".matplotlib"]), facts["home"]
    assert facts["secret"] is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel keeps the grader's uid when the grader is not root")
def test_an_unprivileged_uid_when_grading_as_root(facts):
    assert facts["uid"] == sandbox.sandbox_uid() >= sandbox.FIRST_UID


def test_a_refusal_names_what_is_missing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "bubblewrap (bwrap) is not installed" in sandbox.why_unavailable()


def test_the_grader_compiles_the_bytecode_a_kernel_cannot_write(tmp_path, monkeypatch):
    """A kernel reads the package read-only and writes no bytecode; the grader leaves a valid ``.pyc`` beside
    every module first (with PYTHONDONTWRITEBYTECODE set, as the kernel's own environment has it)."""
    import importlib.util
    import struct

    copy = tmp_path / "transformer"
    shutil.copytree(sandbox.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    sandbox.compile_bytecode((copy,))
    sources = sorted(copy.rglob("*.py"))
    assert len(sources) > 40
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER, source
        assert struct.unpack("<I", header[8:12])[0] == int(source.stat().st_mtime) & 0xFFFFFFFF, source
