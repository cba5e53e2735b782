"""The HTML book builds with warnings as errors, shows the chapters' stored outputs and the API
reference, and never publishes the solutions."""

from __future__ import annotations

import json
import re

import pytest

from browser import browse
from conftest import ROOT

pytestmark = pytest.mark.slow


def test_index_exists(html):
    assert (html / "index.html").exists()
    for page in ("intro", "setup", "notation", "api", "architecture", "instructors", "glossary", "bibliography",
                 "execution", "accessibility"):
        assert (html / "book" / f"{page}.html").exists(), page


def test_bibliography_lists_the_references(html):
    page = (html / "book" / "bibliography.html").read_text(encoding="utf-8").lower()
    for title in ("Attention Is All You Need", "RoFormer", "BERT", "Generative Pre-Training", "Few-Shot Learners",
                  "16x16 Words", "Layer Normalization", "Speech and Language Processing"):
        assert title.lower() in page, title


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


def test_architecture_page_draws_the_package_from_its_imports(html):
    page = (html / "book" / "architecture.html").read_text(encoding="utf-8")
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "role='img'" in svg and "aria-label='The transformer package in layers" in svg
    for module in ("tokenization", "attention", "multihead", "blocks", "model", "viz", "checks"):
        assert f">{module}</text>" in svg, module
    assert "<table class='architecture-table'>" in page


def test_api_reference_is_built_from_docstrings(html):
    page = (html / "book" / "api.html").read_text(encoding="utf-8")
    for name in ("scaled_dot_product_attention", "causal_mask", "MultiHeadAttention", "sinusoidal_encoding",
                 "EncoderDecoder", "TransformerConfig"):
        assert 'id="transformer.' in page and name in page, name


def test_solutions_are_never_published(html):
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, page
    assert not (html / "solutions").exists()


# ------------------------------------------------------------------ the book as a reader sees it

def test_search_works_offline(html, tmp_path):
    dom = browse((html / "search.html").as_uri() + "?q=attention", tmp_path / "profile", "--dump-dom")
    results = re.search(r'<ul class="search">(.*?)</ul>', dom, re.S)
    assert results and results.group(1).count("<li") >= 3, "searching for 'attention' finds pages"


def test_no_local_link_or_image_is_broken(html):
    broken = []
    for page in html.rglob("*.html"):
        if "_static" in page.parts:
            continue  # theme templates, not pages
        text = page.read_text(encoding="utf-8", errors="replace")
        for target in re.findall(r'(?:href|src)="([^"#?]+)', text):
            if re.match(r"^[a-z]+:", target) or target.startswith("//"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(html)} -> {target}")
    assert not broken, broken[:20]


def test_launch_and_download_buttons(html):
    page = (html / "notebooks" / "04_queries_keys_values.html").read_text(encoding="utf-8")
    assert "colab.research.google.com/github/" in page
    assert "mybinder.org/v2/gh/" in page
    assert "hub/user-redirect/git-pull" in page
    assert "04_queries_keys_values.ipynb" in page and "download" in page.lower()
    assert "github.com/transformer-book/transformer-book" in page


def test_every_chapter_page_weighs_at_most_2_mb(html):
    weights = json.loads((html / "page-weights.json").read_text(encoding="utf-8"))
    assert len(weights) >= 11
    heavy = {page: w["total"] for page, w in weights.items() if w["total"] > 2_000_000}
    assert not heavy, heavy
