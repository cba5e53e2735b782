"""Every explorer works on the static page of the book: offline, with no kernel.

The book is built, every chapter page opened in Chromium with the network cut, and every control
of every explorer operated as a reader would: the arrow keys on a focused slider handle, another
option in a dropdown, a click on a toggle button. After each move the view the page shows must be
the one stored for the values the controls show (the ``data-k`` of the frame shown lists the grid
points it was drawn for), and its text must be what Python computes for those values: recomputed
here for the explorers a chapter builds from constants alone, read from the notebook's saved
state (the views the chapter's kernel drew) for the others. A control that cannot be precomputed
(free text) must be replaced by a note with launch links.
"""

from __future__ import annotations

import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

import widget_state
from browser import SETTLED, DevTools
from conftest import ROOT
from widget_state import matches

pytestmark = pytest.mark.slow


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def text_of(markup: str) -> str:
    """The text a browser shows for ``markup``, without whitespace (the DOM's textContent, compared)."""
    parser = _Text()
    parser.feed(markup)
    return re.sub(r"\s+", "", "".join(parser.parts))


def notebook_explorers(path) -> list[list[tuple[list[str], str]]]:
    """For each explorer a chapter shows, in order: the stored views of its static part, with their grid points."""
    state, roots = widget_state.read(path)
    return [widget_state.frames(state, widget_state.static_part(state, root)) for root in roots]


def stored_view(frames: list[tuple[list[str], str]], key: list[int]) -> str:
    for patterns, frame in frames:
        if any(matches(p, key) for p in patterns):
            return frame
    raise AssertionError(f"no stored view for {key}")


def python_explorers():
    """The explorers a chapter builds from constants alone, as the chapter builds them: recomputed here."""
    import torch

    from transformer.viz import (
        EmbeddingScaleExplorer,
        HeadCountExplorer,
        OnlineSoftmaxExplorer,
        RecurrenceExplorer,
        SinusoidalExplorer,
    )

    return {
        ("00_why_transformers", 0): lambda: RecurrenceExplorer(n=21, factor=0.9),
        ("02_embeddings", 0): lambda: EmbeddingScaleExplorer(vocab_size=2000, d_models=(64, 256, 1024), n_tokens=16),
        ("03_positional_encodings", 0): lambda: SinusoidalExplorer(d_model=16, n_positions=64, position=5, dimension=0),
        ("05_multi_head_attention", 1): lambda: HeadCountExplorer(d_model=512, seq=10, n_heads=8),
        ("12_from_2017_to_today", 0): lambda: OnlineSoftmaxExplorer(
            torch.tensor([3.0, 1.0, 2.0, 5.0, -1.0, 4.0, 6.5, 0.5]), block=2),
    }


# The state of explorer number N on the page: the index each control shows, in display order (a control
# copied once per branch is found inside the view shown), the grid points of the view shown, its text.
READ = """(() => {
  const ex = document.querySelectorAll('.explorer-static')[__N__];
  const key = [];
  for (let k = 0; ; k++) {
    const c = ex.querySelector('.explorer-c' + k);
    if (!c) break;
    let index;
    if (c.querySelector('select')) index = c.querySelector('select').selectedIndex;
    else if (c.querySelector('.noUi-handle'))
      index = Math.round(Number(c.querySelector('.noUi-handle').getAttribute('aria-valuenow')));
    else index = [...c.querySelectorAll('.widget-toggle-button')].findIndex(b => b.classList.contains('mod-active'));
    key.push(index);
  }
  const frames = ex.querySelectorAll('.explorer-frame');
  return {key, frames: frames.length, k: frames.length ? frames[0].dataset.k : null,
          text: frames.length ? frames[0].textContent : null};
})()"""

