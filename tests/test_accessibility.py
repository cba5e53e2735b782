"""The book meets WCAG 2.1 AA: every built page, opened offline in Chromium after its explorers and
formulas render, has no serious or critical axe-core violation (WCAG 2.0 and 2.1, levels A and AA),
no JavaScript error and no formula in the tab order; every figure in a chapter has alt text written
for it. On each chapter page, once audited, every explorer works with no kernel, by keyboard and mouse,
and the Tab key moves on from a changed control (``tests/explorers.py``). One browser opens each page once
for all of it."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

import pytest

import explorers
from browser import SETTLED, DevTools, pages
from conftest import ROOT

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# MyST-NB's default alt text is the image's path; "a plot" or "figure" says no more
DEFAULT_ALT = re.compile(r"^\s*$|\.(png|jpe?g|gif|svg)\b|^(an? |the )?(plot|figure|image|chart|graph)\.?$", re.I)


AUDIT = """axe.run(document, {runOnly: {type: 'tag', values: %s}, resultTypes: ['violations']}).then(r => ({
  violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                      targets: v.nodes.map(n => n.target.join(' '))})),
  // a formula wider than the column scrolls, and keeps its Tab stop to be scrolled by keyboard
  tabbableMath: [...document.querySelectorAll('mjx-container[tabindex]:not([tabindex^="-"])')]
    .filter(math => math.scrollWidth <= math.clientWidth + 1).length,
  article: !!document.querySelector('article, .bd-article'),
  math: document.querySelectorAll('.math').length, typeset: document.querySelectorAll('mjx-container').length,
  views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
  widgets: document.querySelectorAll('.jupyter-widgets').length,
}))""" % json.dumps(AXE_TAGS)


SHOTS = ROOT / "_build" / "screenshots"


def audit(browser: DevTools, url: str) -> dict:
    """The page at ``url`` opened offline once it has drawn: axe-core's violations, its JavaScript errors, how many
    formulas take a Tab stop, whether it rendered (its article, typeset math, drawn explorers), and a screenshot in
    _build/screenshots."""
    browser.errors()
    browser.send("Page.navigate", session=True, url=url)
    settled = browser.evaluate_on_new_page(SETTLED.replace("__URL__", json.dumps(url)), timeout=60)
    frame = browser.send("Page.getFrameTree", session=True)["frameTree"]["frame"]["id"]
    # axe runs in a world of its own: the page's RequireJS and globals never see it
    world = browser.send("Page.createIsolatedWorld", session=True, frameId=frame, worldName="axe")
    context = world["executionContextId"]
    browser.evaluate(AXE.read_text(encoding="utf-8"), context=context)
    result = browser.evaluate(AUDIT, context=context, timeout=300)
    result["errors"] = browser.errors() + ([] if settled else ["the page did not finish drawing in 30 s"])
    shot = SHOTS / (url.rsplit("/_build/html/", 1)[-1].removesuffix(".html").replace("/", "__") + ".png")
    shot.write_bytes(base64.b64decode(browser.send("Page.captureScreenshot", session=True)["data"]))
    result["screenshot"] = shot.stat().st_size
    return result


@dataclass
class Tour:
    audited: dict = field(default_factory=dict)    # page -> audit()
    operated: list = field(default_factory=list)   # explorers.operate_explorers' records, every chapter
    notes: dict = field(default_factory=dict)      # chapter -> its notes for controls the page cannot precompute
    tabbed: list = field(default_factory=list)     # explorers.tab_order's records, every chapter


@pytest.fixture(scope="module")
def tour(html, tmp_path_factory) -> Tour:
    """Every page opened once, in one browser: audited as it first draws; then, on a chapter page with explorers,
    every control operated and the Tab order followed."""
    if not AXE.exists():
        pytest.fail("axe-core is missing from node_modules/: run `npm ci` (make test does)")
    browser = DevTools(tmp_path_factory.mktemp("chromium"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    seen = Tour()
    try:
        for page in pages(html):
            name = page.relative_to(html).as_posix()
            seen.audited[name] = audit(browser, page.as_uri())
            notebook = ROOT / f"{name.removesuffix('.html')}.ipynb"
            if name.startswith("notebooks/") and explorers.notebook_explorers(notebook):
                records, seen.notes[notebook.stem] = explorers.operate_explorers(browser, notebook)
                seen.operated += records
                seen.tabbed += explorers.tab_order(browser, notebook)
    finally:
        browser.close()
    return seen


@pytest.fixture(scope="module")
def audited(tour) -> dict:
    return tour.audited


@pytest.mark.slow
def test_no_serious_or_critical_wcag_violation(audited):
    assert len(audited) >= 30
    found = [f"{page}: {v['impact']} {v['id']} ({v['help']}) at {v['targets'][:3]}"
             for page, result in audited.items() for v in result["violations"]
             if v["impact"] in ("serious", "critical")]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_every_page_renders_offline_with_a_screenshot(audited):
    assert len(audited) >= 30
    for page, result in audited.items():
        assert result["article"], f"{page} did not render"
        assert result["screenshot"] > 10_000, f"{page}: its screenshot is blank"


@pytest.mark.slow
def test_math_is_typeset_offline(audited, html):
    for page, result in audited.items():
        assert result["typeset"] >= min(result["math"], 1), f"{page}: its math was not typeset (MathJax from _static)"
    assert "cdn.jsdelivr" not in (html / "notebooks" / "04_queries_keys_values.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_saved_widgets_are_drawn_offline(audited):
    with_views = [page for page, result in audited.items() if result["views"]]
    assert len(with_views) >= 5, "at least five chapters show an explorer"
    for page in with_views:
        assert audited[page]["widgets"] >= audited[page]["views"], f"{page}: its explorers were not drawn"


@pytest.mark.slow
def test_no_javascript_error(audited):
    found = [f"{page}: {error}" for page, result in audited.items() for error in result["errors"]]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_formulas_are_not_in_the_tab_order(audited):
    found = {page: result["tabbableMath"] for page, result in audited.items() if result["tabbableMath"]}
    assert not found, f"formulas with a Tab stop (MathJax's inTabOrder must be false): {found}"


# ------------------------------------------------------------------ the explorers, with no kernel

@pytest.mark.slow
def test_every_control_on_every_chapter_page_shows_the_stored_view(tour):
    records = tour.operated
    assert len({r["page"] for r in records}) >= 11, "chapters 0 to 10 each have an explorer"
    assert len(records) >= 30, f"only {len(records)} controls operated"
    bad = [r for r in records if not (r["moved"] and r["routed"] and r["right"]) or r["errors"]]
    assert not bad, "\n".join(json.dumps(r) for r in bad)
    print(f"\n{len(records)} controls operated on {len({r['page'] for r in records})} pages, "
          f"{sum(r['changed'] for r in records)} changed the view, "
          f"{sum(r['source'] == 'Python' for r in records)} checked against Python")


@pytest.mark.slow
def test_every_explorer_responds(tour):
    explorers_seen = {(r["page"], r["explorer"]) for r in tour.operated}
    still = [e for e in explorers_seen
             if not any(r["changed"] for r in tour.operated if (r["page"], r["explorer"]) == e)]
    assert not still, f"explorers whose view never changed: {still}"


@pytest.mark.slow
def test_free_text_is_replaced_by_a_note_with_launch_links(tour):
    note = tour.notes["01_tokenization"]
    assert len(note) == 1 and "needs a live kernel: open in Colab or Binder" in note[0]["text"]
    assert any(link.startswith("https://colab.research.google.com/github/") and
               link.endswith("notebooks/01_tokenization.ipynb") for link in note[0]["links"])
    assert any(link.startswith("https://mybinder.org/v2/gh/") for link in note[0]["links"])


@pytest.mark.slow
def test_after_a_change_the_tab_key_reaches_the_next_control(tour):
    assert tour.tabbed, "no menu or slider with a control after it"
    bad = [r for r in tour.tabbed if r["focus"] != r["expected"]]
    assert not bad, "\n".join(json.dumps(r) for r in bad)


# ------------------------------------------------------------------ alt text, read from the notebooks

def notebook_images():
    """(notebook, cell index, alt text) for every image a notebook's outputs show."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*/*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(nb["cells"]):
            outputs = cell.get("outputs", [])
            if any(mime.startswith("image/") for out in outputs for mime in out.get("data", {})):
                alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
                yield path.relative_to(ROOT).as_posix(), index, alt


