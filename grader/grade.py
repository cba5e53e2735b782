"""Grade a class: collect -> sandboxed run -> verdicts -> gradebook -> feedback -> report.

Every submission runs in its own sandbox (``grader/running/sandbox.py``), ``jobs`` at a time on this machine
(``grader/running/workers.py``) or on a dask cluster's workers (``grader/running/cluster.py``), and its worker returns
its final verdicts. The gradebook, the feedback pages and the report are made here, outside every sandbox.
Each submission's result is saved as soon as it is ready (``grader/recording/results.py``), so a run that stops loses
nothing already graded, ``--resume`` finishes it, and ``--only`` grades some students again and keeps the rest.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from grader import limits
from grader.collecting import collect
from grader.judging.forbidden import findings, forbids, watched
from grader.progress import Progress
from grader.recording import feedback, gradebook, results
from grader.recording.bookkeeping import Book
from grader.reporting import report
from grader.running import cluster, sandbox, workers
from grader.running.run import grade_in_sandbox
from grader.seed import run_seed
from layout.env import venv_env
from layout.paths import ROOT, assignments, kernel_read_roots, notebook_path


@dataclass
class Options:
    """How to grade: see ``python -m grader --help``."""

    timeout: int | None = None        # seconds a cell may run (default: nbgrader_config.py)
    jobs: int | None = None           # submissions graded at once (default: one per core)
    budget: int | None = None         # seconds one submission may take in all (default: ten cell timeouts)
    seed: int | None = None           # the hidden inputs' seed (default: the secret's, the last run's, or fresh)
    secret_file: Path | None = None   # the course's secret
    forbidden: str = "flag"           # "flag" or "zero"
    only: tuple[str, ...] = ()        # grade these students again, keep everyone else's saved result
    resume: bool = False              # finish a run that stopped: reuse the results of the same seed
    quiet: bool = False               # no progress, no lines as it goes; the closing summary only
    export: tuple[str, Path] | None = None  # ("canvas" | "moodle", the file the platform exported)
    column: str | None = None         # the platform's gradebook column (default: the one naming the assignment)
    similar: float | None = None      # pairs at least this alike are listed (default: similarity.THRESHOLD)
    cluster: str | None = None        # a dask scheduler's address: grade on its workers (default: on this machine)


def run_one(assignment: str, text: str, seed: int, box: Path, timeout: float, budget: float,
            max_points: dict[str, float], watch: dict, zero: dict, forbidden: str = "flag") -> dict:
    """Steps 2 and 3 for one rebuilt notebook, in a worker: the run in a sandbox, each reply judged as it comes,
    and the final verdicts (``zero``: grade_id -> findings that score it 0; with ``forbidden`` "zero", what the
    kernel recorded scores its exercise 0 too). ``flags``: what the kernel recorded, flagged as the reading's are."""
    import nbformat
    import torch

    torch.set_num_threads(1)
    sandbox.give(box / "out")  # to this process's sandbox uid
    run = grade_in_sandbox(nbformat.reads(text, as_version=4), assignment, seed, box, timeout, budget,
                           kernel_read_roots(sandbox.KERNEL_SIDE), max_points, watch)
    recorded = kernel_findings(run.ran, run.off)
    if forbidden == "zero":
        zero = {g: [*zero.get(g, []), *recorded.get(g, [])] for g in {*zero, *recorded}}
    problems, judged = list(run.problems), dict(run.verdicts)
    for gid, why in sorted(zero.items()):
        if gid in judged:
            judged[gid] = dataclasses.replace(judged[gid], points=0.0, failures=[*judged[gid].failures, *why])
            problems.append(f"{gid} scored 0: it uses what the exercise forbids (--forbidden zero; see flags)")
    return {"notebook": nbformat.writes(run.notebook), "problems": problems, "sandbox": run.sandbox,
            "verdicts": judged, "flags": [t for g in sorted(recorded) for t in recorded[g]]}


def kernel_findings(ran: dict, off: dict) -> dict[str, list[str]]:
    """grade_id -> what the kernel recorded while its hidden tests ran, in the grader's words: the forbidden names it
    saw run (only those the grader asked about) and the parts of its recorder it found off (only ``OFF``'s words)."""
    out: dict[str, list[str]] = {}
    for gid in sorted({*ran, *off}):
        if ran.get(gid):
            out.setdefault(gid, []).append(f"{gid}: while the hidden tests ran, the kernel recorded calls to "
                                           f"{', '.join(ran[gid])}, which this exercise forbids (reported by the "
                                           "kernel); read it")
        if off.get(gid):
            out.setdefault(gid, []).append(f"{gid}: while the hidden tests ran, the kernel found its recorder of "
                                           f"forbidden calls off ({', '.join(off[gid])}), which the grader cannot "
                                           "check (reported by the kernel); read it")
    return out


