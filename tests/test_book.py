"""The HTML book builds with warnings as errors, shows the chapters' stored outputs and the API
reference, and never publishes the solutions."""

from __future__ import annotations

import re
import shutil
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
    for page in ("intro", "setup", "notation", "api", "instructors", "glossary", "bibliography", "execution",
                 "accessibility"):
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


# ------------------------------------------------------------------ the book as a reader sees it

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--allow-file-access-from-files", "--hide-scrollbars",
                  # belt and braces: even where no network namespace can be made, nothing leaves the machine
                  "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium() -> list[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("the browser test needs Debian's chromium: `apt-get install chromium` (make test does this as root)")
    offline = ["unshare", "--net", "--"] if subprocess.run(["unshare", "--net", "true"],
                                                           capture_output=True).returncode == 0 else []
    return [*offline, exe, *CHROMIUM_FLAGS]


def browse(url: str, profile: Path, *args: str) -> str:
    proc = subprocess.run([*chromium(), f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args, url],
                          capture_output=True, text=True, timeout=120)
    return proc.stdout


def pages(html: Path) -> list[Path]:
    skip = {"genindex.html", "search.html", "py-modindex.html"}
    return sorted(p for p in html.rglob("*.html") if "_static" not in p.parts and p.name not in skip
                  and p.read_text(encoding="utf-8", errors="replace").count("<meta http-equiv=\"Refresh\"") == 0)


@pytest.fixture(scope="module")
def rendered(html, tmp_path_factory):
    """Every page opened in headless Chromium with no network: its DOM after scripts ran, and a screenshot."""
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    profile = tmp_path_factory.mktemp("chromium")
    doms = {}
    for page in pages(html):
        rel = page.relative_to(html)
        doms[rel] = browse(page.as_uri(), profile, "--dump-dom")
        name = str(rel.with_suffix("")).replace("/", "__")
        browse(page.as_uri(), profile, "--window-size=1280,2400", f"--screenshot={shots / name}.png")
    return doms


def test_every_page_renders_offline_with_a_screenshot(html, rendered):
    assert len(rendered) >= 15
    for rel, dom in rendered.items():
        assert "<article" in dom or "bd-article" in dom, f"{rel} did not render"
        shot = ROOT / "_build" / "screenshots" / (str(rel.with_suffix("")).replace("/", "__") + ".png")
        assert shot.exists() and shot.stat().st_size > 10_000, shot


def test_math_is_typeset_offline(html, rendered):
    for rel, dom in rendered.items():
        source = (html / rel).read_text(encoding="utf-8")
        if 'class="math' in source:
            assert "<mjx-container" in dom, f"{rel}: its math was not typeset (MathJax must load from _static)"
    assert "cdn.jsdelivr" not in (html / "notebooks" / "04_queries_keys_values.html").read_text(encoding="utf-8")


def test_saved_widgets_are_drawn_offline(html, rendered):
    with_state = [rel for rel in rendered if "application/vnd.jupyter.widget-state+json" in
                  (html / rel).read_text(encoding="utf-8")]
    assert len(with_state) >= 5, "at least five chapters show an explorer"
    for rel in with_state:
        assert "jupyter-widgets" in rendered[rel] and "widget-" in rendered[rel], f"{rel}: its explorer was not drawn"


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
