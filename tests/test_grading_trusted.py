"""`python -m grader` against submissions that attack its trusted side: the collector, the reply decoder,
the judges, the grading processes, the feedback pages and the report.

``tests/test_grading_hostile.py`` attacks the sandbox; here the kernel stays in its sandbox and aims at
what the grader does with what comes out of it (``../shared/design.md``, "Trust model": the trusted side
treats every file, every reply and every box as hostile input). Each fixture is one grading run of one
assignment, ``--jobs 2``, with its attackers beside at least one honest classmate and, where a score is
at stake, the same wrong code without the trick. Four classes:

1. one file must not stop the class: a malformed or oversized submission gets its own row;
2. a forged reply may lower a score, never raise it;
3. the grader's own processes stay within bounds (memory, time, disk), whatever a box or a reply holds,
   and a grading worker that dies costs only its own submission;
4. nothing the student chose (class names, shapes, file names, text for MathJax) reaches a page or the
   CSV as such;
5. classes 2 and 3 at once, in one submission of a probe-heavy assignment, beside honest classmates.

Against the grader of commit 9bbf7c1 every test of this file fails; the numbers seen then are in each
docstring. The attacks' sources are in ``tests/hostile/trusted/``.
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from grader.limits import CELL_TIMEOUT_S

from conftest import ROOT, make_submission, solution_sources, venv_env

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent / "hostile" / "trusted"
GIB, MIB = 2**30, 2**20
RSS_LIMIT = 1.5 * GIB        # no grader process (main or worker; not a kernel) may hold more
RSS_VALVE = 3 * GIB          # the test stops a run whose grader holds this much (it failed already)
DISK_DROP = 300 * MIB        # the host's /tmp may lose at most this much free space during a run
SHELL = "!true\n"            # no static screen can parse a cell that starts with a shell line


def _const(module: str, name: str, default: int) -> int:
    """The grader's own bound if it has one, else the bound the trust model asks for."""
    try:
        return int(getattr(importlib.import_module(module), name))
    except (ImportError, AttributeError, TypeError, ValueError):
        return default


MAX_FILE_BYTES = _const("grader.limits", "MAX_FILE_BYTES", 16 * MIB)
MAX_CELLS = _const("grader.limits", "MAX_CELLS", 500)
MAX_CELL_CHARS = _const("grader.limits", "MAX_CELL_CHARS", 200_000)
MAX_NOTEBOOK_CHARS = _const("grader.limits", "MAX_NOTEBOOK_CHARS", 4_000_000)
MAX_PAGE_BYTES = _const("grader.limits", "MAX_PAGE_BYTES", 16 * MIB)


def source(name: str, **values: str) -> str:
    text = (HERE / f"{name}.ipy").read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    assert "@@" not in text, re.findall(r"@@\w+@@", text)
    return text


def has_budget() -> bool:
    """Whether this grader takes ``--budget S``, a wall-clock budget per submission."""
    out = subprocess.run([sys.executable, "-m", "grader", "--help"], cwd=ROOT, env=venv_env(), capture_output=True,
                         text=True, timeout=120).stdout
    return "--budget" in out


# ------------------------------------------------------------------------------- watching a run


