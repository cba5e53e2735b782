"""Grade a class: collect -> sandboxed run -> verdicts -> gradebook -> feedback -> report.

Every submission runs in its own sandbox (``grader/sandbox.py``), ``jobs`` at a time; the verdicts,
the gradebook, the feedback pages and the report are made here, outside every sandbox. Each
submission's result is saved as soon as it is ready, so a run that stops loses nothing already graded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import sys
import time
from pathlib import Path

from grader import collect, feedback, gradebook, hidden, report, sandbox, workers
from grader.forbidden import findings
from grader.kernel import READY_S
from grader.run import grade_in_sandbox
from tools.env import venv_env
from tools.paths import ROOT, assignments, kernel_read_roots, notebook_path

SECRET_ENV = "GRADER_SECRET"  # the course's secret, from which each assignment's seed is derived
# Seconds past its budget (and one cell timeout) after which a submission's worker is stopped (workers.run_all):
# a kernel started just before the budget ran out (two waits of READY_S at most) and the grader's own work after it.
DEADLINE_GRACE = 2 * READY_S + 60


def run_one(assignment: str, text: str, seed: int, box: Path, timeout: float, budget: float,
            max_points: dict[str, float], watch: dict) -> dict:
    """Steps 2 and 3 for one rebuilt notebook, in a worker: the run in a sandbox, each reply judged as it comes."""
    import nbformat
    import torch

    torch.set_num_threads(1)
    sandbox.give(box / "out")  # to this process's sandbox uid
    run = grade_in_sandbox(nbformat.reads(text, as_version=4), assignment, seed, box, timeout, budget,
                           kernel_read_roots(sandbox.KERNEL_SIDE), max_points, watch)
    return {"notebook": nbformat.writes(run.notebook), "problems": run.problems, "sandbox": run.sandbox,
            "verdicts": run.verdicts, "ran": run.ran}


def run_seed(assignment: str, seed: int | None = None, secret_file: Path | None = None) -> tuple[int, str]:
    """The run's seed and where it came from: given (a regrade), the course's secret (a file or the
    environment variable ``GRADER_SECRET``, never inside the repository), or fresh."""
    if seed is not None:
        return int(seed), "given"
    secret, source = None, "fresh"
    if secret_file is not None:
        secret, source = secret_file.read_text(encoding="utf-8").strip(), f"the secret in {secret_file}"
    elif os.environ.get(SECRET_ENV):
        secret, source = os.environ[SECRET_ENV], f"the secret in ${SECRET_ENV}"
    if secret:
        return int.from_bytes(hashlib.sha256(f"{secret}:{assignment}".encode()).digest()[:8], "little") >> 1, source
    return secrets.randbits(63), source


def _refusal(assignment: str, submissions: Path, secret_file: Path | None = None) -> str | None:
    """Why this run cannot start (a wrong argument, or no sandbox), or None."""
    if not notebook_path("solutions", assignment).exists():
        return f"ASSIGNMENT: expected one of {assignments()}, got {assignment!r}"
    if not submissions.is_dir():
        return f"SUBMISSIONS: expected a folder of <student>.ipynb files, got {str(submissions)!r}"
    if secret_file is not None:
        if not secret_file.is_file():
            return f"--secret-file: expected a file holding the course's secret, got {str(secret_file)!r}"
        if ROOT in secret_file.resolve().parents:
            return (f"--secret-file: expected a file outside the repository (which is public), got "
                    f"{str(secret_file)!r}")
    if not sandbox.unsafe() and (why := sandbox.why_unavailable()):
        return (f"refusing to grade: {why}.\nStudent code must run in a sandbox. To grade anyway, without one, "
                f"set {sandbox.UNSAFE}=1 (every row is then marked unsandboxed).")
    return None


def _fresh(out: Path) -> Path:
    """Empty the assignment's output folders; nbgrader's work folder."""
    for name in ("_nbgrader", "feedback", "results"):
        shutil.rmtree(out / name, ignore_errors=True)
        (out / name).mkdir(parents=True)
    return out / "_nbgrader"


def _saver(out: Path, assignment: str, db_url: str, unsafe: bool, sandboxes: dict, zeroed: dict, flagged: dict):
    """The callback that records one finished submission: gradebook, feedback page, results file.
    ``zeroed``: student -> {grade_id: findings} scored 0 (``--forbidden zero``); ``flagged``: student -> flags,
    which the page shows too."""
    import nbformat

    def done(sub, result: dict) -> None:
        # 3-5. verdicts (made in the worker, outside the sandbox) -> gradebook -> feedback, saved at once
        for p in result["problems"]:
            sub.note(p)
        judged = result["verdicts"]
        for gid, names in result["ran"].items():
            if names:
                sub.note(f"{gid}: while the hidden tests ran, the kernel reported calls to {', '.join(names)}, which "
                         "this exercise forbids (reported by your kernel)")
        for gid, why in zeroed.get(sub.student, {}).items():
            if gid in judged:
                judged[gid] = dataclasses.replace(judged[gid], points=0.0, failures=[*judged[gid].failures, *why])
                sub.note(f"{gid} scored 0: it uses what the exercise forbids (--forbidden zero; see flags)")
        sub.points = {gid: v.points for gid, v in judged.items()}
        sub.score = gradebook.record(db_url, assignment, sub.student, sub.points)
        sub.graded = True
        sandboxes[sub.student] = result["sandbox"]
        nb = nbformat.reads(result["notebook"], as_version=4)
        notes = [*sub.problems, *(f"read by the grader: {f}" for f in flagged.get(sub.student, []))]
        page = feedback.page(nb, judged, notes, assignment, sub.student, db_url, sandboxed=not unsafe)
        (out / "feedback" / f"{sub.student}.html").write_text(page, encoding="utf-8")
        saved = {"student": sub.student, "file": report.clean(sub.source.name), "score": sub.score,
                 "points": sub.points, "problems": sub.problems, "sandbox": result["sandbox"],
                 "failures": {g: v.failures for g, v in judged.items()},
                 "reported": {g: v.reported for g, v in judged.items()}}
        (out / "results" / f"{sub.student}.json").write_text(json.dumps(saved, indent=1), encoding="utf-8")

    return done


def _rows(out: Path, assignment: str, subs: list, max_points: dict, unsafe: bool, sandboxes: dict,
          flagged: dict) -> list[dict]:
    """One grades.csv row per submission; a submission that never ran gets its problem page."""
    total, rows = sum(max_points.values()), []
    for sub in subs:
        if not sub.graded:
            sub.note("no exercise could be graded: score 0")
            (out / "feedback" / f"{sub.student}.html").write_text(
                feedback.problem_page(sub.student, assignment, sub.problems), encoding="utf-8")
        row = {"student": sub.student, "file": sub.source.name, "max_score": total, "score": sub.score,
               "problems": report.clean("; ".join(sub.problems)), "sandbox": "UNSANDBOXED" if unsafe else
               report.clean("; ".join(sandboxes.get(sub.student, []))),
               "flags": report.clean("; ".join(flagged.get(sub.student, [])))}
        row.update({c: sub.points.get(c, 0.0) for c in max_points})
        rows.append(row)
    return rows


def _summary(rows: list[dict], unsafe: bool, has_mathjax: bool, seconds_each: float | None, run_info: dict) -> None:
    if not has_mathjax:
        print("note: the book's MathJax is not installed (npm ci), so feedback pages show formulas as TeX")
    if seconds_each is not None:
        print(f"{seconds_each:.1f} s per submission")
    attention = [r for r in rows if r["problems"] or r["flags"] or (r["sandbox"] and not unsafe)]
    print(f"{len(attention)} of {len(rows)} submission(s) need your attention: see the problems, sandbox and "
          f"flags columns" if attention else "every submission was graded cleanly")
    if unsafe:
        print(f"WARNING: graded without a sandbox ({sandbox.UNSAFE}=1): student code ran with your privileges")
    print(f"hidden inputs drawn from seed {run_info['seed']} ({run_info['seed_from']}); to grade again with the same "
          f"questions: --seed {run_info['seed']}")
    print(run_info["limits"])


def _to_zero(found: list) -> dict[str, list[str]]:
    """``--forbidden zero``: grade_id -> the findings that score that exercise 0."""
    out: dict[str, list[str]] = {}
    for f in found:
        if f.grade_id:
            out.setdefault(f.grade_id, []).append(f.text)
    return out


def grade(assignment: str, submissions: Path, out_root: Path = ROOT / "grading", timeout: int | None = None,
          jobs: int | None = None, budget: int | None = None, seed: int | None = None,
          secret_file: Path | None = None, forbidden: str = "flag") -> int:
    """Grade every submission of ``assignment`` in ``submissions``; 0 when the run completed, 2 if it cannot start.

    ``budget``: seconds one submission may take in all (default ten cell timeouts); ``seed``: the hidden inputs'
    seed of an earlier run to grade again (default: from the course's secret, else fresh); ``forbidden="zero"``
    scores 0 every exercise whose cells use what it forbids (default: flag it only).
    """
    import nbformat

    if why := _refusal(assignment, submissions, secret_file):
        print(why, file=sys.stderr)
        return 2
    unsafe = sandbox.unsafe()
    print(sandbox.limits_line())
    timeout = timeout or _cell_timeout()
    budget = budget or 10 * timeout
    seed, seed_source = run_seed(assignment, seed, secret_file)
    # 1. collect
    out = out_root / assignment
    work = _fresh(out)
    os.environ["PATH"] = venv_env()["PATH"]
    try:
        release_path, db_url, max_points = gradebook.prepare(work, assignment, timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    release = nbformat.read(release_path, as_version=4)
    subs = collect.assign_ids(collect.find(submissions, assignment), assignment)
    jobs = max(1, min(jobs or default_jobs(), len(subs) or 1))
    run_info = {"assignment": assignment, "seed": seed, "seed_from": seed_source, "timeout": timeout,
                "budget": budget, "limits": sandbox.limits_line(), "sandboxed": not unsafe}
    _announce(out, run_info, len(subs), jobs)
    started = time.perf_counter()
    ready, flagged, zeroed = _read_all(subs, release, assignment, forbidden)
    has_mathjax = feedback.copy_mathjax(out / "feedback")
    sandboxes: dict = {}
    # 2. sandboxed runs (and 3-5 for each as it finishes)
    save = _saver(out, assignment, db_url, unsafe, sandboxes, zeroed, flagged)
    _run_all(assignment, ready, save, jobs, seed=seed, timeout=timeout, budget=budget, max_points=max_points)
    elapsed = time.perf_counter() - started
    # 6. report
    rows = _rows(out, assignment, subs, max_points, unsafe, sandboxes, flagged)
    report.write_csv(out, rows, list(max_points))
    report.print_table(rows)
    report.write_summary(out, rows, list(max_points), max_points)
    print(f"\nwrote {out / 'grades.csv'}, {out / 'summary.png'} and {len(rows)} page(s) in {out / 'feedback'}")
    _summary(rows, unsafe, has_mathjax, elapsed / len(subs) if subs else None, run_info)
    return 0


def _announce(out: Path, run_info: dict, n: int, jobs: int) -> None:
    """The run's settings, printed and saved in ``run.json`` (the seed, to grade again with the same questions)."""
    where = "each in its own sandbox" if run_info["sandboxed"] else "WITHOUT a sandbox"
    print(f"Grading {n} submission(s) of {run_info['assignment']} (each cell stopped after {run_info['timeout']} s, "
          f"each submission after {run_info['budget']} s in all, {jobs} at a time, {where}) ...")
    (out / "run.json").write_text(json.dumps(run_info, indent=1), encoding="utf-8")


def _cell_timeout() -> int:
    """nbgrader_config.py's ``c.Execute.timeout``."""
    from traitlets.config.loader import PyFileConfigLoader

    return int(PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config().Execute.timeout)


def _read_all(subs: list, release, assignment: str, forbidden: str) -> tuple[list, dict, dict]:
    """Step 1 for every submission: (submission, rebuilt notebook text) of those that could be read, their flags,
    and (``forbidden="zero"``) the exercises their flags score 0."""
    import nbformat

    ready, flagged, zeroed = [], {}, {}
    for sub in subs:
        if (rebuilt := collect.prepare(sub, release)) is not None:
            found = findings(rebuilt, assignment)  # never raises: what it cannot read is a finding of its own
            flagged[sub.student] = [f.text for f in found]
            zeroed[sub.student] = _to_zero(found) if forbidden == "zero" else {}
            ready.append((sub, nbformat.writes(rebuilt)))
    return ready, flagged, zeroed


def _run_all(assignment: str, ready: list, save, jobs: int, **settings) -> None:
    """Step 2 for every read submission on ``jobs`` workers, each result saved as it arrives (``save``)."""
    watch = {gid: tuple(f.names) for gid, f in getattr(hidden.module_for(assignment), "FORBIDS", {}).items()}
    by_key = {i: sub for i, (sub, _) in enumerate(ready)}
    jobs_list = [(i, {"assignment": assignment, "text": text, "watch": watch, **settings})
                 for i, (_, text) in enumerate(ready)]

    def done(key, result):
        try:
            save(by_key[key], result)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be saved is that submission's problem
            by_key[key].note(f"its result could not be saved: {type(exc).__name__}")

    # the budget bounds the kernel's work; the deadline is the last guard, against a fault of the grader's own side
    deadline = settings["budget"] + DEADLINE_GRACE + settings["timeout"]
    workers.run_all(jobs_list, run_one, jobs, done, lambda key, why: by_key[key].note(why), deadline=deadline)


def default_jobs() -> int:
    """One submission per core: each is graded in its own kernel."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
