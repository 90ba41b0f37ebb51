"""Lost responses over real HTTP: the server commits, the client times out.

`LostHttpResponses` wraps an ASGI app. For each request it matches (POST to one of
`paths`, by default), a seeded schedule decides whether the response is lost:

* not lost: the app answers as usual;
* lost: the app runs to the end -- the work is done, the record saved -- and its
  answer is **held**. The server sends nothing until the client has given up: its
  read timeout fires, it closes the connection, and uvicorn reports the disconnect.
  Then the held answer is dropped. The client saw a timeout; the server committed.

No race decides the outcome: a lost response is never sent, however long the client
waits, so the client times out every time (its timeout only decides *when*). A client
with no timeout at all would wait forever; after `hold_limit_seconds` the answer is
sent late instead, and counted in `delivered_late`. The one thing a schedule cannot
rule out is an answer that is *not* lost but slower than the client's timeout:
`slowest_seconds` is the longest any matching request took to be answered, so a
notebook can check that it stayed well under its clients' read timeout.

`settle()` waits until the server has seen every client of a held answer give up
(`dropped` is counted then, a moment after the client's timeout fired).

The schedule counts matching requests in the order they arrive (0, 1, 2, ...),
retries included, like `helpers.faults.LostResponses` does for DynamoDB writes.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any, Awaitable, Callable, Iterable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class LostHttpResponses:
    """Which HTTP responses get lost, and an ASGI wrapper that loses them.

    >>> LostHttpResponses(at=[1]).decide_many(3)
    [False, True, False]
    >>> LostHttpResponses(p=0.5, seed=1).decide_many(6)
    [True, False, False, True, True, True]
    """

    def __init__(
        self,
        *,
        p: float = 0.0,
        seed: int = 0,
        at: Iterable[int] = (),
        methods: Iterable[str] = ("POST",),
        paths: Iterable[str] | None = None,
        hold_limit_seconds: float = 30.0,
    ) -> None:
        self.methods = frozenset(m.upper() for m in methods)
        self.paths = None if paths is None else frozenset(paths)
        if not hold_limit_seconds > 0:
            raise ValueError(f"hold_limit_seconds must be positive, got {hold_limit_seconds!r}")
        self.hold_limit_seconds = hold_limit_seconds
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._holding = 0
        self.reset(p=p, seed=seed, at=at)

    def reset(self, *, p: float = 0.0, seed: int = 0, at: Iterable[int] = ()) -> "LostHttpResponses":
        """Start a new schedule (counts back to zero); returns self."""
        if not 0.0 <= p < 1.0:
            raise ValueError(f"p is a probability below 1 (a response must get through eventually), got {p!r}")
        with self._lock:
            self.p = p
            self.at = frozenset(at)
            self._rng = random.Random(seed)
            self.sent = 0                     # matching requests seen so far
            self.lost: list[int] = []         # which of them lost their response
            self.dropped = 0                  # held answers dropped after the client gave up
            self.delivered_late = 0           # held answers sent after hold_limit_seconds
            self.slowest_seconds = 0.0        # the longest a matching request took to be answered (or held)
        return self

    def settle(self, timeout: float = 10.0) -> "LostHttpResponses":
        """Wait until no answer is held any more (the server has seen every client give up); returns self."""
        with self._settled:
            if not self._settled.wait_for(lambda: self._holding == 0, timeout):
                raise TimeoutError(f"{self._holding} held answers still waiting for their client after {timeout} s")
        return self

    def _took(self, started: float) -> None:
        with self._lock:
            self.slowest_seconds = max(self.slowest_seconds, time.perf_counter() - started)

    def decide(self) -> bool:
        """Decide for the next matching request: True if its response is lost."""
        with self._lock:
            n = self.sent
            self.sent += 1
            lose = n in self.at or (self.p > 0 and self._rng.random() < self.p)
            if lose:
                self.lost.append(n)
            return lose

    def decide_many(self, n: int) -> list[bool]:
        """The next `n` decisions (handy for showing a schedule)."""
        return [self.decide() for _ in range(n)]

    def matches(self, scope: Scope) -> bool:
        return (scope.get("type") == "http" and scope.get("method", "").upper() in self.methods
                and (self.paths is None or scope.get("path") in self.paths))

    def wrap(self, app: Callable[..., Awaitable[None]]) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        """An ASGI app that answers as `app` does, except for the responses this schedule loses."""

        async def lossy(scope: Scope, receive: Receive, send: Send) -> None:
            if not self.matches(scope):
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            if not self.decide():

                async def timed(message: dict[str, Any]) -> None:
                    if message["type"] == "http.response.start":
                        self._took(started)
                    await send(message)

                await app(scope, receive, timed)
                return
            held: list[dict[str, Any]] = []

            async def hold(message: dict[str, Any]) -> None:
                held.append(message)

            with self._lock:
                self._holding += 1
            try:
                await app(scope, receive, hold)         # the work runs to the end: committed
                self._took(started)
                try:
                    await asyncio.wait_for(_client_gone(receive), self.hold_limit_seconds)
                except asyncio.TimeoutError:
                    with self._lock:
                        self.delivered_late += 1
                    for message in held:
                        await send(message)
                    return
                with self._lock:
                    self.dropped += 1                     # the client gave up; the answer is lost
            finally:
                with self._settled:
                    self._holding -= 1
                    self._settled.notify_all()

        lossy.__wrapped__ = app  # type: ignore[attr-defined]
        return lossy


async def _client_gone(receive: Receive) -> None:
    """Return once the client has closed the connection (after the app has read the body)."""
    while (await receive())["type"] != "http.disconnect":
        pass
