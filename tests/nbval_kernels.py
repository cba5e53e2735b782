"""Kernels for strict nbval that start reliably (``make test`` runs nbval on several workers at once).

jupyter_client gives each kernel TCP ports that were free a moment before the
kernel binds them; two kernels starting at once on two workers can pick the
same port, and one of them dies before it replies ("Kernel died before
replying to kernel_info"). Here every kernel talks over unix sockets in a
folder of its own instead (nothing to race for), keeps its stderr, and, if it
still dies at start-up, is started once more with the first one's stderr
shown as a warning; a second death fails with that stderr in the error.

Each kernel runs with ``KERNEL_ENV``. The stored outputs are made with one thread on the machine's own
instruction set (``make notebooks``); the check runs every notebook again with two threads and keeps
PyTorch, oneMKL and oneDNN on their AVX2 code. Float sums differ in their last bits with the thread count
and with the instruction set, so one pass shows that the outputs depend on neither (on a machine with
AVX-512; on one with AVX2 only, on the thread count). Their threads sleep rather than spin while they wait
for work (``OMP_WAIT_POLICY``), so the kernels of several test workers share the cores without taking each
other's time. Only the kernels get this environment: the tests beside them in the same run keep theirs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings

KERNEL_ENV = {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE", "ATEN_CPU_CAPABILITY": "avx2",
              "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
_FOLDERS: list[str] = []  # one parent folder per test process, removed at its end


def _read(log) -> str:
    log.seek(0)
    return log.read().decode("utf-8", "replace")[-4000:] or "(nothing)"


def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
    from jupyter_client.manager import KernelManager
    from nbval.kernel import NbvalKernelspecManager

    for attempt in (1, 2):
        folder = tempfile.mkdtemp(prefix="kernel-", dir=_FOLDERS[0] if _FOLDERS else None)
        log = tempfile.TemporaryFile()
        km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager(),
                           transport="ipc", ip=f"{folder}/socket")
        km.start_kernel(**{**kwargs, "stderr": log, "env": {**os.environ, **KERNEL_ENV}})
        km.__nbval_files = (folder, log)  # kept as long as the kernel lives
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=startup_timeout)
            return km, kc
        except RuntimeError as exc:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            shutil.rmtree(folder, ignore_errors=True)
            if attempt == 2:
                raise RuntimeError(f"{exc} (twice); the kernel's stderr:\n{_read(log)}") from None
            warnings.warn(f"a kernel died at start-up ({exc}); starting another. Its stderr:\n{_read(log)}",
                          stacklevel=1)


def pytest_configure(config):
    if getattr(config.option, "nbval", False):
        import nbval.kernel

        _FOLDERS.append(tempfile.mkdtemp(prefix="nbval-kernels-"))
        nbval.kernel.start_new_kernel = start_new_kernel


def pytest_unconfigure(config):
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), ignore_errors=True)