# Where to act on control K of explorer N: 'slider' (with its index and maximum), 'select' or 'toggle'
# (with the centre of a button that is not pressed).
LOCATE = """(() => {
  const ex = document.querySelectorAll('.explorer-static')[__N__];
  const c = ex.querySelector('.explorer-c__K__');
  c.scrollIntoView({block: 'center'});
  const centre = el => { const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; };
  const handle = c.querySelector('.noUi-handle');
  if (handle) { handle.focus(); return {kind: 'slider', at: Number(handle.getAttribute('aria-valuenow')),
                                        max: Number(handle.getAttribute('aria-valuemax'))}; }
  const select = c.querySelector('select');
  if (select) { select.focus(); return {kind: 'select', at: select.selectedIndex, n: select.options.length}; }
  const buttons = [...c.querySelectorAll('.widget-toggle-button')];
  const off = buttons.findIndex(b => !b.classList.contains('mod-active'));
  return {kind: 'toggle', at: buttons.findIndex(b => b.classList.contains('mod-active')), to: off,
          xy: centre(buttons[off])};
})()"""


NOTES = """[...document.querySelectorAll('.explorer-static .explorer-kernel-note')]
  .map(n => ({text: n.textContent, links: [...n.querySelectorAll('a')].map(a => a.href)}))"""


def press(browser: DevTools, key: str, code: int) -> None:
    for kind in ("keyDown", "keyUp"):
        browser.send("Input.dispatchKeyEvent", session=True, type=kind, key=key, code=key, windowsVirtualKeyCode=code)


def click(browser: DevTools, x: float, y: float) -> None:
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1)


def operate(browser: DevTools, n: int, k: int) -> str:
    """Move control ``k`` of explorer ``n`` to another value, as a reader would; what was done."""
    where = browser.evaluate(LOCATE.replace("__N__", str(n)).replace("__K__", str(k)))
    if where["kind"] == "slider":
        if where["at"] < where["max"]:
            press(browser, "ArrowRight", 39)
            return "ArrowRight"
        press(browser, "ArrowLeft", 37)
        return "ArrowLeft"
    if where["kind"] == "select":
        if where["at"] < where["n"] - 1:
            press(browser, "ArrowDown", 40)
            return "ArrowDown"
        press(browser, "ArrowUp", 38)
        return "ArrowUp"
    click(browser, *where["xy"])
    return f"click on button {where['to']}"


def settle(browser: DevTools, n: int, timeout: float = 10.0) -> dict:
    """The explorer's state once its view is drawn for the values its controls show."""
    deadline = time.time() + timeout
    while True:
        state = browser.evaluate(READ.replace("__N__", str(n)))
        if state["frames"] == 1 and any(matches(p, state["key"]) for p in state["k"].split()):
            return state
        if time.time() > deadline:
            return state
        time.sleep(0.1)


def operate_all(html: Path, profile: Path, only: tuple[str, ...] = ()) -> tuple[list[dict], dict]:  # noqa: F811
    """Every control of every explorer on every chapter page, operated once: one record per move,
    and the notes that stand for controls the page cannot precompute."""
    makers = python_explorers()
    browser = DevTools(profile)
    records, notes = [], {}
    try:
        for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
            if only and path.stem not in only:
                continue
            page = html / "notebooks" / f"{path.stem}.html"
            stored = notebook_explorers(path)
            if not stored:
                continue
            url = page.as_uri()
            browser.errors()
            browser.send("Page.navigate", session=True, url=url)
            browser.evaluate(SETTLED.replace("__URL__", json.dumps(url)), timeout=60)
            count = browser.evaluate("document.querySelectorAll('.explorer-static').length")
            assert count == len(stored), f"{path.stem}: {count} explorers on the page, {len(stored)} in the notebook"
            notes[path.stem] = browser.evaluate(NOTES)
            for n, frames in enumerate(stored):
                made = makers.get((path.stem, n))
                explorer = made() if made else None
                before = settle(browser, n)
                controls = len(before["key"])
                for k in range(controls):
                    action = operate(browser, n, k)
                    after = settle(browser, n)
                    if explorer is not None:
                        expected, source = explorer.view_at(after["key"]), "Python"
                    else:
                        expected, source = stored_view(frames, after["key"]), "the notebook"
                    records.append({
                        "page": path.stem, "explorer": n, "control": k, "action": action,
                        "moved": after["key"] != before["key"], "changed": after["text"] != before["text"],
                        "routed": after["frames"] == 1 and any(matches(p, after["key"]) for p in after["k"].split()),
                        "right": re.sub(r"\s+", "", after["text"] or "") == text_of(expected), "source": source,
                        "key": after["key"], "errors": browser.errors(),
                    })
                    before = after
    finally:
        browser.close()
    return records, notes


