"""Grade a folder of submissions for one assignment, through nbgrader.

    python tools/grade.py ASSIGNMENT SUBMISSIONS_FOLDER [--timeout S] [--jobs N]
    (or: make grade ASSIGNMENT=... SUBMISSIONS=...)

Every ``*.ipynb`` in the folder (``<student>.ipynb`` or
``<student>_<assignment>.ipynb``) is prepared, autograded by nbgrader in a fresh
kernel, and given a feedback page. Preparing a submission means:

1. reading it (an empty file, a file that is not JSON, or not a notebook is
   reported and scored 0; an old nbformat is converted);
2. rebuilding it on the released notebook: every locked cell comes from the
   release (an edited, deleted or re-tagged test cell is put back and
   reported), every answer cell from the student, matched by its id;
3. screening the answer cells (``tools/screen.py``): a statement that would
   change what the tests rely on (``torch.allclose = ...``) is removed and reported;
4. putting the grading guard (``transformer/_grading_guard.py``) first.

Submissions are graded ``--jobs`` at a time (default: one per core), each
worker in its own copy of the course folder and gradebook, each submission in
its own kernel; the result does not depend on the number of workers.
A cell that runs longer than ``--timeout`` seconds is stopped; a cell that kills
the kernel is replaced by an error and the rest is graded. Everything that
happened is one line in the ``problems`` column. Writes, under
``grading/<assignment>/``: ``grades.csv``, ``feedback/<student>.html`` and
``summary.png``. The exit status is 0 when every submission was graded
cleanly, 1 when something needs the instructor's eye, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import csv
import html
import json
import multiprocessing
import os
import re
import shutil
import sys
import time
import unicodedata
import warnings
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screen import module_aliases, screen_cell  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GUARD_MARK = "grading guard:"
KILLED = 'raise RuntimeError("this cell stopped the kernel when it was graded, so the grader replaced it")'
FLOOD_LINES = 1000


@dataclass
class Submission:
    student: str
    source: Path
    problems: list[str] = field(default_factory=list)
    graded: bool = False
    points: dict[str, float] = field(default_factory=dict)
    score: float = 0.0

    def note(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


# ------------------------------------------------------------------ names


def student_id(path: Path, assignment: str) -> str:
    """``José Ñ_04_x.ipynb`` -> ``Jose_N``: ASCII letters, digits, ``-`` and ``_`` only."""
    stem = path.stem
    if stem.endswith("_" + assignment):
        stem = stem[: -len(assignment) - 1]
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_stem).strip("_-") or "student"


def assign_ids(paths: list[Path], assignment: str) -> list[Submission]:
    """One submission per file; two files of the same student are both kept and both flagged."""
    subs, by_id = [], {}
    for path in paths:
        base = student_id(path, assignment)
        sid, n = base, 2
        while sid in {s.student for s in subs}:
            sid, n = f"{base}_{n}", n + 1
        sub = Submission(sid, path)
        subs.append(sub)
        by_id.setdefault(base, []).append(sub)
    for base, group in by_id.items():
        if len(group) > 1:
            files = ", ".join(s.source.name for s in group)
            for s in group:
                s.note(f"{len(group)} files for {base} ({files}); each graded separately, decide which counts")
    return subs


# ------------------------------------------------------------ preparation


def read_notebook(sub: Submission):
    """The submission as an nbformat-4 notebook, or None with the reason noted."""
    import nbformat

    raw = sub.source.read_bytes()
    if not raw.strip():
        sub.note("empty file")
        return None
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        sub.note(f"not a notebook: the file is not valid JSON ({exc.msg} at line {exc.lineno})")
        return None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        sub.note("not a notebook: JSON without cells")
        return None
    version = data.get("nbformat")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
        sub.note(f"not a valid notebook ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
        return None
    if version != 4:
        sub.note(f"old notebook format (nbformat {version}); converted to nbformat 4")
    return nb


def _gid(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def rebuild(sub: Submission, nb, release, setup_source: str):
    """The release notebook with the student's answers in it, screened, with the guard first."""
    import nbformat

    student_cells = {}
    for cell in nb.cells:
        gid = _gid(cell)
        if gid and gid not in student_cells:
            student_cells[gid] = cell
    release_ids = [_gid(c) for c in release.cells]
    aliases = module_aliases([setup_source] + [c.source for c in nb.cells if c.cell_type == "code"])
    protected = set(module_aliases([setup_source]))
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        theirs = student_cells.get(gid)
        if meta.get("grade") or meta.get("locked"):
            if theirs is None:
                if meta.get("grade"):
                    sub.note(f"test cell {gid} was deleted; the original was put back")
            elif theirs.get("metadata", {}).get("nbgrader", {}) != meta:
                sub.note(f"test cell {gid} was re-tagged; the original was put back")
            elif theirs.source != cell.source and meta.get("grade"):
                sub.note(f"test cell {gid} was edited; the original was put back")
    # Cells the student added (helpers, scratch work) keep their place after the cell they followed.
    extras: dict[str | None, list] = {}
    anchor = None
    for cell in nb.cells:
        gid = _gid(cell)
        if gid in release_ids:
            anchor = gid
        elif cell.cell_type == "code" and cell.source.strip():
            extras.setdefault(anchor, []).append(cell)
    out = copy.deepcopy(release)
    for cell in out.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and not meta.get("grade") and _gid(cell) in student_cells:
            cell.source = student_cells[_gid(cell)].source
        if meta.get("solution") and cell.cell_type == "code":
            cell.source = _screened(sub, cell.source, _gid(cell), aliases, protected)
    count = 0
    for anchor_id, cells in extras.items():
        new_cells = []
        for cell in cells:
            count += 1
            new_cells.append(nbformat.v4.new_code_cell(
                _screened(sub, cell.source, f"added cell {count}", aliases, protected)))
        ids = [_gid(c) for c in out.cells]
        setup_at = next(i for i, c in enumerate(out.cells) if c.cell_type == "code")
        at = ids.index(anchor_id) + 1 if anchor_id in ids else setup_at + 1  # unanchored: after the setup cell
        out.cells[at:at] = new_cells
    guard = nbformat.v4.new_code_cell(
        "import transformer._grading_guard as _guard\n_guard.install(" + repr(setup_source) + ")")
    out.cells.insert(0, guard)
    return out