def _refusal(assignment: str, submissions: Path, opts: Options) -> str | None:
    """Why this run cannot start (a wrong argument, or no sandbox), or None."""
    if not notebook_path("solutions", assignment).exists():
        return f"ASSIGNMENT: expected one of {assignments()}, got {assignment!r}"
    if not (submissions.is_dir() or submissions.is_file()):
        return f"SUBMISSIONS: expected a folder of submissions or a .zip of them, got {str(submissions)!r}"
    if opts.secret_file is not None:
        if not opts.secret_file.is_file():
            return f"--secret-file: expected a file holding the course's secret, got {str(opts.secret_file)!r}"
        if ROOT in opts.secret_file.resolve().parents:
            return (f"--secret-file: expected a file outside the repository (which is public), got "
                    f"{str(opts.secret_file)!r}")
    if opts.only and opts.resume:
        return "--only and --resume: expected one of them, got both"
    if opts.export:
        from grader.reporting.export import check

        kind, path = opts.export
        if not path.is_file():
            return f"--export {kind}: expected the file {kind} exported, got {str(path)!r}"
        try:
            check(kind, path, assignment, opts.column)
        except ValueError as exc:  # a file of another shape, or no column for this assignment: said before grading
            return f"--export {kind}: {exc}"
    if not sandbox.unsafe() and not opts.cluster and (why := sandbox.why_unavailable()):  # a cluster's: each worker
        return (f"refusing to grade: {why}.\nStudent code must run in a sandbox. To grade anyway, without one, "
                f"set {sandbox.UNSAFE}=1 (every row is then marked unsandboxed).")
    return None


def _folders(out: Path, keep_results: bool) -> Path:
    """The assignment's output folders: the pages made anew, the results kept only to be reused, the gradebook
    always kept (hand-entered points live there); nbgrader's work folder."""
    shutil.rmtree(out / "feedback", ignore_errors=True)
    if not keep_results:
        shutil.rmtree(out / "results", ignore_errors=True)
    for name in ("_nbgrader", "feedback", "results"):
        (out / name).mkdir(parents=True, exist_ok=True)
    return out / "_nbgrader"


def grade(assignment: str, submissions: Path, out_root: Path = ROOT / "grading", opts: Options | None = None) -> int:
    """Grade every submission of ``assignment`` in ``submissions`` (a folder or a zip) into ``out_root/assignment``;
    0 when the run completed, 2 if it cannot start."""
    opts = dataclasses.replace(opts or Options())  # a copy: --only and --resume fill in the last run's seed
    if why := _refusal(assignment, submissions, opts):
        print(why, file=sys.stderr)
        return 2
    try:
        subs = collect.gather(submissions, assignment)
    except collect.SourceError as exc:
        print(exc, file=sys.stderr)
        return 2
    out = out_root / assignment
    previous = results.previous_run(out)
    if (opts.only or opts.resume) and opts.seed is None:
        if previous is None:
            print(f"{'--only' if opts.only else '--resume'}: expected an earlier run of {assignment} in {out}, "
                  "found none", file=sys.stderr)
            return 2
        opts.seed = int(previous["seed"])
    if opts.only and (unknown := sorted(set(opts.only) - {s.student for s in subs})):
        print(f"--only: expected students of this folder, got {unknown}; they are: "
              f"{sorted(s.student for s in subs)[:limits.NAMES_SHOWN]}", file=sys.stderr)
        return 2
    sandbox.compile_bytecode()
    os.environ["PATH"] = venv_env()["PATH"]
    try:
        pool = cluster.Cluster(opts.cluster) if opts.cluster else workers.Local(opts.jobs or workers.default_jobs())
    except ValueError as exc:  # no scheduler there, or no workers: said before grading
        print(exc, file=sys.stderr)
        return 2
    try:
        return _grade(assignment, subs, out, opts, pool)
    finally:
        pool.close()


