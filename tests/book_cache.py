"""The built book the tests read, kept between runs for as long as nothing it is built from changes.

A build of the book (Jupyter Book, warnings as errors) takes about 25 s of CPU. What it is built from: every
file of the repository that git tracks or would track (the chapters and exercises, the package its API pages
document, the extensions under ``book/_ext``, ``_config.yml`` and ``_toc.yml``), the benchmark results of this
machine (``_build/bench/``, shown by the performance page when present), the installed JavaScript
(``node_modules/.package-lock.json``), and the Python environment (each installed distribution and its
version, and Python's own). A build that passed with the same inputs passes again, so a run whose inputs have a
kept build reads that one; any change (a new file too) gives another digest and a new build, and a build that
fails is never kept. Outside a git checkout every run builds. ``rm -rf _build/test-book`` forces a build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable

KEPT = 2  # kept builds: this one and the one before it (a branch switched back and forth builds once each)


def inputs_digest(root: Path) -> str | None:
    """A digest of everything the book in ``root`` is built from (see above); ``None`` outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                                capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = sorted({os.fsdecode(n) for n in listed.split(b"\0") if n})
    bench = root / "_build" / "bench"
    names += sorted(p.relative_to(root).as_posix() for p in bench.glob("*") if p.is_file())
    names += ["node_modules/.package-lock.json"]
    digest = hashlib.sha256()
    for name in names:
        path = root / name
        body = path.read_bytes() if path.is_file() else b"(none)"
        digest.update(f"{name}\0{len(body)}\0".encode())
        digest.update(body)
    packages = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})  # not the cwd's egg-info
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=packages))
    digest.update("\n".join([sys.version, *installed]).encode())
    return digest.hexdigest()


def kept_build(root: Path, digest: str) -> Path:
    """The folder of the build for ``digest`` (it passed when it holds ``passed``)."""
    return root / "_build" / "test-book" / digest[:24]


def keep(build: Path) -> None:
    """Mark ``build`` as passed, and remove kept builds but the newest :data:`KEPT`."""
    (build / "passed").touch()
    kept = sorted((p for p in build.parent.iterdir() if (p / "passed").exists()),
                  key=lambda p: (p / "passed").stat().st_mtime, reverse=True)
    for old in kept[KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


def built_book(root: Path, scratch: Path, build: Callable[[Path], subprocess.CompletedProcess]) -> Path:
    """The ``_build/html`` folder of the book of ``root``: the kept build for its inputs, or one that ``build(out)``
    makes now, into the kept folder (outside git: into ``scratch``). The test workers of one run share ``scratch``:
    the first decides under its lock, the others wait and read its answer. A failed build fails with its output."""
    from filelock import FileLock

    where, failed = scratch / "where.txt", scratch / "failed.txt"
    with FileLock(str(scratch / "run.lock")):
        if not where.exists() and not failed.exists():
            digest = inputs_digest(root)
            out = kept_build(root, digest) if digest else scratch
            out.mkdir(parents=True, exist_ok=True)
            with FileLock(str(out / "build.lock")):  # another run with the same inputs may be building it
                if not (out / "passed").exists():
                    shutil.rmtree(out / "_build", ignore_errors=True)  # from scratch: Sphinx would reuse a failed one
                    proc = build(out)
                    if proc.returncode != 0:
                        failed.write_text(proc.stdout[-4000:] + proc.stderr[-4000:], encoding="utf-8")
                    elif digest:
                        keep(out)
            where.write_text(str(out / "_build" / "html"), encoding="utf-8")
    assert not failed.exists(), failed.read_text(encoding="utf-8")
    return Path(where.read_text(encoding="utf-8"))
