"""Whole-project timings for ``make bench``: the book build, strict nbval on the chapters, grading a
batch of submissions with and without the sandbox, the kernel's recorder of forbidden calls, and the chapter 10
recipe's time to 98 %.

Each returns one row of the results table (see :mod:`benchmarks.bench`).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import transformer as T
from layout import nbmeta
from layout.env import venv_env
from layout.paths import ROOT


def timed(cmd: list[str], **kw) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, **kw)
    return time.perf_counter() - t


def bench_book() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        s = timed([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", tmp])
    return {"name": "book-build", "ours_s": s, "reference": "target 60 s", "reference_s": 60.0, "ratio": s / 60.0}


def bench_nbval(runs: int = 3) -> dict:
    """Strict nbval over the chapters and solutions exactly as ``make test`` runs it (``make nbval``: its workers,
    threads and wait policy), ``runs`` times: the fastest and the median."""
    import statistics

    times = [timed(["make", "--no-print-directory", "nbval"]) for _ in range(runs)]
    best, median = min(times), statistics.median(times)
    return {"name": "notebooks-nbval", "ours_s": best, "reference": f"target 240 s; make nbval, {runs} runs: fastest "
            f"{best:.0f} s, median {median:.0f} s", "reference_s": 240.0, "ratio": best / 240.0, "median_s": median}


def _bare_kernel(box: Path) -> dict:
    """The floor of one submission: a sandboxed kernel started in its box, ``import torch`` done, stopped."""
    from grader.running import sandbox
    from grader.running.kernel import Kernel

    sandbox.give(box / "out")
    kernel = Kernel(box)
    try:
        kernel.start()
        kernel.execute("import torch", 60)
    finally:
        kernel.stop()
    return {}


def grading_floor(n: int, jobs: int = 2) -> float:
    """Seconds per submission of ``n`` bare kernels (:func:`_bare_kernel`) on ``jobs`` grading workers: what no
    grading of a notebook that imports PyTorch can go below."""
    from grader.running import workers

    lost = []
    t = time.perf_counter()
    workers.run_all([(i, {}) for i in range(n)], _bare_kernel, jobs, lambda key, result: None,
                    lambda key, why: lost.append(why))
    if lost:
        raise RuntimeError(f"the floor's kernels failed: {lost[0]}")
    return (time.perf_counter() - t) / n


def bench_grading(n: int = 300, bare: int = 40, floor: int = 60) -> dict:
    """Seconds per submission, 2 jobs, grading a class of ``n`` in the sandbox (the whole run / n), beside the floor
    measured in the same run (``floor`` bare sandboxed kernels that import PyTorch, 2 jobs), the same grading without
    the sandbox on ``bare`` of them, and how far the progress bar's estimate of the time left was off."""
    import json

    import nbformat

    a = "04_queries_keys_values"
    with tempfile.TemporaryDirectory() as tmp:
        subs, few = Path(tmp) / "subs", Path(tmp) / "few"
        subs.mkdir()
        few.mkdir()
        for i in range(n):
            nbformat.write(nbmeta.submission(a, solved=i % 2 == 0), subs / f"s{i:03d}.ipynb")
            if i < bare:
                nbformat.write(nbmeta.submission(a, solved=i % 2 == 0), few / f"s{i:03d}.ipynb")
        env = venv_env()
        seconds = {}
        floor_s = grading_floor(floor)
        for unsafe, folder in (("1", few), ("0", subs)):  # without the sandbox, then the class with it
            cmd = [sys.executable, "-m", "grader", a, str(folder), "--out", str(Path(tmp) / unsafe), "--jobs", "2"]
            seconds[unsafe] = timed(cmd, env=dict(env, UNSAFE_NO_SANDBOX=unsafe)) / len(list(folder.iterdir()))
        run = json.loads((Path(tmp) / "0" / a / "run.json").read_text())
    errors = ", ".join(f"{k} {v:+.0%}" for k, v in run.get("estimate_error", {}).items())
    ours, unsandboxed = seconds["0"], seconds["1"]
    return {"name": "grade-per-submission", "ours_s": ours, "reference": f"target 1.5 s (2 jobs, a class of {n}, "
            f"whole run / {n}) and 1.2x the floor, {floor_s:.2f} s (a bare sandboxed kernel that imports PyTorch, 2 "
            f"jobs); without the sandbox {unsandboxed:.2f} s (a class of {bare}, whole run / {bare}); the estimate of "
            f"the time left was off by {errors or 'n/a'} (at 25/50/75 % of the run)", "reference_s": floor_s,
            "ratio": ours / floor_s, "floor_s": floor_s, "unsandboxed_s": unsandboxed,
            "estimate_error": run.get("estimate_error", {})}