def _screened(sub: Submission, source: str, where: str, aliases: set[str], protected: set[str]) -> str:
    new, findings = screen_cell(source, where, aliases, protected)
    for f in findings:
        sub.note(f"tampering: {f.cell} line {f.line} {f.reason}; that statement was removed")
    return new


def locked_setup(release) -> str:
    """The locked code cells before the first answer, without IPython magics (the guard runs them)."""
    parts = []
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            break
        if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade"):
            parts.append("\n".join(ln[: len(ln) - len(ln.lstrip())] + "pass" if ln.lstrip().startswith(("%", "!"))
                                    else ln for ln in cell.source.splitlines()))
    return "\n".join(parts)


# --------------------------------------------------------------- nbgrader


def make_api(work: Path, timeout: int):
    """An nbgrader API whose course lives in ``work`` (a fresh gradebook per run)."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    overrides = Config()
    cd = overrides.CourseDirectory
    cd.root = str(ROOT)
    cd.release_directory = str(work / "release")
    cd.submitted_directory = str(work / "submitted")
    cd.autograded_directory = str(work / "autograded")
    cd.feedback_directory = str(work / "feedback")
    cd.db_url = f"sqlite:///{work / 'gradebook.db'}"
    overrides.Execute.timeout = timeout
    config.merge(overrides)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config), cd.db_url


def kernel_killer(nb, timeout: int) -> int | None:
    """Run the notebook cell by cell; the index of the cell during which the kernel died, if any."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    client = NotebookClient(copy.deepcopy(nb), timeout=timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True)
    index = None
    try:
        with client.setup_kernel():
            for index, cell in enumerate(client.nb.cells):
                client.execute_cell(cell, index)
    except DeadKernelError:
        return index
    except Exception:  # noqa: BLE001 - anything else is not a dead kernel
        return None
    return None


def autograde(api, assignment: str, sub: Submission, nb, work: Path, timeout: int) -> bool:
    import nbformat

    dest = work / "submitted" / sub.student / assignment
    dest.mkdir(parents=True, exist_ok=True)
    retried = False
    for _ in range(4):
        nbformat.write(nb, dest / f"{assignment}.ipynb")
        result = api.autograde(assignment, sub.student, force=True, create=True)
        if result["success"]:
            return True
        log = (result.get("error") or "") + (result.get("log") or "")
        if "DeadKernel" not in log and "Kernel died" not in log and "kernel died" not in log:
            sub.note(f"autograding failed: {last_line(result.get('error') or result.get('log'))}")
            return False
        index = kernel_killer(nb, timeout)
        if index is None:
            if not retried:  # a kernel that died of the machine's load, not of the submission: once more
                retried = True
                continue
            sub.note("the kernel died while grading, and the cell that killed it could not be found")
            return False
        cell = nb.cells[index]
        where = _gid(cell) or f"cell {index}"
        sub.note(f"{where} stopped the kernel (os._exit or a crash); it was replaced by an error and the rest graded")
        cell.source = KILLED
    return False


def last_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "unknown error"


