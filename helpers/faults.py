"""Lost responses: the write commits, the caller sees a timeout.

A `LostResponses` schedule decides, for each write request a client sends,
whether its response is lost on the way back. The request really reaches the
table and DynamoDB really handles it (a successful write is applied; a failed
condition fails); then the caller gets botocore's `ReadTimeoutError` instead
of the answer. Because the error is raised inside botocore, botocore's
own retry machinery is what resends (when SDK retries are on); with SDK retries
off, the application sees the timeout and decides.

The schedule is seeded, so the same requests are lost on every run and on
every backend (`helpers.schedule.Schedule` decides).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ReadTimeoutError

from .schedule import Schedule

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


class LostResponses(Schedule):
    """Which write responses get lost.

    >>> LostResponses(at=[0, 2]).decide_many(4)        # the 1st and 3rd are lost
    [True, False, True, False]
    >>> LostResponses(p=0.5, seed=1).decide_many(6)   # seeded: the same on every run
    [True, False, False, True, True, True]
    """

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
        self._installed: list[tuple[Any, Any]] = []

    @property
    def lost(self) -> list[int]:
        """Which write requests (numbered from 0, in order of sending) lost their response."""
        return self.picked

    def install(self, target: Any) -> LostResponses:
        """Lose responses of `target` (a boto3 client, resource or Table) from now on; returns self."""
        client = _client_of(target)
        endpoint = client._endpoint
        original = endpoint._do_get_response

        def do_get_response(request: Any, operation_model: Any, context: Any) -> Any:
            if operation_model.name not in self.operations:
                return original(request, operation_model, context)
            lose = self.decide()
            result = original(request, operation_model, context)
            _answer, error = result  # ((http_response, parsed), None), or (None, exception)
            if lose and error is None:  # DynamoDB answered (and applied the write); the answer is lost
                return (None, ReadTimeoutError(endpoint_url=request.url))
            return result

        endpoint._do_get_response = do_get_response
        self._installed.append((endpoint, original))
        return self

    def uninstall(self) -> None:
        """Give every installed client its own answers back (the last installed first)."""
        while self._installed:
            endpoint, original = self._installed.pop()
            endpoint._do_get_response = original


def _client_of(target: Any) -> Any:
    if hasattr(target, "_endpoint"):
        return target
    if hasattr(target, "meta") and hasattr(target.meta, "client"):
        return target.meta.client
    raise TypeError(f"expected a boto3 client, resource or Table, got {type(target).__name__}")
