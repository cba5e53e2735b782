"""Control groups for the sandboxes of one grading process, on cgroup-v1 and cgroup-v2 machines.

The machine's own hierarchy is one of the two; both layouts are checked here on a folder laid out like
``/sys/fs/cgroup`` (the kernel's files are plain files to write), and ``limits_line`` says which holds.
"""

from __future__ import annotations

import pytest

from grader.running import cgroups, sandbox

LIMITS = sandbox.Limits(memory_bytes=3 * 2**30, processes=99)


def test_v2_one_group_with_memory_processes_and_cpu(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu\n")
    (tmp_path / "g").mkdir()  # the kernel makes a new group's files; here they exist already
    for name in ("memory.max", "memory.swap.max", "pids.max", "cpu.weight"):
        (tmp_path / "g" / name).write_text("max\n")
    procs = cgroups.control_groups(tmp_path, "g", LIMITS.memory_bytes, LIMITS.processes)
    assert procs == [tmp_path / "g" / "cgroup.procs"]
    assert (tmp_path / "g" / "memory.max").read_text() == str(3 * 2**30)
    assert (tmp_path / "g" / "memory.swap.max").read_text() == "0"
    assert (tmp_path / "g" / "pids.max").read_text() == "99"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids"  # what was missing, enabled
    assert cgroups.cgroup_version(tmp_path) == "v2"


def test_v2_without_the_memory_controller_gives_no_groups(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    assert cgroups.control_groups(tmp_path, "g", LIMITS.memory_bytes, LIMITS.processes) == []


def test_v1_a_group_per_controller(tmp_path):
    for controller in ("cpu", "memory", "pids"):
        (tmp_path / controller).mkdir()
    procs = cgroups.control_groups(tmp_path, "g", LIMITS.memory_bytes, LIMITS.processes)
    assert sorted(p.parent.parent.name for p in procs) == ["cpu", "memory", "pids"]
    assert (tmp_path / "memory" / "g" / "memory.limit_in_bytes").read_text() == str(3 * 2**30)
    assert (tmp_path / "pids" / "g" / "pids.max").read_text() == "99"
    assert cgroups.cgroup_version(tmp_path) == "v1"


def test_neither_gives_no_groups(tmp_path):
    assert cgroups.control_groups(tmp_path, "g", LIMITS.memory_bytes, LIMITS.processes) == []
    assert cgroups.cgroup_version(tmp_path) == "none"


@pytest.mark.parametrize("unsafe", ["", "1"])
def test_the_run_says_which_limits_hold(monkeypatch, unsafe):
    monkeypatch.setenv(sandbox.UNSAFE, unsafe)
    monkeypatch.setattr(sandbox, "_cgroups", None)
    line = sandbox.limits_line()
    if unsafe:
        assert "NO SANDBOX" in line
    else:
        assert ("control groups (v" in line) == bool(sandbox.cgroups(sandbox.Limits())), line
        assert line.startswith("limits: ")
