"""Shared helpers: paths, and student submissions built from the exercise and solution notebooks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from layout import nbmeta
from layout.env import venv_env  # noqa: F401 - the tests' import: subprocesses that find the venv's tools
from layout.nbmeta import solutions as solution_sources  # noqa: F401 - the tests' names for them
from layout.nbmeta import submission as make_submission  # noqa: F401
from layout.paths import ROOT, assignments, notebook_path  # noqa: F401 - ROOT and notebook_path: the tests' import

# Two test workers share two cores: one thread each keeps the small models fast.
torch.set_num_threads(1)

ASSIGNMENTS = assignments()

# A wrong answer to assignment 04's ex2_answer, as a student writes it: attention without the 1/sqrt(d_k).
NO_SCALE = """def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v
"""


def small_translator(corpus, d_model: int = 16, n_heads: int = 2, d_ff: int = 32, n_layers: int = 1,
                     dropout: float = 0.0):
    """An encoder-decoder sized for ``corpus`` (a ``transformer.data.Corpus``), sentences of at most 16 tokens."""
    from transformer import EncoderDecoder, TransformerConfig

    return EncoderDecoder(TransformerConfig(vocab_size=len(corpus.tgt.vocab), src_vocab_size=len(corpus.src.vocab),
                                            d_model=d_model, n_heads=n_heads, d_ff=d_ff, n_layers=n_layers,
                                            dropout=dropout, max_len=16))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def html(tmp_path_factory) -> Path:
    """The book, built with warnings as errors once per test run, or the build kept for the same inputs
    (``tests/book_cache.py``); the test workers of one run share it."""
    from book_cache import built_book

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    shared = tmp_path_factory.getbasetemp().parent / f"book-{run}" if run else tmp_path_factory.mktemp("book")
    shared.mkdir(exist_ok=True)
    jb = Path(sys.executable).parent / "jupyter-book"
    return built_book(ROOT, shared, lambda out: subprocess.run(
        [str(jb), "build", str(ROOT), "--path-output", str(out), "--warningiserror", "--keep-going"], cwd=ROOT,
        env=venv_env(), capture_output=True, text=True, timeout=900))


def setup_source(release) -> str:
    """The locked code cells before the first answer, without IPython magics: the setup a student's kernel runs."""
    parts = []
    for cell in release.cells:
        if nbmeta.is_solution(cell):
            break
        if cell.cell_type == "code" and nbmeta.is_locked(cell) and not nbmeta.is_graded(cell):
            parts.append("\n".join(ln[: len(ln) - len(ln.lstrip())] + "pass" if ln.lstrip().startswith(("%", "!"))
                                    else ln for ln in cell.source.splitlines()))
    return "\n".join(parts)


def graded_class(assignment: str, answers: dict[str, dict[str, str]], tmp_path: Path, *options: str,
                 timeout: float = 600) -> tuple[dict[str, dict], Path]:
    """A class graded by ``python -m grader`` in the sandbox: one submission per student, made of the solution with
    ``answers[student]`` (answer cell -> source) put in. Returns the rows of grades.csv by student, and the folder of
    the assignment's results."""
    import csv

    import nbformat

    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for student, cells in answers.items():
        nbformat.write(make_submission(assignment, cells), subs / f"{student}.ipynb")
    proc = subprocess.run([sys.executable, "-m", "grader", assignment, str(subs), "--out", str(out), "--jobs", "2",
                           *options], cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / assignment / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}, out / assignment
