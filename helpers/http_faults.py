"""Lost responses over real HTTP: the server commits, the client never gets the answer.

`LostHttpResponses` wraps an ASGI app. For each request it matches (POST to one of
`paths`, by default), a seeded schedule decides whether the response is lost. A lost
response's work runs to the end -- the debit made, the record saved -- and then its
answer is lost in one of two ways (`how`):

* ``"hold"``: the answer is **held**. The server sends nothing until the client has
  given up: its read timeout fires, it closes the connection, uvicorn reports the
  disconnect, and the held answer is dropped. The client saw a timeout (requests'
  ``ReadTimeout``), after waiting its whole read timeout in real seconds.
* ``"close"``: the server **closes the connection** without a byte of the answer, as a
  crashed server or a dropped connection would. The client learns at once that no answer
  is coming (requests: ``ConnectionError``, "Remote end closed connection without
  response"; httpx: ``RemoteProtocolError``). Nothing waits, so a client's timeouts can
  be generous: no answer that *is* coming is ever given up on.

No race decides the outcome: a lost response is never sent, however long the client
waits, so the client fails every time (its timeout only decides *when*, in "hold"). A
client with no timeout at all would wait forever for a held answer; after
`hold_limit_seconds` it is sent late instead, and counted in `delivered_late`. The one
thing a schedule cannot rule out is an answer that is *not* lost but slower than the
client's timeout: `slowest_seconds` is the longest any matching request took to be
answered, so a notebook can check that it stayed well under its clients' read timeout.

`settle()` waits until the server has seen every client of a lost answer go (`dropped` is
counted then; in "hold", a moment after the client's timeout fired).

The schedule counts matching requests in the order they arrive (0, 1, 2, ...),
retries included, like `helpers.faults.LostResponses` does for DynamoDB writes;
`restart(p=, seed=, at=, how=)` starts it over, as it does every `helpers.schedule.Schedule`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .schedule import Schedule

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class LostHttpResponses(Schedule):
    """Which HTTP responses get lost, and an ASGI wrapper that loses them.

    >>> LostHttpResponses(at=[1]).decide_many(3)           # the 2nd response is lost
    [False, True, False]
    >>> LostHttpResponses(p=0.5, seed=1).decide_many(6)    # seeded: the same on every run
    [True, False, False, True, True, True]
    >>> LostHttpResponses(how="close").restart(at=[0], how="hold").how   # one schedule held...
    'hold'
    >>> LostHttpResponses(how="close").restart(at=[0]).how               # ...then the usual way
    'close'
    """

    def __init__(
        self,
        *,
        p: float = 0.0,
        seed: int = 0,
        at: Iterable[int] = (),
        methods: Iterable[str] = ("POST",),
        paths: Iterable[str] | None = None,
        how: str = "hold",
        hold_limit_seconds: float = 30.0,
    ) -> None:
        self.default_how = _checked_how(how)
        self.methods = frozenset(m.upper() for m in methods)
        self.paths = None if paths is None else frozenset(paths)
        if not hold_limit_seconds > 0:
            raise ValueError(f"hold_limit_seconds must be positive, got {hold_limit_seconds!r}")
        self.hold_limit_seconds = hold_limit_seconds
        self._holding = 0
        self.how = self.default_how
        super().__init__(p=p, seed=seed, at=at)
        self._settled = threading.Condition(self._lock)

    def restart(self, *, p: float = 0.0, seed: int = 0, at: Iterable[int] = (),
                how: str | None = None) -> LostHttpResponses:
        """`Schedule.restart`, and `how` for this schedule only (None: the default); returns self."""
        self.check_probability(p)
        how = self.default_how if how is None else _checked_how(how)
        with self._lock:
            self._start(p, seed, at)
            self.how = how
        return self

    def _start(self, p: float, seed: int, at: Iterable[int]) -> None:
        super()._start(p, seed, frozenset(at))   # `sent`: matching requests seen so far
        self.dropped = 0                  # held answers dropped after the client gave up
        self.delivered_late = 0           # held answers sent after hold_limit_seconds
        self.slowest_seconds = 0.0        # the longest a matching request took to be answered (or held)

    @property
    def lost(self) -> list[int]:
        """Which matching requests (numbered from 0, in order of arrival) lost their response."""
        return self.picked

    def settle(self, timeout: float = 10.0) -> LostHttpResponses:
        """Wait until no answer is held any more (the server has seen every client give up); returns self."""
        with self._settled:
            if not self._settled.wait_for(lambda: self._holding == 0, timeout):
                raise TimeoutError(f"{self._holding} held answers still waiting for their client after {timeout} s")
        return self

    def _took(self, started: float) -> None:
        with self._lock:
            self.slowest_seconds = max(self.slowest_seconds, time.perf_counter() - started)

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
                how = self.how
            try:
                await app(scope, receive, hold)         # the work runs to the end: committed
                self._took(started)
                if how == "close":
                    _transport_of(send).close()           # not a byte of the answer: the client sees EOF
                    await _client_gone(receive)           # uvicorn has marked the connection gone
                    with self._lock:
                        self.dropped += 1
                    return
                try:
                    await asyncio.wait_for(_client_gone(receive), self.hold_limit_seconds)
                except TimeoutError:
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


def _checked_how(how: str) -> str:
    if how not in ("hold", "close"):
        raise ValueError(f'how is "hold" (until the client gives up) or "close" (the connection), got {how!r}')
    return how


def _transport_of(send: Send) -> Any:
    """The connection's asyncio transport behind uvicorn's `send` (a method of its request-response cycle)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError('how="close" needs the app served by uvicorn (helpers.http_server.serve)')
    return transport


async def _client_gone(receive: Receive) -> None:
    """Return once the client has closed the connection (after the app has read the body)."""
    while (await receive())["type"] != "http.disconnect":
        pass
