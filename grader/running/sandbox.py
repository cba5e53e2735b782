"""One OS sandbox per submission: a bubblewrap (``bwrap``) jail around the student's kernel.

Inside it the kernel sees a read-only system, the Python it runs on, the virtual environment and, of the
repository, only the ``transformer`` package and the exercises' visible checks (``checks``); a private
/tmp and HOME; of its ``box``, the grader's questions (``in/``, read-only), its answers (``out/``) and a
socket folder new for every kernel; no network; its own pid, IPC and UTS namespaces, so it cannot see or
signal another process, and everything it starts dies with it. When the grader runs as root the kernel
drops to an unprivileged uid that each grading process claims for itself, so the process limit holds,
and joins that process's control groups (CPU share, memory, processes; cgroup v1 or v2). Limits: address
space, processes, file size, CPU seconds. As root, each box is a size-bounded file system of its own (a
tmpfs), so nothing the kernel writes can fill the host's disk. The kernel-side code of the grader
(``grader/kernel_side``) is bound in read-only, whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grader import limits as sizes
from grader.running.cgroups import CGROUP_ROOT, cgroup_version, control_groups
from layout.paths import CHECKS, PACKAGE, sandbox_mounts

UNSAFE = "UNSAFE_NO_SANDBOX"
HOME = "/home/student"
FIRST_UID = 61000  # root grading: each grading process claims a uid of its own from here on
UID_LOCKS = Path("/run/lock/transformer-grader") if Path("/run/lock").is_dir() else Path("/tmp/transformer-grader")
KERNEL_SIDE = Path(__file__).resolve().parents[1] / "kernel_side"  # grader/kernel_side/
_claimed: tuple[int, int] | None = None  # (uid, fd of its lock), held until this process ends


@dataclass
class Limits:
    """One sandbox's limits: ``grader/limits.py``'s unless a caller (a test) chooses others."""

    memory_bytes: int = sizes.MEMORY_BYTES    # address space of each process; the cgroup's memory as root
    processes: int = sizes.PROCESSES          # threads count too
    file_bytes: int = sizes.SANDBOX_FILE_BYTES  # largest file it may write
    cpu_seconds: int = sizes.CPU_SECONDS


def unsafe() -> bool:
    return os.environ.get(UNSAFE, "") not in ("", "0")


def why_unavailable() -> str | None:
    """None when bubblewrap can start a jail here, else what is wrong."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    probe = subprocess.run([exe, *_mounts(), "--unshare-net", "--unshare-pid", "--", sys.executable, "-c", "pass"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:300]}"
    return None


def _parents(path: Path, made: set[str]) -> list[str]:
    """bwrap makes missing parent folders private (0700); make them 0755 first, so the kernel can pass."""
    out = []
    for parent in reversed(path.parents):
        p = str(parent)
        if p not in ("/", "/tmp", "/home") and p not in made and not p.startswith("/usr"):
            made.add(p)
            out += ["--perms", "0755", "--dir", p]
    return out


def _mounts() -> list[str]:
    """The read-only view: system, Python, the virtual environment, the package, the checks."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    size = str(sizes.TMPFS_BYTES)  # a tmpfs lives in memory: bounded, so files cannot fill the machine's
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
             "--perms", "0755", "--size", size, "--tmpfs", "/home"]
    made: set[str] = set()
    roots = sandbox_mounts()
    for root in sorted(roots, key=lambda p: len(p.parts)):
        if any(root != r and r in root.parents for r in roots) or str(root).startswith("/usr/"):
            continue  # inside another root, or in /usr already
        args += _parents(root, made) + ["--ro-bind", str(root), str(root)]
    if Path(sys.prefix).resolve() != Path(sys.prefix):  # the venv's own path, if it is a link
        args += _parents(Path(sys.prefix), made) + ["--ro-bind", str(Path(sys.prefix).resolve()), sys.prefix]
    return args


def environment(home: str = HOME) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's own."""
    return {"HOME": home, "IPYTHONDIR": f"{home}/.ipython", "MPLCONFIGDIR": f"{home}/.matplotlib",
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(KERNEL_SIDE.parent)}  # the kernel side's modules: ``from kernel_side import monitor``


