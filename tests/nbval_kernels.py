"""Kernels for strict nbval that start reliably (``make test`` runs nbval on two workers, twice).

jupyter_client gives each kernel TCP ports that were free a moment before the
kernel binds them; two kernels starting at once on two workers can pick the
same port, and one of them dies before it replies ("Kernel died before
replying to kernel_info"). Here every kernel talks over unix sockets in a
folder of its own instead (nothing to race for), keeps its stderr, and, if it
still dies at start-up, is started once more with the first one's stderr
shown as a warning; a second death fails with that stderr in the error.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings

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
        km.start_kernel(**{**kwargs, "stderr": log})
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