def _procs() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (parent pid, uid, command line) of every process."""
    found = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_bytes()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            found[int(p.name)] = (ppid, p.stat().st_uid, (p / "cmdline").read_bytes())
        except (OSError, ValueError):
            continue
    return found


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _sandboxed(uid: int, cmd: bytes) -> bool:
    return uid >= 61000 or b"bwrap" in cmd or b"ipykernel_launcher" in cmd


class Watch(threading.Thread):
    """Every 0.2 s: the largest resident memory of each grader process (the main process and its workers,
    never a sandbox or a kernel), the free space of the host's /tmp, the boxes the run's kernels use; and,
    if asked, SIGKILL for the grading worker whose sandbox runs a process with ``kill_mark`` on its command line."""

    def __init__(self, root: int, kill_mark: str | None = None):
        super().__init__(daemon=True)
        self.root, self.kill_mark = root, kill_mark
        self.stop = threading.Event()
        self.rss: dict[int, tuple[int, str]] = {}     # pid -> (largest RSS, command line)
        self.free_before = self._free()
        self.free_min = self.free_before
        self.boxes: set[str] = set()                   # /tmp/grader-box-* named on the run's command lines
        self.writable: set[str] = set()                # host folders bound writable into a sandbox
        self.disk_max = 0                              # the most bytes they held on the host's /tmp disk
        self._walked = 0.0
        self.killed: int | None = None
        self.valved = False

    @staticmethod
    def _free() -> int:
        st = os.statvfs("/tmp")
        return st.f_bavail * st.f_frsize

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - a process that went away while it was read
                continue

    def sample(self) -> None:
        procs = _procs()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        tree, todo = {}, [(self.root, False)]
        while todo:
            pid, inside = todo.pop()
            if pid not in procs:
                continue
            ppid, uid, cmd = procs[pid]
            inside = inside or _sandboxed(uid, cmd)
            tree[pid] = inside
            self.boxes |= {m.decode() for m in re.findall(rb"/tmp/grader-box-[A-Za-z0-9_-]+", cmd)}
            args = cmd.split(b"\0")
            self.writable |= {args[i + 1].decode(errors="replace") for i, a in enumerate(args[:-1])
                              if a in (b"--bind", b"--bind-try")}
            todo += [(c, inside) for c in children.get(pid, [])]
        for pid, inside in tree.items():
            if not inside:
                rss = _rss(pid)
                if rss > self.rss.get(pid, (0, ""))[0]:
                    self.rss[pid] = (rss, procs[pid][2][:160].replace(b"\0", b" ").decode(errors="replace"))
                if rss > RSS_VALVE and not self.valved:
                    self.valved = True
                    os.killpg(self.root, signal.SIGKILL)
        self.free_min = min(self.free_min, self._free())
        if time.monotonic() - self._walked > 1:
            self._walked = time.monotonic()
            self.disk_max = max(self.disk_max, self._disk())
        if self.kill_mark and self.killed is None:
            self._kill_worker(procs, tree)

    def _kill_worker(self, procs, tree) -> None:
        marked = [pid for pid in tree if self.kill_mark.encode() in procs[pid][2]]
        for pid in marked:
            while pid in procs and procs[pid][0] != self.root:
                pid = procs[pid][0]
            if pid in procs and pid != self.root and not tree.get(pid, True):
                os.kill(pid, signal.SIGKILL)
                self.killed = pid
                return

    def _disk(self) -> int:
        """Bytes the files under the boxes and writable folders take on the disk that holds /tmp (a tmpfs is memory)."""
        device, total = os.stat("/tmp").st_dev, 0
        tops = self.writable | self.boxes
        for top in [t for t in tops if not any(t.startswith(o + "/") for o in tops)]:  # each file once
            for folder, _, files in os.walk(top):
                for name in files:
                    try:
                        st = os.lstat(os.path.join(folder, name))
                    except OSError:
                        continue
                    if st.st_dev == device:
                        total += st.st_blocks * 512
        return total

    def largest(self) -> tuple[int, str]:
        return max(self.rss.values(), default=(0, ""))


# ------------------------------------------------------------------------------------- a run


@dataclass
class Run:
    returncode: int | None
    output: str
    seconds: float
    capped: bool
    rows: list[dict]
    csv_text: str
    out: Path
    files: list[str]
    marker: str
    watch: Watch
    boxes_left: list[str] = field(default_factory=list)
    bound: float = 0.0                                    # seconds the run may take

    def row(self, student: str) -> dict:
        found = [r for r in self.rows if r.get("student") == student]
        assert found, f"no row for {student}: {self.explain()}"
        return found[0]

    def score(self, student: str) -> float:
        return float(self.row(student)["score"])

    def page(self, student: str) -> str:
        path = self.out / "feedback" / f"{student}.html"
        assert path.exists(), f"no feedback page for {student}: {self.explain()}"
        return path.read_text(encoding="utf-8", errors="replace")

    def explain(self) -> str:
        rss, cmd = self.watch.largest()
        return (f"exit {self.returncode} after {self.seconds:.0f} s{' (stopped by the test)' if self.capped else ''}"
                f"{' (stopped: a grader process held more than 3 GiB)' if self.watch.valved else ''}, largest grader "
                f"process {rss / GIB:.2f} GiB ({cmd[:80]})\n{self.output[-3000:]}")


def grade(tmp: Path, assignment: str, subs: dict[str, object], *, timeout: int = 10, budget: int | None = None,
          cap: float = 300, kill_mark: str | None = None) -> Run:
    """One ``python -m grader`` run over ``subs`` (file name -> notebook, or raw bytes), watched."""
    marker = f"tg{uuid.uuid4().hex[:10]}"
    folder, out_root = tmp / "submissions", tmp / "grading"
    folder.mkdir()
    for name, nb in subs.items():
        path = folder / name
        if isinstance(nb, bytes):
            path.write_bytes(nb)
        else:
            nbformat.write(nb, path)
    argv = [sys.executable, "-m", "grader", assignment, str(folder), "--out", str(out_root), "--timeout",
            str(timeout), "--jobs", "2"]
    if budget is not None and has_budget():
        argv += ["--budget", str(budget)]
    log = tmp / "grader.log"
    env = {**venv_env(), "TRUSTED_RUN": marker}
    started = time.monotonic()
    with open(log, "w") as output:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True)
        watch = Watch(proc.pid, kill_mark)
        watch.start()
        capped = False
        try:
            proc.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            capped = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    seconds = time.monotonic() - started
    time.sleep(0.5)
    watch.stop.set()
    watch.join()
    for pid in _marked(marker):  # what this run left behind (a stopped run's workers and kernels)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    csv_path = out_root / assignment / "grades.csv"
    text = csv_path.read_text(encoding="utf-8") if csv_path.exists() else ""
    rows = list(csv.DictReader(text.splitlines())) if text else []
    left = sorted(b for b in watch.boxes | watch.writable if Path(b).exists())
    run = Run(None if capped or watch.valved else proc.returncode, log.read_text(errors="replace"), seconds,
              capped, rows, text, out_root / assignment, sorted(subs), marker, watch, left)
    for box in left:  # the test's own cleanup, after it was recorded
        shutil.rmtree(box, ignore_errors=True)
    return run


def _marked(marker: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if marker.encode() in (p / "environ").read_bytes():
                    found.append(int(p.name))
            except OSError:
                continue
    return found


def submission(assignment: str, answers: dict[str, str] | None = None, added: list[str] = (), solved: bool = True):
    nb = make_submission(assignment, answers, solved=solved)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in added]
    return nb


def forger(assignment: str) -> str:
    """The assignment's part first (what to record, what to forge), then the hooks that use it."""
    return SHELL + source(f"forge_a{assignment[:2]}") + "\n" + source("forge")


