"""The book's explorers driven on the static page, offline and with no kernel (``tests/test_accessibility.py``
runs them on every chapter page it opens).

Every control of every explorer is operated as a reader would: the arrow keys on a focused slider handle, another
option in a dropdown, a click on a toggle button. After each move the view the page shows must be the one stored for
the values the controls show (the ``data-k`` of the frame shown lists the grid points it was drawn for), and its text
must be what Python computes for those values: recomputed here for the explorers a chapter builds from constants
alone, read from the notebook's saved state (the views the chapter's kernel drew) for the others. A control that
cannot be precomputed (free text) must be replaced by a note with launch links. After a change, the Tab key must
reach the next control.
"""

from __future__ import annotations

import functools
import re
import time
from html.parser import HTMLParser

import widget_state
from browser import DevTools
from widget_state import matches


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


@functools.cache
def notebook_explorers(path) -> list[list[tuple[list[str], str]]]:
    """For each explorer a chapter shows, in order: the stored views of its static part, with their grid points
    (read once per notebook and process; callers only read them)."""
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
        CacheCostExplorer,
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
        ("14_open_models", 0): lambda: CacheCostExplorer(model="Llama 2 7B", kind="multi-head", context=4096),
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


def operate_explorers(browser: DevTools, path) -> tuple[list[dict], list[dict]]:
    """Every control of every explorer on the chapter page open in ``browser`` (that of notebook ``path``, drawn),
    operated once: one record per move, and the notes that stand for controls the page cannot precompute."""
    makers, stored, records = python_explorers(), notebook_explorers(path), []
    count = browser.evaluate("document.querySelectorAll('.explorer-static').length")
    assert count == len(stored), f"{path.stem}: {count} explorers on the page, {len(stored)} in the notebook"
    browser.errors()
    for n, frames in enumerate(stored):
        made = makers.get((path.stem, n))
        explorer = made() if made else None
        before = settle(browser, n)
        for k in range(len(before["key"])):
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
    return records, browser.evaluate(NOTES)


FOCUS = """(() => { const a = document.activeElement;
  const c = a && a.closest('.explorer-static') && a.closest('[class*="explorer-c"]');
  return c ? [...c.classList].filter(x => /^explorer-c[0-9]+$/.test(x))[0] : null; })()"""


def tab_order(browser: DevTools, path) -> list[dict]:
    """For every menu and slider of every explorer on the page open in ``browser`` (notebook ``path``'s) that has a
    control after it: focus it, change its value with the arrow keys, press Tab until the focus leaves it; one record
    per control, with the control that has the focus then."""
    records = []
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
    return records
