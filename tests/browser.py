"""The browser the book's tests share: the system Chromium, offline, driven as a subprocess or over the
DevTools protocol; and the list of the built book's pages."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--allow-file-access-from-files", "--hide-scrollbars",
                  # belt and braces: even where no network namespace can be made, nothing leaves the machine
                  "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium() -> list[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("the browser test needs Debian's chromium: `apt-get install chromium` "
                    "(make test does this as root)")
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

    def evaluate_on_new_page(self, expression: str, timeout: float = 120, tries: int = 3):
        """``evaluate`` right after ``Page.navigate``: asked again when the page before went away under the
        evaluation (``tries`` times in all); None when it went away every time."""
        for _ in range(tries):
            try:
                return self.evaluate(expression, timeout=timeout)
            except RuntimeError as error:
                if "destroyed" not in str(error) and "navigated" not in str(error):
                    raise
        return None

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
    const drawn = views.every(s => s.previousElementSibling
                                   && s.previousElementSibling.querySelector('.jupyter-widgets'));
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

