"""`python -m grader` against a hostile class: one grading run, honest classmates beside submissions
that attack the grader, the sandbox and each other.

Each attack is the IPython source of an answer cell (or of a cell added after the answers) in
``tests/hostile/*.ipy`` (``@@NAME@@`` placeholders are filled in here), bounded in time and resources so
that a sandbox that fails cannot hurt the machine or hang the run. The tests check properties of the
run and of the host after it, never a list of patched names:

1. a score is never raised from inside the kernel (tricks on top of a wrong answer still score 4);
2. nothing secret can be read (a submission with no code of its own scores 0);
3. nothing outside the sandbox is written, by the kernel or by the grader on its behalf, and the
   report names the attempt;
4. no connection leaves the sandbox;
5. nothing the kernel started outlives the run;
6. classmates graded at the same time are not harmed, and the run always completes;
7. the feedback pages carry no student markup or script and no hidden test, and the report carries no
   terminal escapes or spreadsheet formulas.

An attack that succeeds would be marked ``xfail(strict=True)`` with the reason, documenting the hole; none is.
"""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from conftest import NO_SCALE, ROOT, make_submission, solution_sources, venv_env

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"
HOSTILE = Path(__file__).parent / "hostile"
FULL, WRONG, NOTHING = 10.0, 4.0, 0.0  # a wrong attention loses exercise 2 (3 points) and exercise 4 (3)
PROCESS_LIMIT = 256                    # grader.running.sandbox.Limits.processes
MEMORY_GIB = 6                         # grader.running.sandbox.Limits.memory_bytes: the bound on all a sandbox holds
ANSWERS = ("ex1_answer", "ex2_answer", "ex3_answer", "ex4_answer")
LOOPS = """import time
def kernel_regression(x, x_train, y_train):
    while True:
        time.sleep(0.05)
"""
# Strings of the hidden tests (grader/hidden/a04.py, and the old solution notebook's hidden blocks).
HIDDEN = ("manual_seed(2024)", "manual_seed(77)", "scaled_dot_product_attention(", "BEGIN HIDDEN TESTS")

# The grader under test, run from `cwd` with `env` added; `repo` and `home` are where it would write
# if it let a kernel out (to compare with another grader, replace this dict).
GRADER = {"argv": [sys.executable, "-m", "grader"], "cwd": ROOT, "env": {}, "repo": ROOT, "home": Path.home()}


# Every cell with an attack starts with a shell line, which makes the static reading (grader/judging/forbidden.py) flag
# the cell as not plain Python: a flag, never a stop. The sandbox is what must hold, not a screen that reads the code.
SHELL = "!true\n"


def attack(name: str) -> str:
    return (HOSTILE / f"{name}.ipy").read_text(encoding="utf-8")


@dataclass
class Sub:
    answers: dict[str, str] = field(default_factory=dict)   # answer cell -> source
    added: list[str] = field(default_factory=list)           # cells added after the last answer
    solved: bool = True                                      # the other answers are the solutions
    score: float | None = FULL                               # the honest score (None: not checked)


def _solved(cell: str, name: str) -> dict[str, str]:
    """The right answer in ``cell``, then the attack."""
    return {cell: SHELL + solution_sources(A)[cell] + "\n" + attack(name)}


def _wrong(name: str) -> dict[str, str]:
    """The attack, then the wrong attention (no 1/sqrt(d_k)), in exercise 2's cell."""
    return {"ex2_answer": SHELL + attack(name) + "\n" + NO_SCALE}


def _added(name: str) -> list[str]:
    return [SHELL + attack(name)]


