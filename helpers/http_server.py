"""Serve an ASGI app (a FastAPI app, say) for real, on 127.0.0.1, from inside the kernel.

    server = serve(app, name="lesson-09")   # uvicorn in a background thread, on a free port
    requests.post(server.url + "/payments", ...)
    server.stop()                            # thread joined, socket closed, port free again

The notebook writes the app; this module only serves it. `serve` is safe to call
again with the same name (re-running a setup cell): the server already running
under that name is stopped first, so there is only ever one. Every server still
running when the kernel exits is stopped then (`atexit`), and its thread is a
daemon, so nothing outlives the kernel either way.

uvicorn runs with its own asyncio loop in its own thread (the kernel's loop is not
touched), logs only warnings, and sends no `date` or `server` header, so a response's
headers are exactly what the app set.
"""

from __future__ import annotations

import atexit
import socket
import threading
import time
from typing import Any

import uvicorn

HOST = "127.0.0.1"
START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 10.0

_running: dict[str, HttpServer] = {}
_lock = threading.Lock()


class ServerDidNotStart(RuntimeError):
    """uvicorn did not start serving within START_TIMEOUT_SECONDS."""


class HttpServer:
    """One uvicorn server in a background thread. Use `serve()` to make one."""

    def __init__(self, app: Any, name: str) -> None:
        self.name = name
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets:
        # without it a keep-alive response waits ~40 ms for its body (Nagle + the client's delayed ACK)
        self._socket.bind((HOST, 0))          # the OS picks a free port; no race with anyone else
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}"
        config = uvicorn.Config(
            app, log_config=None, log_level="warning", access_log=False, lifespan="off", http="h11",
            loop="asyncio", server_header=False, date_header=False, timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"uvicorn-{name}", daemon=True)

    def start(self) -> HttpServer:
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ServerDidNotStart(f"uvicorn did not start serving {self.name!r} on {self.url}")
            time.sleep(0.01)
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def thread_name(self) -> str:
        return self._thread.name

    def stop(self) -> None:
        """Stop serving: open connections are closed, the thread is joined, the port is released."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT_SECONDS / 2)
            if self._thread.is_alive():          # a connection that would not close: stop anyway
                self._server.force_exit = True
                self._thread.join(STOP_TIMEOUT_SECONDS / 2)
        self._socket.close()
        with _lock:
            if _running.get(self.name) is self:
                del _running[self.name]

    def __repr__(self) -> str:
        return f"HttpServer({self.name!r}, running={self.running})"


def serve(app: Any, *, name: str = "default") -> HttpServer:
    """Serve `app` on 127.0.0.1 and a free port; stops the server already called `name`, if any."""
    if not callable(app):
        raise TypeError(f"expected an ASGI app (a callable such as a FastAPI app), got {type(app).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    with _lock:
        previous = _running.pop(name, None)
    if previous is not None:
        previous.stop()
    server = HttpServer(app, name).start()
    with _lock:
        _running[name] = server
    return server


def running() -> list[HttpServer]:
    """The servers started here that are still running."""
    with _lock:
        return list(_running.values())


def stop_all() -> None:
    """Stop every server started here (runs at exit too)."""
    for server in running():
        server.stop()


atexit.register(stop_all)
