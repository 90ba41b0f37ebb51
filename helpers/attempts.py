"""See every attempt a boto3 client sends, including botocore's own retries.

An application calls `update_item` once; with SDK retries on, botocore may
send it several times. `watch_attempts` calls you back after each attempt, with
what the caller side of the wire got: an answer, or an error such as a lost
response (install it **after** `LostResponses`, so it sees the lost ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .faults import _client_of


@dataclass(frozen=True)
class Attempt:
    """One request on the wire."""

    operation: str        # e.g. "UpdateItem"
    number: int           # 1 for the application's own call, 2, 3 … for botocore's retries
    answered: bool        # an HTTP answer came back (success or a DynamoDB error)
    error: str | None     # the exception the attempt ended with, e.g. "ReadTimeoutError"


def watch_attempts(target: Any, on_attempt: Callable[[Attempt], None], *, operations: set[str] | None = None) -> None:
    """Call `on_attempt(attempt)` after each request `target` (client, resource or Table) sends."""
    if not callable(on_attempt):
        raise TypeError(f"on_attempt must be callable, got {type(on_attempt).__name__}")
    client = _client_of(target)
    endpoint = client._endpoint
    inner = endpoint._do_get_response

    def do_get_response(request: Any, operation_model: Any, context: Any) -> Any:
        result = inner(request, operation_model, context)
        if operations is None or operation_model.name in operations:
            answer, error = result
            number = int((context or {}).get("retries", {}).get("attempt", 1))
            on_attempt(Attempt(operation_model.name, number, error is None,
                               None if error is None else type(error).__name__))
        return result

    endpoint._do_get_response = do_get_response