# Sorted by name, which is the order the two workers take them in: honest classmates run beside
# the attacks that could harm them.
SUBMISSIONS = {
    "01_slow_honest": Sub({cell: attack("slow_honest") + "\n" + solution_sources(A)[cell] for cell in ANSWERS}),
    "02_cpu_hog": Sub(_solved("ex1_answer", "cpu"), added=["_stay()\n"] * 3, score=None),
    "03_honest": Sub(),
    "04_fork_bomb": Sub(added=_added("forkbomb")),
    "05_kill": Sub(added=_added("kill")),
    "06_honest": Sub(),
    "07_sabotage": Sub(_solved("ex1_answer", "sabotage")),
    "08_memory_hog": Sub(added=_added("memory_map") + _added("memory")),
    "09_honest": Sub(),
    "10_wrong": Sub({"ex2_answer": NO_SCALE}, score=WRONG),
    "11_patch": Sub(_wrong("patch"), score=WRONG),
    "12_liar": Sub({"ex2_answer": SHELL + attack("liar")}, score=WRONG),
    "13_ipython_hooks": Sub(_wrong("ipython_hooks"), score=WRONG),
    "14_fake_output": Sub(_wrong("fake_output"), score=WRONG),
    "15_thief": Sub({cell: SHELL + attack("thief") for cell in ANSWERS}, solved=False, score=NOTHING),
    "16_writer": Sub(added=_added("writer")),
    "17_blind_writer": Sub(added=_added("blind_writer")),
    "18_symlinks": Sub(added=_added("symlinks"), score=None),
    "19_network": Sub(added=_added("network")),
    "20_daemon": Sub(added=_added("daemon")),
    "21_fifo": Sub(added=_added("fifo"), score=None),
    "22_xss": Sub({"ex2_answer": SHELL + attack("leak"), **_solved("ex4_answer", "xss_raise")},
                  added=_added("xss"), score=FULL - 3),
    # crashes, a loop and a flood: they lose what they broke, and the report says why
    "23_loops": Sub({"ex3_answer": LOOPS}, score=FULL - 2),
    "24_exits": Sub({"ex3_answer": "import os\nos._exit(3)\n"}, score=FULL - 2),
    "25_raises": Sub({"ex1_answer": "1 / 0\n"}, score=FULL - 2),
    "26_floods": Sub({"ex1_answer": "flying = [0.6088, 0.1956]\nfor _ in range(50000):\n    print('spam')\n"}),
}
REASONS = {"05_kill": "stopped the kernel", "23_loops": "ran longer than 10 s",
           "24_exits": "ex3_answer stopped the kernel", "25_raises": "ex1_answer raised ZeroDivisionError",
           "26_floods": "printed more than"}
HONEST = [n for n in SUBMISSIONS if n.endswith("_honest")]
SCORE_RAISE = ["11_patch", "12_liar", "13_ipython_hooks", "14_fake_output"]


# ------------------------------------------------------------------------------------ the host side


class Listeners:
    """A TCP and a UDP socket on 127.0.0.1 and an abstract unix socket; what reached them."""

    def __init__(self, marker: str):
        self.got: list[str] = []
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(f"\0{marker}-abstract")
        self.unix.listen()
        self.stop = threading.Event()
        for sock, kind in ((self.tcp, "tcp"), (self.udp, "udp"), (self.unix, "unix")):
            sock.settimeout(0.2)
            threading.Thread(target=self._serve, args=(sock, kind), daemon=True).start()

    def _serve(self, sock, kind: str) -> None:
        while not self.stop.is_set():
            try:
                if kind == "udp":
                    data, _ = sock.recvfrom(4096)
                    self.got.append(f"udp: {data[:60]!r}")
                else:
                    conn, _ = sock.accept()
                    self.got.append(f"{kind}: connection")
                    conn.close()
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        time.sleep(0.3)
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


def fifo_valve(marker: str, stop: threading.Event) -> None:
    """Should the fifo attack's kernel die, open its pipe after 20 s, so a blocked grader goes on."""
    seen: dict[str, float] = {}
    while not stop.wait(1):
        for flag in Path("/tmp").glob(f"grader-box-*/fifo-{marker}"):
            pipe = flag.parent / "out" / "ex1_flying_arrows" / "0" / "reply.json"
            if time.monotonic() - seen.setdefault(str(pipe), time.monotonic()) > 20:
                try:
                    os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass


