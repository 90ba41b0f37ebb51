"""Smoke test: notebook 03 runs on a real Jupyter server, the way a JupyterLab user runs it.

Starts `jupyter server` on 127.0.0.1 (a free port, a random token), opens a session on the
notebook through the REST API (POST /api/sessions, as JupyterLab does when you open it),
then sends each code cell as an `execute_request` over the kernel's websocket
(/api/kernels/{id}/channels) and reads the replies. The server is always stopped.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from harness.processes import stop, wait_until_it_answers

from notebook_kernel import ROOT, code_cells, kernel_env, may_raise, output_not_compared, read

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

NOTEBOOK = "notebooks/03_request_id_increments.ipynb"
START_TIMEOUT_SECONDS = 30
CELL_TIMEOUT_SECONDS = 60

websocket = pytest.importorskip("websocket", reason="the websocket-client package is needed to talk to the kernel")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port: int, token: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.ws_base = f"ws://127.0.0.1:{port}"
        self.token = token

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base + path, data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as response:
            text = response.read().decode()
            return json.loads(text) if text else {}


@pytest.fixture
def server():
    port, token = free_port(), secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as home:
        env = kernel_env({
            # A private config and runtime dir: no user settings, no leftovers.
            "JUPYTER_CONFIG_DIR": os.path.join(home, "config"),
            "JUPYTER_RUNTIME_DIR": os.path.join(home, "runtime"),
        })
        log = open(os.path.join(home, "server.log"), "w+")
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={ROOT}", *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        try:
            api = Server(port, token)

            def answers() -> bool:
                try:
                    api.request("GET", "/api/status")
                    return True
                except (urllib.error.URLError, ConnectionError):
                    return False

            wait_until_it_answers(process, log, answers, START_TIMEOUT_SECONDS, "jupyter server")
            yield api
        finally:
            stop(process, timeout=15)
            log.close()


def execute(ws, session_id: str, code: str) -> tuple[str, list[dict]]:
    """Send one execute_request on the shell channel; return (reply status, iopub outputs)."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": session_id,
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    status, outputs, idle = None, [], False
    deadline = time.monotonic() + CELL_TIMEOUT_SECONDS
    while status is None or not idle:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no reply within {CELL_TIMEOUT_SECONDS} s to:\n{code[:200]}")
        message = json.loads(ws.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["msg_type"]
        if message["channel"] == "shell" and kind == "execute_reply":
            status = message["content"]["status"]
        elif kind in ("stream", "display_data", "execute_result", "error"):
            outputs.append({"output_type": kind, **message["content"]})
        elif kind == "status" and message["content"]["execution_state"] == "idle":
            idle = True
    return status, outputs


def stdout(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout")


def test_notebook_03_runs_on_a_jupyter_server_kernel(server):
    session = server.request("POST", "/api/sessions", {
        "path": NOTEBOOK, "name": Path(NOTEBOOK).name, "type": "notebook", "kernel": {"name": "python3"},
    })
    kernel_id = session["kernel"]["id"]
    try:
        ws = websocket.create_connection(
            f"{server.ws_base}/api/kernels/{kernel_id}/channels?session_id={session['id']}",
            header=[f"Authorization: token {server.token}"], timeout=CELL_TIMEOUT_SECONDS,
        )
        try:
            nb = read(ROOT / NOTEBOOK)
            results = []
            for index, cell in code_cells(nb):
                status, outputs = execute(ws, session["id"], cell.source)
                errors = [f"{o.get('ename')}: {o.get('evalue')}" for o in outputs if o["output_type"] == "error"]
                results.append((index, cell, status, errors, stdout(outputs)))
        finally:
            ws.close()
        failed = [(i, status, errors) for i, cell, status, errors, _ in results if (status != "ok" or errors)
                  and not may_raise(cell)]
        assert failed == []
        differ = [i for i, cell, _, _, printed in results
                  if not output_not_compared(cell) and printed != stdout(cell.outputs)]
        assert differ == [], f"cells that printed something else than the committed notebook: {differ}"
        checks = [i for i, cell, status, _, _ in results if "assert " in cell.source and status == "ok"]
        assert checks, "no check-yourself cell (one with an assert) ran and passed"
        sessions = server.request("GET", "/api/sessions")
        assert any(s["path"] == NOTEBOOK for s in sessions)
    finally:
        server.request("DELETE", f"/api/sessions/{session['id']}")


def test_every_notebook_link_resolves_inside_lab(server):
    """Lab is rooted where `make lab` roots it: each relative link in every notebook is a file the server has."""
    from urllib.parse import quote, unquote

    from test_rendering import relative_links

    from notebook_kernel import notebook_paths

    missing = []
    for path in notebook_paths():
        base = path.parent.relative_to(ROOT)
        for cell in read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for link in relative_links(cell.source):
                target = unquote(link.split("#", 1)[0].split("?", 1)[0])
                if not target:
                    continue
                resolved = os.path.normpath(base / target)
                try:
                    server.request("GET", f"/api/contents/{quote(resolved)}?content=0")
                except urllib.error.HTTPError as error:
                    missing.append(f"{path.name}: {link} -> {resolved} ({error.code})")
    assert missing == []
