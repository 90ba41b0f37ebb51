"""helpers/http_server.py: serving an app from the kernel leaves nothing behind, and re-running the setup is safe.

After `stop()` (or `stop_all()`): no uvicorn thread, no child process, the port free for anyone; `serve()` again
under the same name (a re-run setup cell) replaces the server -- one running, the old port closed. Notebook 09's
own setup cells are run twice to show it. Also how `LostHttpResponses` (helpers/http_faults.py) loses an answer.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
import requests
from fastapi import FastAPI
from fastapi.responses import Response

from helpers import http_server
from helpers.http_faults import LostHttpResponses
from helpers.http_server import HttpServer, serve, stop_all

from notebook_code import lesson


def app_counting(calls: list[int]) -> FastAPI:
    app = FastAPI()

    @app.post("/p")
    async def p():
        calls.append(1)
        return Response(b'{"ok":true}', status_code=201, media_type="application/json")

    @app.get("/ping")
    async def ping():
        return Response(b"pong")

    return app


def uvicorn_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("uvicorn-"))


def child_processes() -> list[int]:
    """Processes whose parent is this one (Linux /proc)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                children.append(int(entry.name))
    return children


def port_is_free(port: int) -> bool:
    """Nothing listens on `port`, and it can be bound again at once."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
    return True


@pytest.fixture(autouse=True)
def nothing_left(db):
    """Nothing a test started outlives it (the backend is connected first: DynamoDB Local is a child of ours)."""
    threads, children = uvicorn_threads(), child_processes()
    yield
    stop_all()
    assert uvicorn_threads() == threads
    assert child_processes() == children


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@needs_proc
def test_start_serves_and_stop_leaves_no_thread_process_or_port():
    before_threads, before_children = uvicorn_threads(), child_processes()
    server = serve(app_counting([]), name="t-start-stop")
    assert server.running and server.url.startswith("http://127.0.0.1:")
    assert requests.get(server.url + "/ping", timeout=5).content == b"pong"
    assert uvicorn_threads() == sorted([*before_threads, "uvicorn-t-start-stop"])
    assert child_processes() == before_children                  # a thread, never a process
    server.stop()
    assert not server.running and uvicorn_threads() == before_threads
    assert port_is_free(server.port)
    assert http_server.running() == []
    server.stop()                                                # stopping twice is harmless


def test_serving_again_under_a_name_replaces_the_server():
    calls: list[int] = []
    first = serve(app_counting(calls), name="t-again")
    second = serve(app_counting(calls), name="t-again")          # the setup cell, run again
    assert not first.running and port_is_free(first.port)
    assert second.running and http_server.running() == [second]
    assert requests.post(second.url + "/p", timeout=5).status_code == 201
    other = serve(app_counting(calls), name="t-other")           # another name: both run
    assert sorted(s.name for s in http_server.running()) == ["t-again", "t-other"]
    stop_all()
    assert not second.running and not other.running and http_server.running() == []
    assert port_is_free(second.port) and port_is_free(other.port)


def test_a_keep_alive_connection_does_not_keep_the_server_alive():
    server = serve(app_counting([]), name="t-keepalive")
    session = requests.Session()
    assert session.get(server.url + "/ping", timeout=5).status_code == 200     # a pooled, open connection
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < http_server.STOP_TIMEOUT_SECONDS
    assert not server.running and port_is_free(server.port)
    session.close()


@pytest.mark.filterwarnings("ignore")
def test_stopping_while_an_answer_is_held_still_leaves_nothing(caplog):
    lost = LostHttpResponses(at=[0], how="hold")
    server = serve(lost.wrap(app_counting([])), name="t-held")
    ended: list[object] = []

    def waiting_client():
        try:
            ended.append(requests.post(server.url + "/p", timeout=(2, 30)).status_code)
        except requests.RequestException as error:
            ended.append(error)

    client = threading.Thread(target=waiting_client)
    client.start()
    deadline = time.monotonic() + 10
    while lost.sent == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop()                                             # uvicorn's graceful shutdown, then the task cancelled
    client.join(10)
    assert not client.is_alive() and ended                    # not left waiting: cut off, or a 500 at shutdown
    assert ended[0] == 500 or isinstance(ended[0], requests.ConnectionError), ended
    assert not server.running and port_is_free(server.port)


def test_bad_arguments_are_refused_before_anything_starts():
    threads = uvicorn_threads()
    with pytest.raises(TypeError, match="ASGI app"):
        serve("not an app", name="t-bad")
    with pytest.raises(ValueError, match="non-empty"):
        serve(app_counting([]), name="")
    assert uvicorn_threads() == threads and http_server.running() == []


def test_the_notebooks_setup_run_twice_leaves_one_server():
    threads = uvicorn_threads()
    first = lesson("09_over_http.ipynb")
    old = first["server"]
    second = lesson("09_over_http.ipynb")                      # Restart-free re-run of the setup and route cells
    try:
        assert not old.running and port_is_free(old.port)
        assert [s.name for s in http_server.running()] == ["lesson-09"]
        assert uvicorn_threads() == sorted([*threads, "uvicorn-lesson-09"])
        answer = requests.post(second["server"].url + "/payments", json={"wallet": "nobody", "amount": 1},
                               headers=second["headers_for"](key="t-setup-twice"), timeout=10)
        assert (answer.status_code, answer.json()["error"]) == (404, "wallet_not_found")
    finally:
        second["server"].stop()
    assert uvicorn_threads() == threads


# --- how a lost answer is lost --------------------------------------------------------------------------------

@pytest.mark.parametrize("how, error, at_least", [("hold", requests.ReadTimeout, 0.2),
                                                   ("close", requests.ConnectionError, 0.0)])
def test_a_lost_answer_is_committed_and_never_sent(how, error, at_least):
    calls: list[int] = []
    lost = LostHttpResponses(at=[0], how="close").restart(at=[0], how=how)
    server = serve(lost.wrap(app_counting(calls)), name="t-lost")
    started = time.perf_counter()
    with pytest.raises(error):
        requests.post(server.url + "/p", timeout=(2, 0.2))
    waited = time.perf_counter() - started
    lost.settle()
    assert waited >= at_least
    assert (calls, lost.lost, lost.dropped, lost.delivered_late) == ([1], [0], 1, 0)
    assert requests.post(server.url + "/p", timeout=5).status_code == 201      # the next one is answered
    assert requests.get(server.url + "/ping", timeout=5).content == b"pong"    # a GET never matches


def test_a_held_answer_is_sent_late_to_a_client_that_never_gives_up():
    lost = LostHttpResponses(at=[0], hold_limit_seconds=0.2)
    server = serve(lost.wrap(app_counting([])), name="t-late")
    assert requests.post(server.url + "/p", timeout=10).status_code == 201
    assert (lost.delivered_late, lost.dropped) == (1, 0)


@pytest.mark.parametrize("bad, message", [({"how": "drop"}, "how is"), ({"p": 1.0}, "probability"),
                                          ({"hold_limit_seconds": 0}, "positive")])
def test_bad_schedules_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        LostHttpResponses(**bad)


def test_close_needs_uvicorn():
    import asyncio

    lost = LostHttpResponses(at=[0], how="close")

    async def app(scope, receive, send):
        pass

    async def not_uvicorn(message):
        pass

    async def receive():
        return {"type": "http.disconnect"}

    with pytest.raises(RuntimeError, match="uvicorn"):
        asyncio.run(lost.wrap(app)({"type": "http", "method": "POST", "path": "/p"}, receive, not_uvicorn))


def test_server_class_is_what_serve_returns():
    server = serve(app_counting([]), name="t-class")
    assert isinstance(server, HttpServer) and repr(server) == "HttpServer('t-class', running=True)"