def _grade(assignment: str, subs: list, out: Path, opts: Options, pool) -> int:
    import nbformat

    unsafe = sandbox.unsafe()
    timeout = opts.timeout or _cell_timeout()
    budget = opts.budget or limits.BUDGET_TIMEOUTS * timeout
    seed, seed_source = run_seed(assignment, opts.seed, opts.secret_file)
    if opts.seed is not None and (opts.only or opts.resume):
        seed_source = "the last run's"
    work = _folders(out, keep_results=bool(opts.only or opts.resume))
    try:
        release_path, db_url, max_points = gradebook.prepare(work, assignment, timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    release = nbformat.read(release_path, as_version=4)
    rules, graded = forbids(assignment), [s for s in subs if s.status == "graded"]  # rules: read here, watched there
    ready, saved, flagged, zeroed = _read_all(graded, release, rules, opts, seed, out / "results")
    run_info = {"assignment": assignment, "seed": seed, "seed_from": seed_source, "timeout": timeout,
                "budget": budget, "limits": pool.limits_line(), "sandboxed": not unsafe,
                "export": opts.export and {"kind": opts.export[0], "file": str(Path(opts.export[1]).resolve()),
                                           "column": opts.column}}  # hand points reach the file (grader/manual.py)
    if not opts.quiet:
        print(run_info["limits"])
    report.announce(run_info, len(subs), len(ready), len(saved), pool, opts.quiet)
    results.write_run(out, run_info)
    has_mathjax = feedback.copy_mathjax(out / "feedback")
    progress = Progress(quiet=opts.quiet)
    progress.start(len(ready))
    book = Book(out, assignment, db_url, unsafe, seed, flagged)
    try:
        _run_all(assignment, ready, book, progress, pool, watched(rules), seed=seed,
                 timeout=timeout, budget=budget, max_points=max_points, zeroed=zeroed, forbidden=opts.forbidden)
    finally:
        progress.close()
    run_info.update(graded_s=round(progress.elapsed(), 1), estimate_error=progress.estimate_errors())
    results.write_run(out, run_info)
    book.finish(subs, saved, forget_others=not opts.only and not opts.resume)
    rows = report.rows(subs, max_points, unsafe, book)
    report.write_csv(out, rows, list(max_points))
    report.write_summary(out, rows, list(max_points), max_points)
    from grader.reporting import similarity

    found = similarity.report(release, book.notebooks, out / "similarity.html", notebook_path("solutions", assignment),
                              similarity.THRESHOLD if opts.similar is None else opts.similar)
    exported = _export(out, rows, assignment, opts) if opts.export else None
    report.closing(out, rows, max_points, run_info, progress, has_mathjax, found, exported, unsafe)
    return 0


def _cell_timeout() -> int:
    """nbgrader_config.py's ``c.Execute.timeout`` (``limits.CELL_TIMEOUT_S`` unless the instructor set another)."""
    from traitlets.config.loader import PyFileConfigLoader

    return int(PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config().Execute.timeout)


def _read_all(subs: list, release, rules: dict, opts: Options, seed: int, saved_in: Path):
    """Step 1 for every submission: (submission, rebuilt notebook text) of those to grade now, (submission, saved
    result) of those whose result is reused (``--only``, ``--resume``), their flags, and (``--forbidden zero``) the
    exercises their flags score 0."""
    import nbformat

    ready, saved, flagged, zeroed = [], [], {}, {}
    for sub in subs:
        if (rebuilt := collect.read_and_rebuild(sub, release)) is None:
            continue
        reuse = None
        if opts.resume or (opts.only and sub.student not in opts.only):
            reuse = results.reusable(saved_in, sub.student, sub.digest, seed if opts.resume else None)
        if reuse is not None:
            saved.append((sub, reuse))
            continue
        if opts.only and sub.student not in opts.only:
            sub.note("graded again with --only: its file changed since the last run, or it had no saved result")
        found = findings(rebuilt, rules=rules)  # never raises: what it cannot read is a finding of its own
        flagged[sub.student] = [f.text for f in found]
        zeroed[sub.student] = _to_zero(found) if opts.forbidden == "zero" else {}
        ready.append((sub, nbformat.writes(rebuilt)))
    return ready, saved, flagged, zeroed


def _to_zero(found: list) -> dict[str, list[str]]:
    """``--forbidden zero``: grade_id -> the findings that score that exercise 0."""
    out: dict[str, list[str]] = {}
    for f in found:
        if f.grade_id:
            out.setdefault(f.grade_id, []).append(f.text)
    return out


def _run_all(assignment: str, ready: list, book: Book, progress: Progress, pool, watch: dict, zeroed: dict,
             **settings) -> None:
    """Step 2 for every read submission on ``pool`` (``workers.Local`` or ``cluster.Cluster``), each result recorded as
    it arrives (``watch``: grade_id -> the forbidden names the kernel watches while that exercise is probed, each with
    its routes: ``forbidden.watched``)."""
    by_key = {i: sub for i, (sub, _) in enumerate(ready)}
    jobs_list = [(i, {"assignment": assignment, "text": text, "watch": watch, "zero": zeroed[sub.student],
                      **settings}) for i, (sub, text) in enumerate(ready)]

    def done(key, result):
        try:
            book.fresh(by_key[key], result)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be saved is that submission's problem
            by_key[key].note(f"its result could not be saved: {type(exc).__name__}")
        progress.advance(report.attention_line(by_key[key], book))

    def failed(key, why):
        by_key[key].note(why)
        progress.advance(report.attention_line(by_key[key], book))

    # the budget bounds the kernel's work; the deadline is the last guard, against a fault of the grader's own side
    deadline = settings["budget"] + limits.DEADLINE_GRACE_S + settings["timeout"]
    pool.run_all(jobs_list, run_one, done, failed, deadline=deadline)


def _export(out: Path, rows: list[dict], assignment: str, opts: Options) -> dict | None:
    """Grades, roster and feedback zip for the platform (``--export``); None if it failed (said)."""
    from grader.recording.handback import feedback_zip
    from grader.reporting.export import export

    kind, path = opts.export
    try:
        exported = export(kind, path, rows, assignment, out, opts.column)
    except ValueError as exc:
        print(f"--export {kind}: {exc}", file=sys.stderr)
        return None
    exported["feedback_zip"] = feedback_zip(kind, out, rows)
    return exported
