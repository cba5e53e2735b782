"""Control groups: one grading process's sandboxes share a CPU weight and a bound on memory and processes.

cgroup v1 (a group per controller under ``/sys/fs/cgroup/<controller>/``) and v2 (one unified
hierarchy, ``cgroup.controllers`` at its top) are both used; where neither can be, there are none and
the run says so (:func:`grader.running.sandbox.limits_line`).
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def control_groups(root: Path, name: str, memory_bytes: int, processes: int) -> list[Path]:
    """Control groups called ``name`` under ``root`` with the limits set: cgroup v1 (a group per controller)
    or v2 (one group in the unified hierarchy, controllers enabled below its parent). Their
    ``cgroup.procs`` files, or [] where neither can be used."""
    settings = {"cpu": {"cpu.shares": "1024"}, "memory": {"memory.limit_in_bytes": str(memory_bytes)},
                "pids": {"pids.max": str(processes)}}
    if all((root / c).is_dir() for c in settings):  # v1
        out = []
        for controller, values in settings.items():
            try:
                group = root / controller / name
                group.mkdir(exist_ok=True)
                for key, value in values.items():
                    (group / key).write_text(value)
                out.append(group / "cgroup.procs")
            except OSError:
                return []
        return out
    try:  # v2: a group of the unified hierarchy's top, where the controllers can be enabled
        wanted = {"cpu", "memory", "pids"}
        if not wanted <= set((root / "cgroup.controllers").read_text().split()):
            return []
        enabled = set((root / "cgroup.subtree_control").read_text().split())
        if not wanted <= enabled:
            (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted - enabled)))
        group = root / name
        group.mkdir(exist_ok=True)
        for key, value in {"memory.max": str(memory_bytes), "memory.swap.max": "0",
                           "pids.max": str(processes), "cpu.weight": "100"}.items():
            if key != "memory.swap.max" or (group / key).exists():
                (group / key).write_text(value)
        return [group / "cgroup.procs"]
    except OSError:
        return []


def cgroup_version(root: Path = CGROUP_ROOT) -> str:
    """"v1", "v2" or "none": which control groups the machine offers (whether this process may use them aside)."""
    if all((root / c).is_dir() for c in ("cpu", "memory", "pids")):
        return "v1"
    return "v2" if (root / "cgroup.controllers").exists() else "none"