def bench_capstone(steps: int = 400) -> dict:
    """Seconds the chapter 10 recipe trains before held-out exact match is at least 98%.

    The recipe's one run of ``steps`` steps is timed, then checked: the time is an
    upper bound on the time to 98% (NaN if the run does not get there).
    """
    from transformer.data import Corpus
    from transformer.train import exact_match, fit

    corpus = Corpus(held_out=0.1, seed=0)
    torch.manual_seed(0)
    cfg = T.TransformerConfig(vocab_size=len(corpus.tgt.vocab), src_vocab_size=len(corpus.src.vocab), d_model=64,
                              n_heads=4, d_ff=128, n_layers=2, dropout=0.0, max_len=16)
    model = T.EncoderDecoder(cfg)
    t = time.perf_counter()
    fit(model, corpus.batches(64, torch.Generator().manual_seed(0)), steps=steps, lr=1e-3, warmup=100,
        label_smoothing=0.1)
    seconds = time.perf_counter() - t
    accuracy = exact_match(model, corpus, corpus.held_out)
    if accuracy < 0.98:
        seconds = float("nan")
    return {"name": "capstone-time-to-98", "ours_s": seconds, "reference": f"target 60 s; {steps} steps, "
            f"held-out exact match {accuracy:.1%}", "reference_s": 60.0, "ratio": seconds / 60.0}


def bench_recorder(repeats: int) -> dict:
    """The kernel's recorder of forbidden calls (``grader/kernel_side/forbidden_calls.py``) around the calls the hidden
    tests of exercise 4.2 make, which forbids ``F.scaled_dot_product_attention`` and the package (the profile hook and
    PyTorch's function mode on): an answer written as the solution is, on hidden-test sizes, with and without it."""
    import math

    from grader.kernel_side.forbidden_calls import recording

    from .timing import interleaved

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g, dtype=torch.float64) for _ in range(3))  # (batch, heads, seq, d)
    mask = torch.rand(2, 1, 6, 6, generator=g) > 0.3

    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, d) @ (..., d, T_k) -> (..., T_q, T_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    def plain():
        for _ in range(50):
            attention(q, k, v, mask)

    def recorded():
        with recording(("torch.nn.functional.scaled_dot_product_attention", "transformer")):
            plain()

    ours, ref = interleaved(recorded, plain, repeats)
    return {"name": "forbidden-recorder", "ours_s": ours, "reference": "the same 50 calls without the recorder",
            "reference_s": ref, "ratio": ours / ref}


def bench_cluster(n: int = 300, rounds: int = 2) -> dict:
    """Seconds per submission grading a class of ``n`` through a dask cluster of two worker processes of one thread on
    this machine (``--cluster``, ``distributed.LocalCluster``), beside the same class graded here with ``--jobs 2``:
    the cluster's overhead, as a ratio. The two alternate, ``rounds`` times each; the fastest of each counts."""
    import nbformat
    from distributed import LocalCluster

    a = "04_queries_keys_values"
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                            dashboard_address=None) as cluster:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        for i in range(n):
            nbformat.write(nbmeta.submission(a, solved=i % 2 == 0), subs / f"s{i:03d}.ipynb")
        cmd = [sys.executable, "-m", "grader", a, str(subs), "--seed", "0", "--quiet", "--out"]
        sides = {"local": ["--jobs", "2"], "cluster": ["--cluster", cluster.scheduler_address]}
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(rounds):
            for side, more in sides.items():
                times[side].append(timed([*cmd, str(Path(tmp) / side), *more], env=venv_env()) / n)
        same = len({(Path(tmp) / side / a / "grades.csv").read_bytes() for side in sides}) == 1
    local, there = min(times["local"]), min(times["cluster"])
    return {"name": "grade-cluster", "ours_s": there, "reference": f"--jobs 2 on this machine (a class of {n}, whole "
            f"run / {n}, the fastest of {rounds} alternating runs each; the cluster's first run also imports PyTorch "
            f"in its workers); grades.csv {'the same' if same else 'DIFFERENT'}", "reference_s": local,
            "ratio": there / local, "same_grades": same, "runs_s": times}
