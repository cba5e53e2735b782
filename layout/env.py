"""The process's environment: the virtual environment's tools on ``PATH``, and PyTorch on one thread."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path


def venv_env(env=None) -> dict[str, str]:
    """A copy of ``env`` (default: ``os.environ``) with this interpreter's bin folder first on ``PATH``, so that
    subprocesses find the virtual environment's tools (``jupyter``, ``nbgrader``, ...)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@contextmanager
def one_thread():
    """PyTorch on one thread inside the block, restored after it: sums in one fixed order, the same result on
    any number of cores, and no thread waiting for another on small steps."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