def inspect_run(sub: Submission, path: Path, timeout: int) -> None:
    """Read the autograded notebook: guard reports, timeouts, errors in answer cells, floods."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        gid = _gid(cell) or "an added cell"
        meta = cell.metadata.get("nbgrader", {})
        lines = 0
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.output_type == "stream" else ""
            lines += text.count("\n")
            for ln in text.splitlines():
                if ln.startswith(GUARD_MARK):
                    sub.note("tampering: " + ln[len(GUARD_MARK):].strip())
            if "... Output truncated ..." in text:
                lines += FLOOD_LINES
            if out.output_type == "error":
                if out.ename in ("CellTimeoutError", "TimeoutError") or "timed out" in out.evalue:
                    sub.note(f"{gid} ran longer than {timeout} s and was stopped")
                elif meta.get("solution") and cell.source != KILLED and out.ename != "NotImplementedError":
                    sub.note(f"{gid} raised {out.ename}: {out.evalue.splitlines()[0][:100] if out.evalue else ''}")
        if lines >= FLOOD_LINES:
            sub.note(f"{gid} printed more than {FLOOD_LINES} lines; the output was cut")


def problem_page(student: str, assignment: str, problems: list[str], body: str = "") -> str:
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    title = f"{html.escape(assignment)}: {html.escape(student)}"
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>Notes from the grader:</p><ul>{items}</ul>{body}</body></html>")


def add_problems_to_page(page: str, problems: list[str]) -> str:
    """Put the grader's notes at the top of nbgrader's feedback page."""
    if not problems:
        return page
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    box = (f"<div style='border:2px solid #c33;padding:8px;margin:8px'><b>Notes from the grader</b>"
           f"<ul>{items}</ul></div>")
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + box, page, count=1) if "<body" in page else box + page


# ---------------------------------------------------------------- summary


def write_summary(out: Path, rows: list[dict], cells: list[str], max_points: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(rows), 1)
    rates = [sum(float(r[c]) >= max_points[c] for r in rows) / n for c in cells]
    scores = [float(r["score"]) for r in rows]
    total = sum(max_points.values())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.barh(cells[::-1], rates[::-1], color="#4a7fc1")
    ax1.set_xlim(0, 1)
    ax1.set_xlabel("fraction of submissions with full points")
    ax1.set_title("Pass rate per exercise")
    ax2.hist(scores, bins=[x - 0.5 for x in range(int(total) + 2)], color="#4a7fc1", edgecolor="white")
    ax2.set_xlabel(f"score (out of {total:g})")
    ax2.set_ylabel("submissions")
    ax2.set_title(f"Scores of {len(rows)} submission(s)")
    fig.tight_layout()
    fig.savefig(out / "summary.png", dpi=110)
    plt.close(fig)
    print("\npass rate per exercise:")
    for c, rate in zip(cells, rates):
        print(f"  {c:<28} {rate:6.0%}  {'#' * round(20 * rate)}")


# -------------------------------------------------------------------- run


def default_jobs() -> int:
    """One submission per core: each is graded in its own kernel."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def grade_share(assignment: str, work_root: str, out: str, index: int, timeout: int,
                share: list[tuple[Submission, str]], jobs: int) -> list[Submission]:
    """Autograde one worker's submissions in its own course folder and gradebook.

    Runs in a worker process when ``jobs > 1``: the release and the gradebook made by
    ``generate_assignment`` are copied, so workers never share a database file.
    """
    import nbformat
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)
    if jobs > 1:  # kernels side by side: one thread each, or they slow each other down
        os.environ["OMP_NUM_THREADS"] = "1"
    root, out = Path(work_root), Path(out)
    work = root / f"worker{index}"
    shutil.copytree(root / "release", work / "release")
    shutil.copy(root / "gradebook.db", work / "gradebook.db")
    api, db_url = make_api(work, timeout)
    done = []
    for sub, text in share:
        done.append(sub)
        try:
            if not autograde(api, assignment, sub, nbformat.reads(text, as_version=4), work, timeout):
                continue
            inspect_run(sub, work / "autograded" / sub.student / assignment / f"{assignment}.ipynb", timeout)
            with Gradebook(db_url) as gb:
                snb = gb.find_submission_notebook(assignment, assignment, sub.student)
                sub.points = {g.name: g.score for g in snb.grades}
                sub.score = snb.score
            sub.graded = True
            fb = api.generate_feedback(assignment, sub.student, force=True)
        except Exception as exc:  # noqa: BLE001 - one broken submission never stops the others
            sub.note(f"grading failed: {type(exc).__name__}: {last_line(str(exc))}")
            continue
        page = work / "feedback" / sub.student / assignment / f"{assignment}.html"
        if fb["success"] and page.exists():
            text = add_problems_to_page(page.read_text(encoding="utf-8"), sub.problems)
            (out / "feedback" / f"{sub.student}.html").write_text(text, encoding="utf-8")
        else:
            sub.note(f"no feedback page: {last_line(fb.get('error') or fb.get('log'))}")
    return done