def marked_processes(marker: str) -> list[int]:
    """Processes other than this one with ``marker`` on their command line or in their environment."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if marker.encode() in (p / "cmdline").read_bytes() + (p / "environ").read_bytes():
                found.append(int(p.name))
        except OSError:
            continue
    return found


def write_targets(out: Path) -> dict[str, Path]:
    """Where writer.py writes (host paths), by what it is."""
    repo = Path(GRADER["repo"])
    return {"package": repo / "transformer", "checks": repo / "checks", "venv": Path(sys.prefix), "repo": repo,
            "startup": Path(GRADER["home"]) / ".ipython" / "profile_default" / "startup", "output": out}


def touched_files(out: Path) -> dict[str, Path]:
    """Existing files writer.py sets to time 0, by where they are."""
    repo = Path(GRADER["repo"])
    return {"package": repo / "transformer" / "__init__.py", "checks": repo / "checks" / "__init__.py",
            "venv": Path(sys.prefix) / "pyvenv.cfg",
            "repo": repo / "pyproject.toml", "gradebook": out / "_nbgrader" / "gradebook.db"}


def fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    assert "@@" not in text, re.findall(r"@@\w+@@", text)
    return text


@dataclass
class Run:
    proc: subprocess.CompletedProcess
    seconds: float
    rows: dict[str, dict]
    out: Path
    files: list[str]
    marker: str
    canary: Path
    canary_before: dict[str, bytes]
    net: list[str]
    leftovers: list[int]
    csv_at_exit: bytes
    csv_later: bytes

    def page(self, name: str) -> str:
        return (self.out / "feedback" / f"{name}.html").read_text(encoding="utf-8")

    def printed(self, name: str, tag: str) -> list[str]:
        """What the submission printed after ``TAG-<marker>:`` (its source shows the tag, never this)."""
        return re.findall(rf"{tag}-{self.marker}: (\S+)", self.page(name))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    marker = f"hx{uuid.uuid4().hex[:12]}"
    subs = tmp_path_factory.mktemp("hostile-submissions")
    out_root = tmp_path_factory.mktemp(f"grading-{marker}")
    out = out_root / A
    canary = tmp_path_factory.mktemp("canary")  # host files only the symlink attack points at
    (canary / "victim.txt").write_text("the grader must not write here\n")
    (canary / "folder").mkdir()
    (canary / "runtime").mkdir()
    for name in ("kernel.json", "k-1", "k-2", "k-3"):
        (canary / "runtime" / name).write_text(f"{name}: the grader must not delete this\n")
    canary_before = {str(p.relative_to(canary)): p.read_bytes() for p in canary.rglob("*") if p.is_file()}
    net = Listeners(marker)
    values = {"MARKER": marker, "OUT": str(out), "CANARY": str(canary), "TCP_PORT": str(net.tcp.getsockname()[1]),
              "UDP_PORT": str(net.udp.getsockname()[1])}
    for name, sub in SUBMISSIONS.items():
        nb = make_submission(A, {cell: fill(src, values) for cell, src in sub.answers.items()}, solved=sub.solved)
        nb.cells += [nbformat.v4.new_code_cell(fill(src, values)) for src in sub.added]
        nbformat.write(nb, subs / f"{name}.ipynb")
    files = sorted(p.name for p in subs.iterdir())
    env = {**venv_env(), **GRADER["env"], "HOSTILE_RUN": marker}  # the marker reaches every process of the run
    stop = threading.Event()
    threading.Thread(target=fifo_valve, args=(marker, stop), daemon=True).start()
    started = time.monotonic()
    log = out_root / "grader.log"  # a file, not a pipe: a process the kernel left behind cannot hold it open
    with open(log, "w") as output:
        grader = subprocess.Popen([*GRADER["argv"], A, str(subs), "--out", str(out_root), "--timeout", "10",
                                   "--jobs", "2"], cwd=GRADER["cwd"], env=env, stdout=output, stderr=subprocess.STDOUT,
                                  text=True, start_new_session=True)
        try:
            grader.wait(timeout=900)
        except subprocess.TimeoutExpired:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait()
    seconds = time.monotonic() - started
    proc = subprocess.CompletedProcess(grader.args, grader.returncode, log.read_text(errors="replace"), "")
    csv_path = out / "grades.csv"
    csv_at_exit = csv_path.read_bytes() if csv_path.exists() else b""
    time.sleep(4)  # long enough for a surviving daemon to show itself
    leftovers = marked_processes(marker)
    csv_later = csv_path.read_bytes() if csv_path.exists() else b""
    stop.set()
    net.close()
    rows = {}
    if csv_path.exists():
        with open(csv_path, newline="", encoding="utf-8") as f:
            rows = {r["student"]: r for r in csv.DictReader(f) if r.get("student") in SUBMISSIONS}
    yield Run(proc, seconds, rows, out, files, marker, canary, canary_before, list(net.got), leftovers, csv_at_exit,
              csv_later)
    for pid in marked_processes(marker):  # only what this run started
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for where in write_targets(out).values():  # what a grader that let a kernel out may have left
        for path in where.glob(f"*{marker}*") if where.is_dir() else []:
            path.unlink(missing_ok=True) if path.is_file() else shutil.rmtree(path, ignore_errors=True)


def _explain(run: Run) -> str:
    return f"exit {run.proc.returncode} after {run.seconds:.0f} s\n{run.proc.stdout[-5000:]}"


# ------------------------------------------------------------------------ 6. the run and the class


def test_the_run_completes_and_lists_every_submission(graded):
    assert graded.proc.returncode == 0, _explain(graded)
    assert sorted(r["file"] for r in graded.rows.values()) == graded.files, _explain(graded)
    for name in SUBMISSIONS:
        assert (graded.out / "feedback" / f"{name}.html").exists(), name


@pytest.mark.parametrize("name", HONEST)
def test_honest_classmates_get_full_marks(graded, name):
    """Graded two at a time beside the CPU hog, the fork bomb, the killer, the saboteur and the rest."""
    row = graded.rows[name]
    assert float(row["score"]) == FULL, row


@pytest.mark.parametrize("name", [n for n, s in SUBMISSIONS.items() if s.score is not None and n not in HONEST])
def test_every_submission_gets_the_score_its_own_work_deserves(graded, name):
    row = graded.rows[name]
    assert float(row["score"]) == SUBMISSIONS[name].score, row


@pytest.mark.parametrize("name", REASONS)
def test_what_went_wrong_is_in_the_report_and_the_feedback(graded, name):
    row = graded.rows[name]
    assert REASONS[name] in row["problems"], row
    assert REASONS[name] in html.unescape(graded.page(name)), name


def test_a_cell_the_grader_stopped_is_said_to_be_stopped_by_the_grader(graded):
    """The sandbox column names who stopped a loop and at which limit; ipykernel's SIGINT to itself, which is how
    it answers the grader's interrupt, is not the student's signal (it read "sent a signal: (2, 2)")."""
    sandbox = graded.rows["23_loops"]["sandbox"]
    assert "stopped by the grader at the 10 s time limit (" in sandbox, sandbox
    assert "sent a signal" not in sandbox, sandbox


def test_a_fork_bomb_is_held_to_the_process_limit(graded):
    forks = graded.printed("04_fork_bomb", "FORKS")
    assert forks and int(forks[0]) <= PROCESS_LIMIT, forks


def test_one_process_cannot_take_more_than_the_memory_limit(graded):
    assert graded.printed("08_memory_hog", "ONE") == ["refused"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the bound on a sandbox's whole memory is a control group (root)")
def test_a_submission_cannot_hold_memory_past_its_limits(graded):
    """In-memory files (memfd) are outside each process's address space; the sandbox's memory group bounds them."""
    held = graded.printed("08_memory_hog", "HELD")
    assert not held or float(held[0]) <= MEMORY_GIB, held       # stopped (the kernel is killed), or within the bound


def test_the_grader_never_waits_on_a_pipe_the_kernel_planted(graded):
    assert f"FIFO-READER-{graded.marker}" not in graded.rows["21_fifo"].get("sandbox", "")


# ------------------------------------------------------------------- 1. scores raised from inside


@pytest.mark.parametrize("name", SCORE_RAISE)
def test_tricks_in_the_kernel_never_raise_a_score(graded, name):
    assert float(graded.rows[name]["score"]) <= float(graded.rows["10_wrong"]["score"]) == WRONG


def test_nothing_the_kernel_prints_reaches_the_report(graded):
    row = graded.rows["14_fake_output"]
    for column in ("problems", "sandbox"):
        assert f"printed-{graded.marker}" not in row.get(column, ""), (column, row)


def test_the_kernel_cannot_write_the_report(graded):
    """Entries added to the kernel's record in memory do not reach the report (it is written as it happens;
    the kernel could still write the file itself: the instructors' guide says the column can be forged)."""
    assert f"forged-{graded.marker}" not in graded.rows["14_fake_output"].get("sandbox", "")


