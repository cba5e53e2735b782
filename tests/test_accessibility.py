"""The book meets WCAG 2.1 AA: every built page, opened offline in Chromium after its explorers and
formulas render, has no serious or critical axe-core violation (WCAG 2.0 and 2.1, levels A and AA),
no JavaScript error and no formula in the tab order; every figure in a chapter has alt text written
for it."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import ROOT
from test_book import chromium, html, pages  # noqa: F401 - the book build and the offline browser, shared

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# MyST-NB's default alt text is the image's path; "a plot" or "figure" says no more
DEFAULT_ALT = re.compile(r"^\s*$|\.(png|jpe?g|gif|svg)\b|^(an? |the )?(plot|figure|image|chart|graph)\.?$", re.I)


def _above_4(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class DevTools:
    """Chromium driven through the DevTools protocol on a pipe (fds 3 and 4), so it works inside
    ``unshare --net`` where no port can be reached; one tab, reused page after page."""

    def __init__(self, profile: Path):
        to_chrome, self._w = os.pipe()
        self._r, from_chrome = os.pipe()
        # the browser reads commands on fd 3 and writes answers on fd 4; its ends move above them first
        to_chrome, from_chrome = (_above_4(fd) for fd in (to_chrome, from_chrome))
        shell = f'exec "$@" 3<&{to_chrome} 4>&{from_chrome} {to_chrome}<&- {from_chrome}>&-'
        self.proc = subprocess.Popen(["bash", "-c", shell, "bash", *chromium(), f"--user-data-dir={profile}",
                                      "--remote-debugging-pipe", "--window-size=1280,900", "about:blank"],
                                     pass_fds=(to_chrome, from_chrome), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._id, self._answers, self.events = 0, queue.Queue(), queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._r, 1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                (self._answers if "id" in message else self.events).put(message)

    def send(self, method: str, session: bool = False, timeout: float = 120, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._answers.get(timeout=timeout)
            if answer["id"] == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def evaluate(self, expression: str, context: int | None = None, timeout: float = 120):
        extra = {"contextId": context} if context is not None else {}
        result = self.send("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                           awaitPromise=True, returnByValue=True, **extra)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """The JavaScript errors since the last call: uncaught exceptions, console.error, failed loads."""
        found = []
        while not self.events.empty():
            event = self.events.get()
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"{params['entry']['text']} {params['entry'].get('url', '')}".strip())
        return found

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self._w)


# Resolves once the page (__URL__) has loaded, MathJax has typeset it and every saved explorer is drawn.
SETTLED = """new Promise(done => {
  const start = Date.now();
  const check = () => {
    if (location.href !== __URL__) return setTimeout(check, 100);  // still the page before
    const views = [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')];
    const drawn = views.every(s => s.previousElementSibling && s.previousElementSibling.querySelector('.jupyter-widgets'));
    const mathjax = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (document.readyState === 'complete' && drawn && (mathjax || !document.querySelector('.math'))) {
      Promise.resolve(mathjax).then(() => setTimeout(() => done(true), 500));
    } else if (Date.now() - start > 30000) {
      done(false);
    } else {
      setTimeout(check, 100);
    }
  };
  check();
})"""

AUDIT = """axe.run(document, {runOnly: {type: 'tag', values: %s}, resultTypes: ['violations']}).then(r => ({
  violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                      targets: v.nodes.map(n => n.target.join(' '))})),
  // a formula wider than the column scrolls, and keeps its Tab stop to be scrolled by keyboard
  tabbableMath: [...document.querySelectorAll('mjx-container[tabindex]:not([tabindex^="-"])')]
    .filter(math => math.scrollWidth <= math.clientWidth + 1).length,
}))""" % json.dumps(AXE_TAGS)


def audit(browser: DevTools, url: str) -> dict:
    """axe-core's violations on one page, its JavaScript errors, and how many formulas take a Tab stop."""
    browser.errors()
    browser.send("Page.navigate", session=True, url=url)
    settled = False
    for _ in range(3):
        try:
            settled = browser.evaluate(SETTLED.replace("__URL__", json.dumps(url)), timeout=60)
            break
        except RuntimeError as error:  # the page before went away under the evaluation: ask the new one
            if "destroyed" not in str(error) and "navigated" not in str(error):
                raise
    frame = browser.send("Page.getFrameTree", session=True)["frameTree"]["frame"]["id"]
    # axe runs in a world of its own: the page's RequireJS and globals never see it
    world = browser.send("Page.createIsolatedWorld", session=True, frameId=frame, worldName="axe")
    context = world["executionContextId"]
    browser.evaluate(AXE.read_text(encoding="utf-8"), context=context)
    result = browser.evaluate(AUDIT, context=context, timeout=300)
    result["errors"] = browser.errors() + ([] if settled else ["the page did not finish drawing in 30 s"])
    return result


@pytest.fixture(scope="module")
def audited(html, tmp_path_factory) -> dict:  # noqa: F811 - the shared fixture
    if not AXE.exists():
        pytest.fail("axe-core is missing from node_modules/: run `npm ci` (make test does)")
    browser = DevTools(tmp_path_factory.mktemp("chromium"))
    try:
        return {page.relative_to(html).as_posix(): audit(browser, page.as_uri()) for page in pages(html)}
    finally:
        browser.close()


@pytest.mark.slow
def test_no_serious_or_critical_wcag_violation(audited):
    assert len(audited) >= 30
    found = [f"{page}: {v['impact']} {v['id']} ({v['help']}) at {v['targets'][:3]}"
             for page, result in audited.items() for v in result["violations"]
             if v["impact"] in ("serious", "critical")]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_no_javascript_error(audited):
    found = [f"{page}: {error}" for page, result in audited.items() for error in result["errors"]]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_formulas_are_not_in_the_tab_order(audited):
    found = {page: result["tabbableMath"] for page, result in audited.items() if result["tabbableMath"]}
    assert not found, f"formulas with a Tab stop (MathJax's inTabOrder must be false): {found}"


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
def test_every_image_on_a_page_has_alt_text(html):  # noqa: F811 - the shared fixture
    bad = [f"{page.relative_to(html)}: {tag[:120]}" for page in pages(html)
           for tag in re.findall(r"<img\b[^>]*>", page.read_text(encoding="utf-8"))
           if not (alt := re.search(r'\balt="([^"]*)"', tag)) or DEFAULT_ALT.search(alt.group(1))]
    assert not bad, "\n".join(bad)


def test_every_explorer_drawing_has_a_name():
    bad = [f"{nb} {model}: {tag}" for nb, model, tag in explorer_drawings()
           if not (re.search(r"""\brole=["']img["']""", tag) and re.search(r"""\baria-label=(["'])[^"']{20,}\1""", tag))
           and not re.search(r"""\balt=(["'])[^"']{20,}\1""", tag)]
    assert not bad, "give every drawing role=\"img\" and an aria-label that says what it shows:\n" + "\n".join(bad)
