"""Grading on a dask cluster (``--cluster``, ``grader/running/cluster.py``): a real scheduler and two worker processes
on this machine (``distributed.LocalCluster``). The same class graded there and here gives the same grades.csv; a worker
killed mid-run leaves every submission graded; an address that is no scheduler's is refused before grading."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from layout import nbmeta

from conftest import ROOT, venv_env

A04 = "04_queries_keys_values"
FULL, NONE = "10.0", "0.0"  # the solution earns every point of assignment 4 (10), the blank notebook none


@pytest.fixture(scope="module")
def scheduler():
    """A scheduler with two worker processes of one thread each, and a client to reach them."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            yield cluster.scheduler_address, client


def class_of(tmp_path, n: int = 4):
    """``n`` submissions of assignment 4, the even ones solved, the odd ones blank."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for i in range(n):
        nbformat.write(nbmeta.submission(A04, solved=i % 2 == 0), subs / f"s{i}.ipynb")
    return subs


def grading(subs, out, *options: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader", A04, str(subs), "--out", str(out), "--seed", "7",
                             *options], cwd=ROOT, env=venv_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def finished(proc: subprocess.Popen) -> str:
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    return text


def grades(out) -> list[dict]:
    with open(out / A04 / "grades.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_cluster_grades_a_class_as_this_machine_does(tmp_path, scheduler):
    address, _ = scheduler
    subs = class_of(tmp_path)
    finished(grading(subs, tmp_path / "here", "--jobs", "2"))
    there = finished(grading(subs, tmp_path / "there", "--cluster", address))
    assert f"2 at a time on the dask cluster at {address}" in there
    assert there.splitlines()[0].startswith("limits: ") and there.splitlines()[0].endswith("(2 worker(s))"), \
        "the first line gives the limits that hold on the workers"
    local, remote = grades(tmp_path / "here"), grades(tmp_path / "there")
    assert [r["score"] for r in remote] == [FULL, NONE, FULL, NONE], remote
    assert remote == local
    here, there_csv = (tmp_path / where / A04 / "grades.csv" for where in ("here", "there"))
    assert there_csv.read_bytes() == here.read_bytes()
    assert sorted(p.name for p in (tmp_path / "there" / A04 / "results").glob("*.json")) == \
        [f"s{i}.json" for i in range(4)], "every result saved on the machine that ran the command"


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_submission(tmp_path, scheduler):
    """A worker process grading a submission is killed (SIGKILL) once the first result is saved: the scheduler runs
    its task again on the other worker (or on the one its nanny starts anew), and every row is graded. The results,
    saved as they arrived, are what ``--resume`` on this machine reuses."""
    address, client = scheduler
    subs, out = class_of(tmp_path, 5), tmp_path / "out"
    proc = grading(subs, out, "--cluster", address)
    end = time.monotonic() + 600
    while not list((out / A04 / "results").glob("*.json")) and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before a worker could be killed"
    busy = [worker for worker, tasks in client.processing().items() if tasks]
    assert busy, "no worker was grading when one was to be killed"
    os.kill(client.run(os.getpid, workers=busy[:1])[busy[0]], signal.SIGKILL)  # in the middle of a submission
    text = finished(proc)
    rows = grades(out)
    assert [r["score"] for r in rows] == [FULL, NONE, FULL, NONE, FULL], text
    assert not any(r["problems"] for r in rows), rows
    assert len(list((out / A04 / "results").glob("*.json"))) == 5
    again = finished(grading(subs, out, "--resume"))  # on this machine: every result saved from the cluster is kept
    assert "Grading 0 submission(s)" in again and "5 result(s) kept from the last run" in again, again
    assert grades(out) == rows


def test_an_address_that_is_no_schedulers_is_refused_naming_cluster(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "grader", A04, str(tmp_path), "--cluster", "my scheduler"], cwd=ROOT,
                         env=venv_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "--cluster: expected tcp://HOST:PORT" in bad.stderr and "got 'my scheduler'" in bad.stderr


def test_a_scheduler_that_does_not_answer_is_said_before_grading(monkeypatch):
    pytest.importorskip("distributed")
    import socket

    from grader import limits
    from grader.running import cluster

    monkeypatch.setattr(limits, "CLUSTER_CONNECT_S", 2)
    with socket.socket() as s:  # a port of this machine where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError) as caught:
        cluster.Cluster(f"127.0.0.1:{port}")
    said = str(caught.value)
    assert said.startswith("--cluster: expected tcp://HOST:PORT") and f"got '127.0.0.1:{port}'" in said
    assert "none answered within 2 s" in said


class Finished:
    """A stand-in for a dask future: what a task came back as."""

    def __init__(self, status: str, value=None, error: BaseException | None = None):
        self.status, self.value, self.error = status, value, error

    def result(self):
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value

    def exception(self, timeout=None):
        return self.error


class LostThenRunAgain(Finished):
    """A task given as done whose result was lost with its worker: the scheduler runs it again."""

    def exception(self, timeout=None):
        self.status = "finished"  # the wait ends when the new run does
        return None


def test_whatever_a_task_comes_back_as_becomes_its_submissions_row():
    from grader.running.cluster import outcome

    class KilledWorker(Exception):
        pass

    assert outcome(Finished("finished", {"result": {"points": 1}})) == {"result": {"points": 1}}
    assert outcome(Finished("finished", {"why": "no sandbox there"})) == {"why": "no sandbox there"}
    for odd in (None, "text", [1], {}, {"result": 1, "why": "x"}, {"points": 3}, {"why": 3}):
        assert "returned no result" in outcome(Finished("finished", odd))["why"], odd
    assert "could not be read back" in outcome(Finished("finished", ValueError("a student's text")))["why"]
    raised = outcome(Finished("error", error=ValueError("a message quoting the submission")))["why"]
    assert raised == "grading on the cluster failed: ValueError; it was not graded"  # the type only
    assert "workers died while grading this file" in outcome(Finished("error", error=KilledWorker()))["why"]
    assert "cancelled" in outcome(Finished("cancelled"))["why"]
    assert outcome(LostThenRunAgain("lost", {"result": {"points": 2}})) == {"result": {"points": 2}}


def test_a_task_that_cannot_grade_on_its_worker_returns_the_reason_and_never_raises(monkeypatch):
    """A raising task would be logged by dask with its arguments, the seed among them: it returns the reason."""
    from grader.running import cluster, sandbox

    other = not sandbox.unsafe()  # a run whose sandboxing differs from this worker's
    why = cluster._remote("grader.grade:run_one", {"seed": 987654321}, None, other)["why"]
    assert f"({sandbox.UNSAFE}), unlike this run; it was not graded" in why and "987654321" not in why
    monkeypatch.setattr(cluster, "_prepared", lambda unsafe, module: None)
    assert cluster._remote("grader.no_such_module:run", {"seed": 987654321}, None, False) == {
        "why": "grading on the cluster failed on its worker: ModuleNotFoundError; it was not graded"}


def test_a_box_whose_maker_died_is_swept_and_a_live_makers_is_kept():
    """A worker killed in the middle of a submission leaves its box: the next worker on that machine removes it."""
    import tempfile
    from pathlib import Path

    from grader.running import cluster

    ended = subprocess.Popen(["true"])
    ended.wait()
    dead = Path(tempfile.mkdtemp(prefix=f"grader-box-{ended.pid}-"))
    (dead / "out").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=f"grader-box-{os.getpid()}-"))
    try:
        assert cluster.sweep_boxes() >= 1
        assert not dead.exists() and alive.is_dir()
    finally:
        alive.rmdir()