# ------------------------------------------------------------------------------------ 2. key theft


def test_no_secret_can_be_read_from_the_sandbox(graded):
    stolen = re.findall(rf"STOLEN-{graded.marker} (/\S+)", graded.page("15_thief"))
    assert stolen == []
    assert float(graded.rows["15_thief"]["score"]) == NOTHING


# -------------------------------------------------------------------------------- 3. writes outside


def test_nothing_outside_the_sandbox_is_written(graded):
    new = {what: sorted(p.name for p in where.glob(f"*{graded.marker}*"))
           for what, where in write_targets(graded.out).items() if where.is_dir()}
    assert not any(new.values()), new
    touched = {what: p for what, p in touched_files(graded.out).items() if p.exists() and p.stat().st_mtime == 0}
    assert not touched, touched


def test_the_report_names_writes_outside(graded):
    sandbox = graded.rows["16_writer"].get("sandbox", "")
    assert "write outside" in sandbox and f"_hostile_{graded.marker}" in sandbox, sandbox


def test_the_report_names_writes_outside_the_kernel_hid(graded):
    """Swapping the kernel's record in memory does not hide a write: each entry is on file when it happens."""
    assert f"_blind_{graded.marker}" in graded.rows["17_blind_writer"].get("sandbox", "")


def _canary(run: Run) -> dict[str, bytes]:
    return {str(p.relative_to(run.canary)): p.read_bytes() for p in run.canary.rglob("*") if p.is_file()}


