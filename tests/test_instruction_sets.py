"""What chapter 10's "Double precision" paragraph says of PyTorch's random numbers: the same seed gives
the same normal numbers on AVX2 and AVX-512 code, and other bits without AVX2 (the ``default`` path).
Each draw runs in a new process with ``ATEN_CPU_CAPABILITY`` set, as ``make test``'s nbval pass does."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from conftest import venv_env

DRAW = "import torch; torch.manual_seed(0); print(torch.randn(4096).numpy().tobytes().hex())"


def draw(capability: str) -> str:
    env = {**venv_env(), "ATEN_CPU_CAPABILITY": capability}
    return subprocess.run([sys.executable, "-c", DRAW], env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout


def has(capability: str) -> bool:
    return capability in open("/proc/cpuinfo", encoding="utf-8").read().split()


@pytest.mark.skipif(not has("avx2"), reason="needs a processor with AVX2")
def test_randn_is_the_same_on_avx2_and_on_the_machines_own_code():
    here = draw(torch.backends.cpu.get_cpu_capability().lower())
    assert draw("avx2") == here


@pytest.mark.skipif(not has("avx2"), reason="needs a processor with AVX2")
def test_randn_gives_other_bits_without_avx2():
    assert draw("default") != draw("avx2")
