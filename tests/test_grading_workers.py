"""The grading pool (``grader/running/workers.py``) on jobs of its own: a job that dies or hangs costs only itself,
every box is removed however its job ended, and the run ends. No kernel and no sandbox: the jobs are plain
functions, run in the pool's forked workers."""

import os
import time
from pathlib import Path

from grader.running import workers


def job(box: Path, what: str, seen: str):
    """One submission's stand-in: it writes down its box (in the folder ``seen``), then behaves as ``what`` says."""
    assert box.is_dir()
    (Path(seen) / f"{what}-{os.getpid()}-{time.monotonic_ns()}").write_text(str(box))
    if what == "hang":
        time.sleep(3600)
    if what == "die":
        os._exit(3)
    if what == "raise":
        raise ValueError("a message quoting the submission")
    if what == "slow":
        time.sleep(2)
    return f"graded {what}"


def run(jobs: dict, seen: Path, deadline=None, workers_n=2):
    done, failed = {}, {}
    start = time.monotonic()
    workers.run_all([(k, {"what": w, "seen": str(seen)}) for k, w in jobs.items()], job, workers_n,
                    lambda key, result: done.__setitem__(key, result),
                    lambda key, why: failed.__setitem__(key, why), deadline=deadline)
    boxes = [Path(p.read_text()) for p in seen.iterdir()]
    return done, failed, time.monotonic() - start, boxes


def test_a_job_past_its_deadline_is_stopped_named_and_the_rest_graded(tmp_path):
    """Without the deadline, the hanging job held its worker (and the run) for an hour."""
    done, failed, took, boxes = run({"a": "fine", "b": "hang", "c": "fine", "d": "fine"}, tmp_path, deadline=3)
    assert set(done) == {"a", "c", "d"} and set(failed) == {"b"}
    assert "took longer than 3 s" in failed["b"] and "not graded" in failed["b"]
    assert took < 60
    assert len(boxes) == 4 and not any(box.exists() for box in boxes), "every box is removed, the hung job's too"


def test_a_dying_and_a_raising_job_cost_only_themselves(tmp_path):
    done, failed, _, boxes = run({"a": "die", "b": "fine", "c": "raise", "d": "fine"}, tmp_path, deadline=30)
    assert set(done) == {"b", "d"}
    assert "stopped while grading" in failed["a"]
    assert failed["c"] == "grading failed: ValueError"  # the type only: the message may quote the submission
    assert len(boxes) == 4 and not any(box.exists() for box in boxes), "the dead job's box is removed too"


def test_without_a_deadline_a_slow_job_is_waited_for(tmp_path):
    done, failed, took, _ = run({"a": "slow", "b": "fine"}, tmp_path, deadline=None, workers_n=1)
    assert done == {"a": "graded slow", "b": "graded fine"} and not failed and took >= 2


def test_a_deadline_longer_than_the_jobs_stops_nothing(tmp_path):
    done, failed, _, _ = run({"a": "slow", "b": "slow"}, tmp_path, deadline=30)
    assert set(done) == {"a", "b"} and not failed


def test_a_kept_pool_grades_the_next_call_in_the_same_process_and_replaces_one_that_died(tmp_path):
    """A cluster's worker grades one submission a call; its grading process is kept between calls, as the local pool
    keeps its processes for a class. One that died with its job, or between calls, is not handed the next job."""
    kept, makers = [], []

    def call(what):
        done, failed = {}, {}
        workers.run_all([(what, {"what": what, "seen": str(tmp_path)})], job, 1, done.__setitem__,
                        failed.__setitem__, deadline=30, kept=kept)
        assert (what in done) != (what in failed) and len(kept) == 1
        makers.append(kept[0].process.pid)
        return done

    call("fine"), call("fine"), call("die"), call("fine")
    assert makers[0] == makers[1], "the second call used the kept process"
    assert makers[2] != makers[1] and makers[3] == makers[2], "the one that died with its job was replaced, once"
    kept[0].kill()  # between calls
    assert call("fine") == {"fine": "graded fine"} and makers[4] != makers[3]
    for w in kept:
        w.stop()