def test_the_grader_writes_nothing_through_links_the_kernel_planted(graded):
    now = _canary(graded)
    assert now.get("victim.txt") == graded.canary_before["victim.txt"]
    assert not any(k.startswith("folder/") for k in now), sorted(now)


def test_the_grader_deletes_nothing_through_links_the_kernel_planted(graded):
    now = _canary(graded)
    assert {k: v for k, v in now.items() if k.startswith("runtime/")} == \
        {k: v for k, v in graded.canary_before.items() if k.startswith("runtime/")}


# ------------------------------------------------------------------------------------- 4. network


def test_no_connection_leaves_the_sandbox(graded):
    assert graded.net == []
    assert "network" in graded.rows["19_network"].get("sandbox", ""), graded.rows["19_network"]


# -------------------------------------------------------------------------------- 5. after the run


def test_nothing_the_kernel_started_outlives_the_run(graded):
    alive = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:200] for pid in graded.leftovers
             if Path(f"/proc/{pid}").exists()}
    assert not alive, alive
    assert graded.csv_at_exit and graded.csv_later == graded.csv_at_exit
    assert f"{graded.marker}-daemon".encode() not in graded.csv_later


# ---------------------------------------------------------------------------------- 7. feedback


def test_no_student_markup_reaches_the_feedback_page(graded):
    page = graded.page("22_xss")
    assert graded.marker in page  # the payloads are there, as text
    in_markup = re.findall(rf"<[^<>]*{graded.marker}[^<>]*>", page)
    assert in_markup == [], in_markup
    in_script = re.findall(rf"<script[^>]*>[^<]*{graded.marker}", page, flags=re.IGNORECASE)
    assert in_script == [], in_script


def test_no_feedback_page_shows_a_hidden_test(graded):
    for name in SUBMISSIONS:
        page = graded.page(name)
        assert not [h for h in HIDDEN if h in page], name


def test_no_feedback_page_shows_a_hidden_input(graded):
    leaked = re.findall(rf"LEAK_{graded.marker}_([\w]+)", graded.page("22_xss"))
    assert leaked == [], f"the first hidden query of exercise 2, {leaked}, reached the student's page"


def test_the_report_carries_no_terminal_escapes(graded):
    for where, text in (("grades.csv", graded.csv_at_exit.decode()), ("stdout", graded.proc.stdout)):
        assert "\x1b" not in text, where


def test_the_report_carries_no_spreadsheet_formulas(graded):
    for row in graded.rows.values():
        for column, value in row.items():
            assert not str(value).startswith(("=", "+", "-", "@")), (row["student"], column, value)
