"""A caller with a deadline in front of a handler, in virtual time: API Gateway's 504.

API Gateway (REST APIs) waits at most its *integration timeout* for the Lambda
function behind it: 29 seconds by default. When the function takes longer,
the gateway answers the caller ``504 {"message": "Endpoint request timed out"}``
-- but the function is not stopped. It runs on, and whatever it wrote to
DynamoDB stays written. The caller, seeing an error, sends the request again.

The model, honestly stated:

* A handler is a function ``handler(event) -> (body, seconds)``. It does its
  real work (its DynamoDB calls) when it is invoked, and returns its answer
  together with how long it ran, in virtual seconds (a slow downstream call,
  a cold start). Its writes are therefore committed at the moment of invocation.
* `invoke` then moves the virtual clock to whichever comes first: the answer
  or the caller's deadline. A handler that outlives the deadline is recorded as
  finishing later, on the timeline, with nobody waiting for its answer.
* Nothing runs concurrently: a retry that arrives while the first invocation is
  "still running" is simply a second call, later on the virtual clock.

`invoke` is the bare deadline (a client with its own timeout uses it);
`Gateway` adds the status codes an API Gateway caller sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..clock import VirtualClock
from ..validation import BadInput
from .invocation import Invocation

REST_API_INTEGRATION_TIMEOUT = 29.0  # seconds, API Gateway's default for REST APIs

Handler = Callable[[Any], "tuple[Any, float]"]


@dataclass(frozen=True)
class GatewayResponse:
    """What the gateway's caller receives."""

    status: int
    body: Any


def _check_timeout(timeout: object, name: str) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise BadInput(f"{name} must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


class HandlerFailed(RuntimeError):
    """The handler raised; the original exception is its ``__cause__``."""


def _run(handler: Handler, event: Any) -> tuple[Any, float]:
    try:
        result = handler(event)
    except Exception as error:
        raise HandlerFailed(f"the handler raised {type(error).__name__}: {error}") from error
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(f"a handler returns (body, seconds), got {result!r}")
    body, seconds = result
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise BadInput(f"a handler's running time must be a non-negative number of seconds, got {seconds!r}")
    return body, float(seconds)


def invoke(clock: VirtualClock, handler: Handler, event: Any, *, timeout: float, number: int = 1) -> Invocation:
    """Call `handler(event)` and wait for it at most `timeout` virtual seconds.

    The clock ends at the answer, or at the deadline if the handler ran longer.
    Raises `HandlerFailed` if the handler raised, `TypeError` / `BadInput` if it
    broke the ``(body, seconds)`` contract. `number` numbers the `Invocation`
    (a `Gateway` counts its own).
    """
    timeout = _check_timeout(timeout, "timeout")
    started = clock.now()
    body, seconds = _run(handler, event)
    timed_out = seconds > timeout
    clock.advance(timeout if timed_out else seconds)
    return Invocation(number=number, body=body, timed_out=timed_out,
                      started_at=started, finished_at=started + seconds, answered_at=clock.now())


class Gateway:
    """API Gateway in front of a Lambda handler, on a virtual clock.

    >>> from helpers import VirtualClock
    >>> gateway = Gateway(VirtualClock(start=0))
    >>> gateway.request(lambda event: ("slow", 35.0), {}).status
    504
    >>> gateway.request(lambda event: ("fast", 2.0), {})
    GatewayResponse(status=200, body='fast')

    Pass a `timeline` (see `helpers.swimlanes.Timeline`) to record what the
    gateway and the handler did, on the lanes ``gateway`` and ``handler``.
    """

    TIMED_OUT = {"message": "Endpoint request timed out"}
    FAILED = {"message": "Internal server error"}

    def __init__(
        self,
        clock: VirtualClock,
        *,
        integration_timeout: float = REST_API_INTEGRATION_TIMEOUT,
        timeline: Any = None,
    ) -> None:
        if not isinstance(clock, VirtualClock):
            raise BadInput(f"a Gateway needs a VirtualClock, got {type(clock).__name__}")
        self.clock = clock
        self.integration_timeout = _check_timeout(integration_timeout, "integration_timeout")
        self.timeline = timeline
        self.invocations: list[Invocation] = []

    def _note(self, lane: str, event: str, *, to: str | None = None, at: float | None = None) -> None:
        if self.timeline is not None:
            self.timeline.record(lane, event, to=to, at=at)

    def request(self, handler: Handler, event: Any) -> GatewayResponse:
        """Forward `event` to `handler`; 200 with its answer, 504 past the integration timeout, 502 if it raised."""
        self._note("gateway", "invokes the handler", to="handler")
        try:
            invocation = invoke(self.clock, handler, event, timeout=self.integration_timeout,
                                number=len(self.invocations) + 1)
        except HandlerFailed:
            self._note("handler", "raised an error", to="gateway")
            self._note("gateway", "502 to the caller", to="client")
            return GatewayResponse(502, dict(self.FAILED))
        self.invocations.append(invocation)
        if invocation.timed_out:
            self._note("gateway", f"{self.integration_timeout:g} s passed: 504 to the caller", to="client")
            self._note("handler", "finishes; its answer is discarded", at=invocation.finished_at)
            return GatewayResponse(504, dict(self.TIMED_OUT))
        self._note("handler", "answers", to="gateway")
        self._note("gateway", "200 to the caller", to="client")
        return GatewayResponse(200, invocation.body)
