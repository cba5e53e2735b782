"""Grade a class: collect -> sandboxed run -> verdicts -> gradebook -> feedback -> report.

Every submission runs in its own sandbox (``grader/sandbox.py``), ``jobs`` at a time; the verdicts,
the gradebook, the feedback pages and the report are made here, outside every sandbox. Each
submission's result is saved as soon as it is ready, so a run that stops loses nothing already graded.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from grader import collect, feedback, gradebook, report, sandbox, verdicts
from grader.forbidden import findings
from grader.run import grade_in_sandbox

ROOT = Path(__file__).resolve().parent.parent
def run_one(assignment: str, text: str, timeout: float, max_points: dict[str, float]) -> dict:
    """Steps 2 and 3 for one rebuilt notebook, in a worker: the run in a sandbox, then the verdicts."""
    import nbformat
    import torch

    torch.set_num_threads(1)
    box = Path(tempfile.mkdtemp(prefix="grader-box-"))
    os.chmod(box, 0o755)
    sandbox.prepare(box)
    try:
        package = Path(__import__("transformer").__file__).resolve().parent
        read_roots = tuple(sorted({sys.prefix, sys.base_prefix, str(package), str(Path(sys.prefix).resolve())}))
        run = grade_in_sandbox(nbformat.reads(text, as_version=4), assignment, box, timeout, read_roots)
        judged = verdicts.judge(assignment, run.replies, max_points)
    finally:
        shutil.rmtree(box, ignore_errors=True)
    return {"notebook": nbformat.writes(run.notebook), "problems": run.problems, "sandbox": run.sandbox,
            "verdicts": judged}


def _pool(jobs: int):
    ctx = multiprocessing.get_context("spawn")  # each worker claims a sandbox uid of its own
    return concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx)


def run_all(assignment: str, ready: list, timeout: float, max_points: dict, jobs: int, done) -> None:
    """Run every (submission, notebook text) and hand each result to ``done`` as it arrives."""
    if jobs == 1:
        for sub, text in ready:
            try:
                done(sub, run_one(assignment, text, timeout, max_points))
            except Exception as exc:  # noqa: BLE001 - one broken submission never stops the others
                sub.note(f"grading failed: {type(exc).__name__}: {str(exc)[:200]}")
        return
    left = list(ready)
    for _attempt in range(2):  # a pool that broke is replaced once for what it had not finished
        with _pool(jobs) as pool:
            futures = {pool.submit(run_one, assignment, text, timeout, max_points): (sub, text) for sub, text in left}
            for future in concurrent.futures.as_completed(futures):
                sub, text = futures[future]
                try:
                    done(sub, future.result())
                    left.remove((sub, text))
                except concurrent.futures.process.BrokenProcessPool:
                    continue
                except Exception as exc:  # noqa: BLE001
                    sub.note(f"grading failed: {type(exc).__name__}: {str(exc)[:200]}")
                    left.remove((sub, text))
        if not left:
            return
    for sub, _ in left:
        sub.note("a grading worker stopped before grading this file; grade it again")


def _refusal(assignment: str, submissions: Path) -> str | None:
    """Why this run cannot start (a wrong argument, or no sandbox), or None."""
    source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    if not source.exists():
        known = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
        return f"ASSIGNMENT: expected one of {known}, got {assignment!r}"
    if not submissions.is_dir():
        return f"SUBMISSIONS: expected a folder of <student>.ipynb files, got {str(submissions)!r}"
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


def _saver(out: Path, assignment: str, db_url: str, unsafe: bool, sandboxes: dict, zeroed: dict):
    """The callback that records one finished submission: gradebook, feedback page, results file.
    ``zeroed``: student -> {grade_id: findings} scored 0 (``--forbidden zero``)."""
    import nbformat

    def done(sub, result: dict) -> None:
        # 3-5. verdicts (made in the worker, outside the sandbox) -> gradebook -> feedback, saved at once
        for p in result["problems"]:
            sub.note(p)
        judged = result["verdicts"]
        for gid, why in zeroed.get(sub.student, {}).items():
            if gid in judged:
                judged[gid] = dataclasses.replace(judged[gid], points=0.0, failures=[*judged[gid].failures, *why])
                sub.note(f"{gid} scored 0: it uses what the exercise forbids (--forbidden zero; see flags)")
        sub.points = {gid: v.points for gid, v in judged.items()}
        sub.score = gradebook.record(db_url, assignment, sub.student, sub.points)
        sub.graded = True
        sandboxes[sub.student] = result["sandbox"]
        nb = nbformat.reads(result["notebook"], as_version=4)
        page = feedback.page(nb, judged, sub.problems, assignment, sub.student, db_url, sandboxed=not unsafe)
        (out / "feedback" / f"{sub.student}.html").write_text(page, encoding="utf-8")
        saved = {"student": sub.student, "file": sub.source.name, "score": sub.score, "points": sub.points,
                 "problems": sub.problems, "sandbox": result["sandbox"],
                 "failures": {g: v.failures for g, v in judged.items()}}
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


def _summary(rows: list[dict], unsafe: bool, has_mathjax: bool, seconds_each: float | None) -> None:
    if not has_mathjax:
        print("note: the book's MathJax is not installed (npm ci), so feedback pages show formulas as TeX")
    if seconds_each is not None:
        print(f"{seconds_each:.1f} s per submission")
    attention = [r for r in rows if r["problems"] or r["flags"] or (r["sandbox"] and not unsafe)]
    print(f"{len(attention)} of {len(rows)} submission(s) need your attention: see the problems, sandbox and "
          f"flags columns" if attention else "every submission was graded cleanly")
    if unsafe:
        print(f"WARNING: graded without a sandbox ({sandbox.UNSAFE}=1): student code ran with your privileges")


def _to_zero(found: list) -> dict[str, list[str]]:
    """``--forbidden zero``: grade_id -> the findings that score that exercise 0."""
    out: dict[str, list[str]] = {}
    for f in found:
        if f.grade_id:
            out.setdefault(f.grade_id, []).append(f.text)
    return out


def grade(assignment: str, submissions: Path, out_root: Path = ROOT / "grading", timeout: int | None = None,
          jobs: int | None = None, forbidden: str = "flag") -> int:
    """Grade every submission of ``assignment`` in ``submissions``; 0 when the run completed, 2 if it cannot start.
    ``forbidden="zero"`` scores 0 every exercise whose cells use what it forbids (default: flag it only)."""
    import nbformat

    if why := _refusal(assignment, submissions):
        print(why, file=sys.stderr)
        return 2
    unsafe = sandbox.unsafe()
    if timeout is None:
        from traitlets.config.loader import PyFileConfigLoader
        timeout = int(PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config().Execute.timeout)
    # 1. collect
    out = out_root / assignment
    work = _fresh(out)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    try:
        release_path, db_url, max_points = gradebook.prepare(work, assignment, timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    release = nbformat.read(release_path, as_version=4)
    subs = collect.assign_ids(collect.find(submissions, assignment), assignment)
    jobs = max(1, min(jobs or default_jobs(), len(subs) or 1))
    print(f"Grading {len(subs)} submission(s) of {assignment} (each cell stopped after {timeout} s, "
          f"{jobs} at a time, {'WITHOUT a sandbox' if unsafe else 'each in its own sandbox'}) ...")
    started = time.perf_counter()
    ready, flagged, zeroed = [], {}, {}
    for sub in subs:
        if (nb := collect.read_notebook(sub)) is not None:
            rebuilt = collect.rebuild(sub, nb, release)
            found = findings(rebuilt, assignment)
            flagged[sub.student] = [f.text for f in found]
            zeroed[sub.student] = _to_zero(found) if forbidden == "zero" else {}
            ready.append((sub, nbformat.writes(rebuilt)))
    has_mathjax = feedback.copy_mathjax(out / "feedback")
    sandboxes: dict = {}
    # 2. sandboxed runs (and 3-5 for each as it finishes)
    run_all(assignment, ready, timeout, max_points, jobs, _saver(out, assignment, db_url, unsafe, sandboxes, zeroed))
    elapsed = time.perf_counter() - started
    # 6. report
    rows = _rows(out, assignment, subs, max_points, unsafe, sandboxes, flagged)
    report.write_csv(out, rows, list(max_points))
    report.print_table(rows)
    report.write_summary(out, rows, list(max_points), max_points)
    print(f"\nwrote {out / 'grades.csv'}, {out / 'summary.png'} and {len(rows)} page(s) in {out / 'feedback'}")
    _summary(rows, unsafe, has_mathjax, elapsed / len(subs) if subs else None)
    return 0


def default_jobs() -> int:
    """One submission per core: each is graded in its own kernel."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