def command(box: Path, sock: Path, inner: list[str], limits: Limits) -> list[str]:
    """The argv that runs ``inner`` in a fresh sandbox.

    Of ``box`` the kernel sees ``in/`` read-only (the grader's questions), ``out/`` (its answers)
    and ``sock`` (its connection file and sockets, new for every kernel) writable. ``box`` itself is
    the grader's, so the kernel can never swap one of these folders for a link.
    """
    if unsafe():  # the same environment and limits, but the grader's own view of the machine
        home = box / "home"
        home.mkdir(exist_ok=True)
        env = [f"{k}={v}" for k, v in environment(str(home)).items()]
        return ["env", "-i", *env, "prlimit", *_prlimits(limits, root=False), "--", *inner]
    uid = sandbox_uid()
    made: set[str] = set()
    args = ["bwrap", *_mounts(), "--perms", "0777", "--dir", HOME, *_parents(box / "in", made),
            "--ro-bind", str(box / "in"), str(box / "in"), "--bind", str(box / "out"), str(box / "out"),
            *_parents(KERNEL_SIDE, made), "--ro-bind", str(KERNEL_SIDE), str(KERNEL_SIDE),
            "--bind", str(sock), str(sock),
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "sandbox", "--die-with-parent", "--new-session", "--chdir", HOME, "--clearenv"]
    for k, v in environment().items():
        args += ["--setenv", k, v]
    if uid is not None:  # drop to an unprivileged uid inside, so limits on processes apply
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all"]
    else:
        args += ["--"]
    argv = ["prlimit", *_prlimits(limits, uid is not None), "--", *args, *inner]
    groups = cgroups(limits)
    if groups:  # the sandbox joins them before it starts: all it ever runs is counted there
        join = "; ".join(f"echo $$ > {g}" for g in groups)
        argv = ["sh", "-c", join + '; exec "$@"', "sh", *argv]
    return argv


_cgroups: list[Path] | None = None


def cgroups(limits: Limits) -> list[Path]:
    """This process's control groups (root only): its sandboxes share a CPU weight equal to every other
    sandbox's, however many processes they start, and a bound on all the memory they hold (tmpfs and
    memfd files included) and on their processes. The ``cgroup.procs`` files to join; [] where none."""
    global _cgroups
    if _cgroups is None:
        uid = sandbox_uid()
        _cgroups = [] if uid is None else control_groups(CGROUP_ROOT, f"transformer-grader-{uid}", limits.memory_bytes,
                                                         limits.processes)
    return _cgroups


def limits_line(limits: Limits | None = None) -> str:
    """One line for the run's output and its report: which limits hold for all a sandbox holds."""
    limits = limits or Limits()
    if unsafe():
        return "limits: NO SANDBOX, so no limits but the process rlimits"
    groups = cgroups(limits)
    if groups:
        kind = "v1" if len(groups) > 1 else "v2"
        return (f"limits: control groups ({kind}) bound the memory ({limits.memory_bytes // 2**30} GiB), processes "
                f"({limits.processes}) and CPU share of each grading process's sandboxes; boxes are "
                f"{sizes.BOX_BYTES // 2**20} MiB file systems")
    why = "not root" if os.geteuid() != 0 else f"control groups {cgroup_version(CGROUP_ROOT)} cannot be used here"
    return (f"limits: WITHOUT control groups ({why}): each kernel process is bounded by rlimits only (address space "
            f"{limits.memory_bytes // 2**30} GiB, {limits.processes} processes, files of "
            f"{limits.file_bytes // 2**20} MiB)" + ("" if os.geteuid() == 0 else "; boxes are not size-bounded"))


