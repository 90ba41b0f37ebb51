"""Lost responses: the write commits, the caller sees a timeout.

A `LostResponses` schedule decides, for each write request a client sends,
whether its response is lost on the way back. The request really reaches the
table and DynamoDB really handles it (a successful write is applied; a failed
condition fails); then the caller gets botocore's `ReadTimeoutError` instead
of the answer. Because the error is raised inside botocore, botocore's
own retry machinery is what resends (when SDK retries are on); with SDK retries
off, the application sees the timeout and decides.

The schedule is seeded, so the same requests are lost on every run and on
every backend (`helpers.schedule.Schedule` decides). It is a layer on the
client's wire (`helpers.wire`): `install(target)` returns it, `uninstall()`
undoes every install, and `with LostResponses(at=[0]).install(table):` both.
"""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ReadTimeoutError

from .schedule import Schedule
from .wire import LOST_RESPONSE, WRITES, Call, Layer, Result

__all__ = ["LostResponses", "WRITES"]


class LostResponses(Schedule, Layer):
    """Which write responses get lost.

    >>> LostResponses(at=[0, 2]).decide_many(4)        # the 1st and 3rd are lost
    [True, False, True, False]
    >>> LostResponses(p=0.5, seed=1).decide_many(6)   # seeded: the same on every run
    [True, False, False, True, True, True]
    """

    rank = LOST_RESPONSE

    def __init__(
        self,
        *,
        p: float = 0.0,
        seed: int = 0,
        at: Iterable[int] = (),
        operations: Iterable[str] = WRITES,
    ) -> None:
        super().__init__(p=p, seed=seed, at=frozenset(at))   # `sent`: write requests seen so far
        self.operations = frozenset(operations)

    @property
    def lost(self) -> list[int]:
        """Which write requests (numbered from 0, in order of sending) lost their response."""
        return self.picked

    def on_wire(self, call: Call) -> Result:
        """Let the request reach the table; lose its answer if the schedule picks it."""
        if call.operation not in self.operations:
            return call.send()
        lose = self.decide()
        result = call.send()
        _answer, error = result  # ((http_response, parsed), None), or (None, exception)
        if lose and error is None:  # DynamoDB answered (and applied the write); the answer is lost
            return (None, ReadTimeoutError(endpoint_url=call.request.url))
        return result