def explorer_drawings():
    """(notebook, widget model, tag) for every drawing in a saved explorer view: an <svg>, <img> or <canvas>."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
        for model, widget in state.get("state", {}).items():
            value = widget.get("state", {}).get("value")
            if isinstance(value, str):
                for tag in re.findall(r"<(?:svg|img|canvas)\b[^>]*>", value):
                    yield path.relative_to(ROOT).as_posix(), model, tag


def test_every_figure_has_alt_text_written_for_it():
    images = list(notebook_images())
    assert len(images) >= 25
    bad = [f"{nb} cell {i}: alt={alt!r}" for nb, i, alt in images
           if DEFAULT_ALT.search(alt.strip()) or len(alt.split()) < 8]
    assert not bad, "set the cell's metadata mystnb.image.alt to what the figure shows:\n" + "\n".join(bad)


@pytest.mark.slow
def test_every_image_on_a_page_has_alt_text(html):
    bad = [f"{page.relative_to(html)}: {tag[:120]}" for page in pages(html)
           for tag in re.findall(r"<img\b[^>]*>", page.read_text(encoding="utf-8"))
           if not (alt := re.search(r'\balt="([^"]*)"', tag)) or DEFAULT_ALT.search(alt.group(1))]
    assert not bad, "\n".join(bad)


def test_every_explorer_drawing_has_a_name():
    bad = [f"{nb} {model}: {tag}" for nb, model, tag in explorer_drawings()
           if not (re.search(r"""\brole=["']img["']""", tag) and re.search(r"""\baria-label=(["'])[^"']{20,}\1""", tag))
           and not re.search(r"""\balt=(["'])[^"']{20,}\1""", tag)]
    assert not bad, "give every drawing role=\"img\" and an aria-label that says what it shows:\n" + "\n".join(bad)
