"""The HTML book builds with warnings as errors, shows the chapters' stored outputs and the API
reference, and never publishes the solutions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, venv_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", str(ROOT), "--path-output", str(out), "--warningiserror", "--keep-going"],
                          cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out / "_build" / "html"


def test_index_exists(html):
    assert (html / "index.html").exists()
    for page in ("intro", "setup", "notation", "api", "instructors", "glossary", "bibliography", "execution"):
        assert (html / "book" / f"{page}.html").exists(), page


def test_bibliography_lists_the_references(html):
    page = (html / "book" / "bibliography.html").read_text(encoding="utf-8")
    for title in ("Attention Is All You Need", "RoFormer", "BERT", "Generative Pre-Training", "Few-Shot Learners",
                  "16x16 Words", "Layer Normalization", "Speech and Language Processing"):
        assert title in page, title


def test_execution_status_lists_every_chapter(html):
    page = (html / "book" / "execution.html").read_text(encoding="utf-8")
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{nb.name}" in page, nb.name


def test_chapter_4_renders_stored_outputs(html):
    page = (html / "notebooks" / "04_queries_keys_values.html").read_text(encoding="utf-8")
    assert "Queries, keys and values" in page
    assert "<img" in page, "the chapter's figures are rendered from stored outputs"
    assert "cell_output" in page
    assert "application/vnd.jupyter.widget-state+json" in page, "saved widget state is embedded"


def test_api_reference_is_built_from_docstrings(html):
    page = (html / "book" / "api.html").read_text(encoding="utf-8")
    for name in ("scaled_dot_product_attention", "causal_mask", "MultiHeadAttention", "sinusoidal_encoding",
                 "EncoderDecoder", "TransformerConfig"):
        assert f'id="transformer.' in page and name in page, name


def test_solutions_are_never_published(html):
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, page
    assert not (html / "solutions").exists()