def grade(assignment: str, submissions: Path, out_root: Path = ROOT / "grading", timeout: int | None = None,
          jobs: int | None = None) -> int:
    import nbformat
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session noise
    source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    if not source.exists():
        known = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
        print(f"ASSIGNMENT: expected one of {known}, got {assignment!r}", file=sys.stderr)
        return 2
    if not submissions.is_dir():
        print(f"SUBMISSIONS: expected a folder of <student>.ipynb files, got {str(submissions)!r}", file=sys.stderr)
        return 2
    if timeout is None:
        from traitlets.config.loader import PyFileConfigLoader

        timeout = int(PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config().Execute.timeout)

    out = out_root / assignment
    work = out / "_nbgrader"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(out / "feedback", ignore_errors=True)
    (out / "feedback").mkdir(parents=True)
    work.mkdir(parents=True)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

    api, db_url = make_api(work, timeout)
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        print(f"nbgrader could not generate the assignment:\n{result.get('error')}", file=sys.stderr)
        return 2
    release = nbformat.read(work / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    setup_source = locked_setup(release)

    subs = assign_ids(sorted(submissions.glob("*.ipynb")), assignment)
    jobs = max(1, min(jobs or default_jobs(), len(subs)))
    print(f"Grading {len(subs)} submission(s) of {assignment} (each cell stopped after {timeout} s, "
          f"{jobs} at a time) ...")
    started = time.perf_counter()
    ready = []
    for sub in subs:
        nb = read_notebook(sub)
        if nb is not None:
            ready.append((sub, nbformat.writes(rebuild(sub, nb, release, setup_source))))
    shares = [ready[i::jobs] for i in range(jobs)]  # round-robin: each worker gets every jobs-th submission
    if jobs == 1:
        graded = [grade_share(assignment, str(work), str(out), 0, timeout, shares[0], 1)]
    else:
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter: nothing of this process's state
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            futures = [pool.submit(grade_share, assignment, str(work), str(out), i, timeout, share, jobs)
                       for i, share in enumerate(shares)]
            graded = []
            for future in futures:
                try:
                    graded.append(future.result())
                except Exception as exc:  # noqa: BLE001 - a worker that died: its submissions are reported below
                    print(f"a grading worker stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
    by_source = {sub.source: sub for share in graded for sub in share}
    subs = [by_source.get(sub.source, sub) for sub in subs]
    for sub in subs:
        if not sub.graded and not sub.problems:
            sub.note("the grading worker for this file stopped before grading it; grade it again")
    elapsed = time.perf_counter() - started

    with Gradebook(db_url) as gb:
        nb_model = gb.find_notebook(assignment, assignment)
        cells = [c.name for c in nb_model.grade_cells]
        max_points = {c.name: c.max_score for c in nb_model.grade_cells}
        max_score = nb_model.max_score
    rows = []
    for sub in subs:
        row = {"student": sub.student, "file": sub.source.name, "max_score": max_score, "score": sub.score}
        row.update({c: sub.points.get(c, 0.0) for c in cells})
        page = out / "feedback" / f"{sub.student}.html"
        if not page.exists():  # not graded, or nbgrader made no page: the notes are the page
            notes = sub.problems + ([] if sub.graded else ["no exercise could be graded: score 0"])
            page.write_text(problem_page(sub.student, assignment, notes), encoding="utf-8")
        row["problems"] = "; ".join(sub.problems)
        rows.append(row)

    columns = ["student", "score", "max_score", *cells, "problems", "file"]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)

    width = max([len("student"), *(len(r["student"]) for r in rows)])
    print(f"\n{'student':<{width}}  score  problems")
    for r in rows:
        print(f"{r['student']:<{width}}  {r['score']:>2g}/{r['max_score']:g}  {r['problems']}")
    write_summary(out, rows, cells, max_points)
    print(f"\nwrote {out / 'grades.csv'}, {out / 'summary.png'} and {len(rows)} page(s) in {out / 'feedback'}")
    if subs:
        print(f"{elapsed / len(subs):.1f} s per submission")
    attention = [r for r in rows if r["problems"]]
    if attention:
        print(f"{len(attention)} of {len(rows)} submission(s) need your attention: see the 'problems' column")
        return 1
    print("every submission was graded cleanly")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment", help="assignment id, e.g. 04_queries_keys_values")
    parser.add_argument("submissions", type=Path, help="folder of <student>.ipynb files")
    parser.add_argument("--out", type=Path, default=ROOT / "grading", help="where grading/<assignment>/ goes")
    parser.add_argument("--timeout", type=int, help="seconds a cell may run (default: nbgrader_config.py)")
    parser.add_argument("--jobs", type=int, help="submissions graded at once (default: one per core)")
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs: expected a whole number >= 1, got {args.jobs}")
    return grade(args.assignment, args.submissions.resolve(), args.out.resolve(), args.timeout, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
