"""The grading pool (``grader/workers.py``) on jobs of its own: a job that dies or hangs costs only itself,
every box is removed, and the run ends. No kernel and no sandbox: the jobs are plain functions."""

import os
import time
from pathlib import Path

from grader import workers


def job(box: Path, what: str):
    """One submission's stand-in: ``what`` says how it behaves."""
    assert box.is_dir()
    if what == "hang":
        time.sleep(3600)
    if what == "die":
        os._exit(3)
    if what == "raise":
        raise ValueError("a message quoting the submission")
    return f"graded {what}", str(box)


def run(jobs: dict, deadline=None, workers_n=2):
    done, failed = {}, {}
    start = time.monotonic()
    workers.run_all([(k, {"what": w}) for k, w in jobs.items()], job, workers_n,
                    lambda key, result: done.__setitem__(key, result),
                    lambda key, why: failed.__setitem__(key, why), deadline=deadline)
    return done, failed, time.monotonic() - start


def test_a_job_past_its_deadline_is_stopped_named_and_the_rest_graded():
    """Without the deadline, the hanging job held its worker (and the run) for an hour."""
    done, failed, took = run({"a": "fine", "b": "hang", "c": "fine", "d": "fine"}, deadline=3)
    assert set(done) == {"a", "c", "d"} and set(failed) == {"b"}
    assert "took longer than 3 s" in failed["b"] and "not graded" in failed["b"]
    assert took < 60
    assert not any(Path(box).exists() for _, box in done.values())


def test_a_dying_and_a_raising_job_cost_only_themselves():
    done, failed, _ = run({"a": "die", "b": "fine", "c": "raise", "d": "fine"}, deadline=30)
    assert set(done) == {"b", "d"}
    assert "stopped while grading" in failed["a"]
    assert failed["c"] == "grading failed: ValueError"  # the type only: the message may quote the submission


def test_no_deadline_waits_for_slow_jobs():
    done, failed, _ = run({"a": "fine", "b": "fine"}, deadline=None, workers_n=1)
    assert set(done) == {"a", "b"} and not failed