# ------------------------------------------------------------------ 1. one file stops the whole class

A1 = "01_tokenization"


def _honest_plus(cells: list[str] = (), markdown: str | None = None, null_metadata: bool = False):
    nb = submission(A1, added=cells)
    if markdown is not None:
        nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
    if null_metadata:  # valid nbformat: the schema leaves a cell's metadata open
        next(c for c in nb.cells if c.cell_type == "markdown").metadata["nbgrader"] = None
    return nb


OVERSIZED = {  # each over one cap of the trust model, and each otherwise the honest answers
    "02_parse_bomb": "a 4 MB cell, one tuple literal of 2 million items (its parse tree takes gigabytes)",
    "05_large_file": f"a file over {MAX_FILE_BYTES} bytes (one markdown cell)",
    "06_many_cells": f"{MAX_CELLS + 1} added cells",
    "07_long_cell": f"a cell of more than {MAX_CELL_CHARS} characters",
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    subs = {
        "01_honest.ipynb": submission(A1),
        "02_parse_bomb.ipynb": _honest_plus(["x = (" + "0," * 2_000_000 + ")\n"]),
        "03_null_metadata.ipynb": _honest_plus(null_metadata=True),
        "04_minus_signs.ipynb": _honest_plus(["x = " + "-" * 100_000 + "1\n"]),
        "05_large_file.ipynb": _honest_plus(markdown="a" * (MAX_FILE_BYTES + MIB)),
        "06_many_cells.ipynb": _honest_plus(["pass\n"] * (MAX_CELLS + 1)),
        "07_long_cell.ipynb": _honest_plus(["x = 1  # " + "a" * (MAX_CELL_CHARS + 1000) + "\n"]),
        "08_honest.ipynb": submission(A1),
    }
    return grade(tmp_path_factory.mktemp("collect"), A1, subs, timeout=CELL_TIMEOUT_S, cap=480)  # nothing here loops


def test_one_file_never_stops_the_class(collected):
    """Attack: a cell whose ``metadata.nbgrader`` is null (valid nbformat) and an added cell ``x = ----...1`` with
    100 000 minus signs, beside oversized files and two honest classmates.
    Property: the run exits 0 and every file has its own row in grades.csv.
    Old grader (9bbf7c1): exit 1 after 17 s, no grades.csv, no row for anyone (the flag scan's ``ast.parse``
    raises MemoryError on the minus signs, the rebuild AttributeError on the null metadata: both in the
    main process, outside every guard)."""
    assert collected.returncode == 0, collected.explain()
    assert sorted(r["student"] for r in collected.rows) == sorted(Path(f).stem for f in collected.files), \
        collected.explain()


@pytest.mark.parametrize("student", ["01_honest", "08_honest"])
def test_honest_classmates_of_broken_files_get_full_marks(collected, student):
    """Property: the honest classmates of the files above keep full marks, 13 of 13. Old grader: no grades.csv at
    all."""
    assert collected.score(student) == 13.0, collected.explain()


@pytest.mark.parametrize("student", sorted(OVERSIZED))
def test_a_file_over_a_cap_is_reported_in_its_row(collected, student):
    """Attack: a notebook over one of the caps (``OVERSIZED``). Property: its row says what is wrong (a
    non-empty problems column). Old grader: no grades.csv (and no cap: such files were run in full)."""
    assert collected.row(student)["problems"].strip(), (OVERSIZED[student], collected.explain())


def test_one_cell_cannot_make_the_grader_hold_gigabytes(collected):
    """Attack: 02_parse_bomb, a 4 MB cell (within the file cap, over the cell cap) holding one tuple literal
    of 2 million items, read by the grader's own static scan before any sandbox runs.
    Property: no grader process holds more than 1.5 GiB.
    Old grader: the main process reached 2.0 GiB parsing it."""
    rss, cmd = collected.watch.largest()
    assert rss <= RSS_LIMIT, f"{rss / GIB:.2f} GiB in {cmd}"


# ------------------------------------------------------------------------------- 2. forged replies

FORGERIES = {  # assignment: (the answer cell made wrong, how it is wrong)
    "01_tokenization": ("ex3_answer", "merge_pair clears the caller's dict"),
    "07_masking": ("ex6_answer", "masked_attention computed under torch.no_grad"),
    "09_output_head": ("ex3_answer", "greedy_decode appends to the caller's prefix"),
    "10_whole_transformer": ("ex2_answer", "train_step returns a constant loss"),
}


def wrong_answer(assignment: str) -> str:
    """The solution with one mistake that the hidden tests see only through what the probe measured."""
    cell = FORGERIES[assignment][0]
    right = solution_sources(assignment)[cell]
    if assignment == "01_tokenization":
        wrong = right.replace("    return merged", "    words.clear()                 # the caller's dict, emptied\n"
                                                      "    return merged")
    elif assignment == "07_masking":
        body = right.split("### BEGIN SOLUTION\n")[1].split("    ### END SOLUTION")[0]
        wrong = ("import math\nimport torch\n\n\ndef masked_attention(q, k, v, mask):\n    with torch.no_grad():\n"
                 + "".join("    " + ln + "\n" for ln in body.splitlines()))
    elif assignment == "09_output_head":
        wrong = right.replace("ids = list(prefix)", "ids = prefix")
    else:
        wrong = right.replace("return loss.item()", "return 2.5")
    assert wrong != right, assignment
    return wrong


ECHO_FILES = ['=HYPERLINK("http:x","y").ipynb', "@SUM(1).ipynb", "+1.ipynb", "-1.ipynb"]


_FORGED: dict[str, Run] = {}  # one run per assignment, shared by the fixtures below


def forgery_run(assignment: str, tmp_path_factory) -> Run:
    if assignment in _FORGED:
        return _FORGED[assignment]
    cell = FORGERIES[assignment][0]
    wrong = wrong_answer(assignment)
    subs = {"1_honest.ipynb": submission(assignment),
            "2_wrong.ipynb": submission(assignment, {cell: wrong}),
            "3_forger.ipynb": submission(assignment, {cell: wrong}, added=[forger(assignment)])}
    marker = uuid.uuid4().hex[:10]
    if assignment == "07_masking":  # the run that also carries class 4's attacks
        ex1 = solution_sources(assignment)["ex1_answer"]
        subs["4_echo.ipynb"] = submission(assignment, {"ex1_answer": ex1 + f'\nraise ValueError("$\\\\href'
                                                       f'{{javascript:alert(2)}}{{ERR{marker}}}$")\n'},
                                          added=[source("echo", MARKER=marker)])
        subs.update({name: b"" for name in ECHO_FILES})  # empty files: rows of their own, no kernel
    # the forgeries loop nowhere: the cells get the grader's own timeout, so that a busy machine (the CI runs two test
    # workers beside a browser) does not stop an honest cell at the 10 s the endless attacks are given
    run = grade(tmp_path_factory.mktemp(f"forged-{assignment[:2]}"), assignment, subs, timeout=CELL_TIMEOUT_S,
                cap=480)
    run.marker = marker
    _FORGED[assignment] = run
    return run


@pytest.fixture(scope="module", params=sorted(FORGERIES))
def forged(request, tmp_path_factory):
    return request.param, forgery_run(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def echoed(tmp_path_factory):
    """Assignment 07's run, which also carries class 4's attacks."""
    return forgery_run("07_masking", tmp_path_factory)


def test_a_forged_reply_never_raises_a_score(forged):
    """Attack: ``tests/hostile/trusted/forge*.ipy``, a cell added after the answers that rewrites the probes'
    replies on their way out, three ways (each alone raised all four scores below): a profile hook on every
    return in the kernel; json.dump/json.dumps; JSON files written under an answers folder through open(),
    read back and rewritten when closed. On top of a wrong answer whose mistake only the kernel measured:
    01 merge_pair clears the caller's dict (the arguments after the call are restored from copies);
    07 masked_attention under torch.no_grad (the gradients emptied: the old judge walked them with zip);
    09 greedy_decode appends to the caller's prefix (the prefix before the call is reported);
    10 train_step returns a constant loss (the losses emptied, likewise).
    A forger that computes the scored values with a right implementation of its own (the gradients of a
    differentiable copy, the losses recomputed) hands in a right answer through a side door: no grader that runs
    the code in the student's process can tell it from honest work; its dynamic reaches are flagged instead.
    Property: the forger scores no more than the same wrong code without the forger, in the same run.
    Old grader: 01 7 -> 10 of 10, 07 8 -> 11 of 11, 09 7 -> 10 of 10, 10 7 -> 10 of 10."""
    assignment, run = forged
    assert run.returncode == 0, run.explain()
    honest, wrong, forged_score = run.score("1_honest"), run.score("2_wrong"), run.score("3_forger")
    assert honest == float(run.row("1_honest")["max_score"]), (run.row("1_honest")["problems"], run.explain())
    assert forged_score <= wrong, (f"{assignment} ({FORGERIES[assignment][1]}): with the forger {forged_score}, "
                                   f"without {wrong}, honest {honest}")


# ------------------------------------------------------------- 4. what the student chose, echoed


def test_no_class_name_or_shape_the_student_chose_reaches_the_page(echoed):
    """Attack: teacher_forcing returns an object of a class whose name is student text, padding_mask a tensor
    of shape (1, 2, 3, 77713, 1) (``echo.ipy``); only the hidden tests see them.
    Property: neither the name nor the shape is on the student's feedback page or in the CSV.
    Old grader: the page says "got an object of type $\\href{javascript:alert(1)}{CLS...}$" and "got
    (1, 2, 3, 77713, 1)"."""
    run = echoed
    page = run.page("4_echo")
    for chosen in (f"CLS{run.marker}", "77713"):
        assert chosen not in page and chosen not in run.csv_text, chosen


def test_no_exception_text_the_student_chose_reaches_the_csv(echoed):
    """Attack: ex1_answer raises ValueError with TeX that holds a javascript: link.
    Property: the CSV carries none of it (the student's own traceback stays on their page, as their output).
    Old grader: the problems column holds "ex1_answer raised ValueError: $\\href{javascript:alert(2)}{ERR...}$"."""
    run = echoed
    assert f"ERR{run.marker}" not in run.csv_text


def test_no_file_name_becomes_a_spreadsheet_formula(echoed):
    """Attack: submissions named =HYPERLINK("http:x","y").ipynb (a file name holds no slash), @SUM(1).ipynb,
    +1.ipynb and -1.ipynb.
    Property: every one has a row, and no CSV cell starts with = + - @ (a spreadsheet runs those).
    Old grader: the file column holds =HYPERLINK("http:x","y").ipynb as such (and the three others)."""
    run = echoed
    assert run.returncode == 0, run.explain()
    assert len(run.rows) == len(run.files), run.explain()
    formulas = [(r["student"], k, v) for r in run.rows for k, v in r.items() if str(v).startswith(("=", "+", "-", "@"))]
    assert not formulas, formulas


def _boxes(page: str) -> list[str]:
    """The opening tag of each box the grader puts on a page (its verdicts, its notes)."""
    tags = []
    # the template's words, and words of the hidden tests' own (a failing case of exercise 3, a problem of ex1)
    for anchor in ("Hidden tests:", "Notes from the grader", "teacher_forcing(tgt) with random token ids",
                   "ex1_answer raised"):
        for m in re.finditer(re.escape(anchor), page):
            opening = list(re.finditer(r"<div\b[^>]*>", page[:m.start()]))
            tags.append(opening[-1].group(0) if opening else "")
    return tags


def test_every_grader_box_is_ignored_by_mathjax(echoed):
    """Property: every verdict box and notes box carries the class ``mathjax_ignore`` (MathJax 3's; the old
    ``tex2jax_ignore`` is MathJax 2's, which MathJax 3 does not know), so text in them is never typeset.
    Old grader: every box is ``tex2jax_ignore`` only (12 boxes on the echo page, none ignored)."""
    run = echoed
    tags = _boxes(run.page("4_echo"))
    assert tags, "no grader box found on the page"
    assert all(re.search(r"class=['\"][^'\"]*\bmathjax_ignore\b", t) for t in tags), tags


def test_the_page_loads_mathjax_safe_mode(echoed):
    """Property: the page's MathJax configuration loads ``ui/safe`` (which filters \\href and the like).
    Old grader: the configuration loads no extension."""
    run = echoed
    scripts = "".join(re.findall(r"<script\b[^>]*>(.*?)</script>", run.page("4_echo"), flags=re.S))
    assert "ui/safe" in scripts


def test_no_javascript_link_after_typesetting(echoed, tmp_path):
    """Property: the echo page, opened offline in Chromium with its local MathJax, has no javascript: link
    once typeset. Old grader: the notes box's "$\\href{javascript:alert(2)}{ERR...}$" (and the verdict's class
    name) become ``<a href="javascript:...">`` links."""
    run = echoed
    from browser import DevTools
    page = run.out / "feedback" / "4_echo.html"
    if not (run.out / "feedback" / "_static" / "mathjax").is_dir():
        pytest.skip("the book's MathJax is not installed (npm ci)")
    browser = DevTools(tmp_path / "profile")
    try:
        browser.send("Page.navigate", session=True, url=page.as_uri())
        found = browser.evaluate_on_new_page(TYPESET_LINKS.replace("__URL__", json.dumps(page.as_uri())), timeout=90)
    finally:
        browser.close()
    assert found and not found["error"] and found["typeset"], f"MathJax did not typeset the page: {found}"
    assert not found["links"], found["links"]


# Waits for MathJax to typeset the page (30 s at most), then counts what it typeset and lists every href that
# is a javascript: URL; a typesetting that failed (an extension it could not load) says why.
TYPESET_LINKS = """new Promise(done => {
  const start = Date.now();
  const report = error => setTimeout(() => done({
    error: error ? String(error).slice(0, 300) : null,
    typeset: document.querySelectorAll('mjx-container').length,
    links: [...document.querySelectorAll('[href]')].map(e => e.getAttribute('href'))
               .filter(h => /^\\s*javascript:/i.test(h)),
  }), 500);
  const check = () => {
    if (location.href !== __URL__) return setTimeout(check, 100);  // still the page before
    const ready = document.readyState === 'complete' && window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (!ready && Date.now() - start < 30000) return setTimeout(check, 100);
    Promise.resolve(ready).then(() => report(null), report);
  };
  check();
})"""


# ---------------------------------------------------------- 3. the grader's own process can be exhausted

A3 = "07_masking"             # probe-heavy: six grade cells, eleven hidden cases
TIMEOUT3, BUDGET3 = 5, 30      # seconds a cell may run; seconds a submission may take in all
SLOW_CELL = "import time\ntime.sleep(1.5)\n"
FLOOD_CELL = "print('x' * 199_990)\n"   # just below the output kept of one cell


@pytest.fixture(scope="module")
def exhausted(tmp_path_factory):
    mark = f"victim-{uuid.uuid4().hex[:10]}"
    subs = {  # sorted, the order the two workers take them in: the victim and the disk first, honest ones among
        "01_honest.ipynb": submission(A3),
        "02_victim.ipynb": submission(A3, added=[SHELL + source("victim", MARK=mark), SLOW_CELL, SLOW_CELL]),
        "03_fills_disk.ipynb": submission(A3, added=[SHELL + source("fill_disk")]),
        "04_exits.ipynb": submission(A3, added=[SLOW_CELL] * 12 + [SHELL + source("exits")]),
        "05_honest.ipynb": submission(A3),
        "06_array_keys.ipynb": submission(A3, added=[SHELL + source("forge") + source("reply_bomb", KIND="keys")]),
        "07_array_refs.ipynb": submission(A3, added=[SHELL + source("forge") + source("reply_bomb", KIND="refs")]),
        "08_floods.ipynb": submission(A3, added=[FLOOD_CELL] * min(490, MAX_CELLS - len(submission(A3).cells) - 4)),
        "09_flood_cells.ipynb": submission(A3, added=[FLOOD_CELL] * 2000),
        # 5. classes 2 and 3 at once: the forged gradients, a flood and a full disk (and the same wrong code alone)
        "10_everything.ipynb": submission(A3, {"ex6_answer": wrong_answer(A3)},
                                          added=[FLOOD_CELL] * 200 + [SHELL + source("fill_disk"), forger(A3)]),
        "11_wrong.ipynb": submission(A3, {"ex6_answer": wrong_answer(A3)}),
    }
    jobs = 2
    bound = 90 + BUDGET3 * math.ceil(len(subs) / jobs)
    run = grade(tmp_path_factory.mktemp("exhausted"), A3, subs, timeout=TIMEOUT3, budget=BUDGET3, cap=bound + 30,
                kill_mark=mark)
    run.bound = bound
    return run


def test_no_grader_process_holds_more_than_its_bound(exhausted):
    """Attack: replies that cost the decoder (07: one 60 MiB array referenced 30 times in every reply; 06: a
    32 MB array as the key of a dict 400 times), 468 cells each printing 199 990 characters (08) and 2000 such
    cells (09), beside honest classmates.
    Property: no grader process (the main process, its workers; not a sandbox) holds more than 1.5 GiB.
    Old grader: a worker passed 3 GiB decoding the array references, 163 and 175 s into two runs, when the test
    stopped them (on assignment 00, without that submission, the main process reached 3 GiB with the floods)."""
    rss, cmd = exhausted.watch.largest()
    assert rss <= RSS_LIMIT, f"{rss / GIB:.2f} GiB in {cmd}\n{exhausted.explain()}"


def test_a_hostile_class_is_graded_within_its_budget(exhausted):
    """Attack: the replies above, and 04: twelve slow cells, then a kernel that exits whenever the grader runs
    anything more in it (every probe, after every replay).
    Property: the run ends, exit 0, within 90 s plus one budget (--budget 30, where the grader has it; the cell
    time limit is 5 s) per pair of submissions.
    Old grader: no budget; stopped by the test after 163 and 175 s (on assignment 00, 06's replies were still being
    decoded 190 s into the run, and 04 was replayed after each of its deaths in the probes, none counted)."""
    assert exhausted.returncode == 0 and exhausted.seconds <= exhausted.bound, exhausted.explain()


@pytest.mark.parametrize("student", ["01_honest", "05_honest"])
def test_honest_classmates_of_an_exhausting_class_get_full_marks(exhausted, student):
    """Property: graded beside all of the above, an honest classmate keeps 11 of 11. Old grader: no grades.csv
    (the run was stopped)."""
    assert exhausted.score(student) == 11.0, exhausted.explain()


def test_everything_at_once_raises_no_score(exhausted):
    """Attack (classes 2 and 3 at once, beside the rest of this run): 10_everything, the wrong masked_attention
    (under torch.no_grad) with the forger of its gradients, 200 cells of 199 990 characters and the disk filler.
    Property: it scores no more than 11_wrong, the same wrong code alone.
    Old grader: no grades.csv (the run was stopped)."""
    assert exhausted.score("10_everything") <= exhausted.score("11_wrong"), exhausted.explain()


def test_a_submission_cannot_fill_the_disk_behind_its_box(exhausted):
    """Attack: 03 writes 60 MiB files into every writable mount of its sandbox that is not a tmpfs (its
    answers folder and its socket folder, both on the host's /tmp), up to 1 GiB.
    Property: the files in the host folders bound writable into the run's sandboxes never take more than 300 MiB
    of the disk that holds /tmp (sampled every second; the machine's other users make the free space itself
    too noisy to judge by, so it is only reported).
    Old grader: the boxes held 1080 MiB (/tmp lost 1086 MiB) before the test stopped the run."""
    watch = exhausted.watch
    drop = watch.free_before - watch.free_min
    if not watch.writable | watch.boxes:  # no box named on a command line: judge by the free space itself
        assert drop <= DISK_DROP, f"/tmp lost {drop / MIB:.0f} MiB during the run"
    assert watch.disk_max <= DISK_DROP, \
        f"the boxes held {watch.disk_max / MIB:.0f} MiB (and /tmp lost {drop / MIB:.0f} MiB) during the run"


def test_no_box_is_left_behind(exhausted):
    """Property: none of the folders /tmp/grader-box-* the run's sandboxes used is left after it (the test killed
    a grading worker, see below). Old grader: the killed worker's box stayed, with its 1 GiB, until the test
    removed it."""
    assert exhausted.boxes_left == [], exhausted.boxes_left


def test_a_dead_worker_costs_only_its_own_submission(exhausted):
    """Attack: the test SIGKILLs the grading worker (a child of the grader's main process, not a sandbox) that
    grades 02_victim, as soon as that submission's sandbox runs.
    Property: the run exits 0, every file has its row, 02_victim's row names a problem, the honest ones are
    graded. Old grader: the pool broke, so the victim and the submission beside it were started again in a new
    pool, the victim's row silent about the death (read from grade.run_all: the test's valve stopped that run
    first), and the killed worker's box stayed."""
    assert exhausted.watch.killed, "the test found no grading worker to kill"
    assert exhausted.returncode == 0, exhausted.explain()
    assert sorted(r["student"] for r in exhausted.rows) == sorted(Path(f).stem for f in exhausted.files)
    assert exhausted.row("02_victim")["problems"].strip(), exhausted.row("02_victim")


def test_a_page_of_a_flood_stays_small(exhausted):
    """Attack: 08, 468 cells of 199 990 characters each (94 million characters, each cell within the output kept
    per cell, the notebook within the cap on cells).
    Property: its feedback page holds at most MAX_PAGE_BYTES (16 MiB) and at most MAX_NOTEBOOK_CHARS (4 million)
    characters of the notebook's output. Old grader: a page of 92 MiB (490 such cells)."""
    page = exhausted.out / "feedback" / "08_floods.html"
    assert page.exists(), exhausted.explain()
    size = page.stat().st_size
    assert size <= MAX_PAGE_BYTES, f"{size / MIB:.0f} MiB"
    assert page.read_text(encoding="utf-8").count("x" * 1000) * 1000 <= MAX_NOTEBOOK_CHARS
