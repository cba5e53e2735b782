"""The set-up `make` does (read with `make -n`, nothing is installed): PyTorch from the default index unless the
reader names PyTorch's CPU index with TORCH_INDEX, and then the pinned version from there."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(*variables: str) -> list[str]:
    """The commands `make` would run to create the environment (as if pyproject.toml had changed)."""
    out = subprocess.run(["make", "-n", "-W", "pyproject.toml", ".venv/.installed", *variables], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "pip install" in line]


def test_no_other_index_is_asked_by_default():
    assert not any("--index-url" in line or "--extra-index-url" in line for line in planned())


def test_the_cpu_build_comes_from_the_index_the_reader_names_at_the_pinned_version():
    lines = planned("TORCH_INDEX=https://download.pytorch.org/whl/cpu")
    torch = [line for line in lines if "--index-url https://download.pytorch.org/whl/cpu" in line]
    assert len(torch) == 1 and lines.index(torch[0]) < len(lines) - 1  # before the project's own install
    pinned = re.search(r"^torch==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)[1]
    argument = re.search(r'"(torch==[^"]*)"', torch[0])[1]  # as the shell will expand it
    version = subprocess.run(["bash", "-c", f'echo "{argument}"'], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
    assert version == f"torch=={pinned}"
