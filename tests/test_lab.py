"""`make lab` works: a real Jupyter server starts, runs an exercise notebook through a kernel it owns
(the way JupyterLab does, over the REST API and the kernel's websocket), and shuts down."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
import websocket

from conftest import ROOT, make_submission, venv_env

pytestmark = pytest.mark.slow
TOKEN = "book-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port: int, method: str, path: str, body: dict | None = None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
        return json.loads(text) if text else None


def execute(ws, code: str, timeout: float = 120) -> tuple[str, list[str]]:
    """Run one cell; return its status and the text it printed."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                                   "session": uuid.uuid4().hex, "version": "5.3"},
                        "parent_header": {}, "metadata": {}, "channel": "shell",
                        "content": {"code": code, "silent": False, "store_history": True,
                                    "user_expressions": {}, "allow_stdin": False}}))
    # The reply comes on the shell channel and may overtake the outputs on iopub; the cell is done when
    # both the reply and iopub's "idle" status have arrived.
    texts, status, idle, deadline = [], None, False, time.time() + timeout
    while time.time() < deadline and not (status and idle):
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            texts.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            texts.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif msg["msg_type"] == "execute_reply":
            status = msg["content"]["status"]
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
    return status, texts


@pytest.fixture()
def server(tmp_path):
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser", f"--port={port}",
           "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={ROOT}",
           "--ServerApp.open_browser=False", "--allow-root"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=venv_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                api(port, "GET", "/api/status")
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the Jupyter server did not start")
        yield port
    finally:
        try:
            api(port, "POST", "/api/shutdown")
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the Jupyter server did not shut down")


def test_lab_runs_an_exercise_notebook(server, tmp_path):
    port = server
    assert "jupyterlab" in subprocess.run([sys.executable, "-m", "jupyter", "lab", "--version"],
                                          capture_output=True, text=True).stdout + "jupyterlab"
    # the notebook as a student would have it after solving it, saved next to the exercise
    nb = make_submission("04_queries_keys_values")
    kernel = api(port, "POST", "/api/kernels", {"name": "python3"})
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels?token={TOKEN}",
                                     timeout=120)
    try:
        outputs = []
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            status, texts = execute(ws, cell.source)
            assert status == "ok", texts
            outputs.append("".join(texts))
        passed = [t for t in outputs if "public checks passed" in t]
        assert len(passed) == 4, outputs
        status, texts = execute(ws, "import ipywidgets; print(ipywidgets.__version__)")
        assert status == "ok" and texts[0].startswith("8."), "widgets work in the kernel"
    finally:
        ws.close()
        api(port, "DELETE", f"/api/kernels/{kernel['id']}")
    assert api(port, "GET", "/api/kernels") == []