def compile_bytecode(folders: tuple[Path, ...] = (PACKAGE, CHECKS, KERNEL_SIDE)) -> None:
    """The package's, the checks' and the kernel side's bytecode, compiled by the grader before any kernel starts: a
    kernel reads them read-only and may not write bytecode (``PYTHONDONTWRITEBYTECODE``), so without it every kernel
    would compile every module it imports again (a third of a second for the package). Up-to-date files are
    left alone; a folder the grader cannot write to is left as it is."""
    import compileall

    for folder in folders:
        compileall.compile_dir(folder, quiet=2, workers=1)


def new_box() -> Path:
    """A box for one submission: a folder of the grader's (a tmpfs of ``BOX_BYTES`` when root) holding ``in``
    (the grader's questions) and ``out`` (the kernel's answers, handed to the kernel's uid by the process that
    grades in it: :func:`give`), made before any kernel runs; named after the process that made it."""
    import tempfile

    box = Path(tempfile.mkdtemp(prefix=f"grader-box-{os.getpid()}-"))
    os.chmod(box, 0o755)
    if os.geteuid() == 0 and not unsafe():
        options = f"size={sizes.BOX_BYTES},mode=0755,nosuid,nodev"
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(box)],
                       check=False, capture_output=True)
    (box / "in").mkdir(mode=0o755)
    (box / "out").mkdir(mode=0o755)
    return box


def remove_box(box: Path) -> None:
    """The box and everything in it gone (its file system unmounted first)."""
    if os.path.ismount(box):
        subprocess.run(["umount", "-l", str(box)], check=False, capture_output=True)
    shutil.rmtree(box, ignore_errors=True)


def give(path: Path) -> None:
    """Hand a folder (or file) the grader just made to the kernel's uid."""
    uid = sandbox_uid()
    if uid is not None:
        os.chown(path, uid, uid, follow_symlinks=False)


def sandbox_uid() -> int | None:
    """The uid this process's kernels run as when grading as root (claimed once, locked), else None.

    The uid is this process's alone, also against another grading run on the same machine: a lock
    file per uid, held while the process lives, so no two processes share one uid's process limit,
    and reaping a uid never touches another run's kernels.
    """
    global _claimed
    if os.geteuid() != 0 or unsafe():
        return None
    if _claimed is None:
        import fcntl

        UID_LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
        for uid in range(FIRST_UID, FIRST_UID + sizes.SANDBOX_UIDS):
            fd = os.open(UID_LOCKS / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _claimed = (uid, fd)
            break
        else:
            raise RuntimeError(f"no free sandbox uid in {FIRST_UID}..{FIRST_UID + sizes.SANDBOX_UIDS - 1}")
    return _claimed[0]


def forget_uid() -> None:
    """In a process forked from a grading process: forget its uid and control groups, to claim one's own."""
    global _claimed, _cgroups
    _claimed = _cgroups = None


def reap(wait: float = sizes.REAP_S) -> int:
    """Kill whatever still runs as this process's sandbox uid (a sandbox going away); how many were left.

    A sandbox's processes die with it, but not in an instant; the next sandbox waits for them, so
    that it starts with its whole process limit.
    """
    import signal
    import time

    uid = sandbox_uid()
    if uid is None:
        return 0
    end, found = time.monotonic() + wait, 0
    while True:
        left = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _uid_of(p) == uid]
        found = max(found, len(left))
        if not left or time.monotonic() > end:
            return found
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def _uid_of(p: Path) -> int | None:
    try:
        return p.stat().st_uid
    except OSError:
        return None


def _prlimits(limits: Limits, root: bool) -> list[str]:
    nproc = limits.processes
    if not root:  # the count is per user: leave room for what this user already runs
        nproc += sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))
    return [f"--as={limits.memory_bytes}", f"--nproc={nproc}", f"--fsize={limits.file_bytes}",
            f"--cpu={limits.cpu_seconds}", "--core=0"]


def _owned(p: Path) -> bool:
    try:
        return p.stat().st_uid == os.getuid()
    except OSError:
        return False