@pytest.fixture(scope="module")
def operated(html, tmp_path_factory):
    return operate_all(html, tmp_path_factory.mktemp("chromium"))


def test_every_control_on_every_chapter_page_shows_the_stored_view(operated):
    records, _ = operated
    assert len({r["page"] for r in records}) >= 11, "chapters 0 to 10 each have an explorer"
    assert len(records) >= 30, f"only {len(records)} controls operated"
    bad = [r for r in records if not (r["moved"] and r["routed"] and r["right"]) or r["errors"]]
    assert not bad, "\n".join(json.dumps(r) for r in bad)
    print(f"\n{len(records)} controls operated on {len({r['page'] for r in records})} pages, "
          f"{sum(r['changed'] for r in records)} changed the view, "
          f"{sum(r['source'] == 'Python' for r in records)} checked against Python")


def test_every_explorer_responds(operated):
    records, _ = operated
    explorers = {(r["page"], r["explorer"]) for r in records}
    still = [e for e in explorers if not any(r["changed"] for r in records if (r["page"], r["explorer"]) == e)]
    assert not still, f"explorers whose view never changed: {still}"


def test_free_text_is_replaced_by_a_note_with_launch_links(operated):
    _, notes = operated
    note = notes["01_tokenization"]
    assert len(note) == 1 and "needs a live kernel: open in Colab or Binder" in note[0]["text"]
    assert any(link.startswith("https://colab.research.google.com/github/") and
               link.endswith("notebooks/01_tokenization.ipynb") for link in note[0]["links"])
    assert any(link.startswith("https://mybinder.org/v2/gh/") for link in note[0]["links"])


def test_every_chapter_page_weighs_at_most_2_mb(html):
    weights = json.loads((html / "page-weights.json").read_text(encoding="utf-8"))
    assert len(weights) >= 11
    heavy = {page: w["total"] for page, w in weights.items() if w["total"] > 2_000_000}
    assert not heavy, heavy


FOCUS = """(() => { const a = document.activeElement;
  const c = a && a.closest('.explorer-static') && a.closest('[class*="explorer-c"]');
  return c ? [...c.classList].filter(x => /^explorer-c[0-9]+$/.test(x))[0] : null; })()"""


def tab_order(html: Path, profile: Path, only: tuple[str, ...] = ()) -> list[dict]:
    """For every menu and slider of every explorer that has a control after it: focus it, change its value
    with the arrow keys, press Tab until the focus leaves it; one record per control, with the control that
    has the focus then."""
    browser = DevTools(profile)
    records = []
    try:
        for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
            if (only and path.stem not in only) or not notebook_explorers(path):
                continue
            url = (html / "notebooks" / f"{path.stem}.html").as_uri()
            browser.send("Page.navigate", session=True, url=url)
            browser.evaluate(SETTLED.replace("__URL__", json.dumps(url)), timeout=60)
            for n in range(browser.evaluate("document.querySelectorAll('.explorer-static').length")):
                controls = len(settle(browser, n)["key"])
                for k in range(controls - 1):
                    where = browser.evaluate(LOCATE.replace("__N__", str(n)).replace("__K__", str(k)))
                    if where["kind"] == "toggle":
                        continue
                    operate(browser, n, k)
                    settle(browser, n)
                    focus = f"explorer-c{k}"
                    for _ in range(3):  # a slider's readout takes the focus first, inside the same control
                        press(browser, "Tab", 9)
                        time.sleep(0.2)
                        focus = browser.evaluate(FOCUS)
                        if focus != f"explorer-c{k}":
                            break
                    records.append({"page": path.stem, "explorer": n, "control": k, "focus": focus,
                                    "expected": f"explorer-c{k + 1}"})
    finally:
        browser.close()
    return records


def test_after_a_change_the_tab_key_reaches_the_next_control(html, tmp_path):
    records = tab_order(html, tmp_path / "chromium")
    assert records, "no menu or slider with a control after it"
    bad = [r for r in records if r["focus"] != r["expected"]]
    assert not bad, "\n".join(json.dumps(r) for r in bad)
