"""What DynamoDB answered each request, as the caller's side of the wire saw it -- and what botocore makes of it.

`watch_answers(target)` records every write request a boto3 client sends, botocore's own
resends included: the attempt number, the virtual time it was answered, the HTTP status,
the error code and the `CancellationReasons` codes -- or, when no answer arrived (a lost
response), the exception that ended the attempt. Install it **after** `DynamoDBErrors` or
`LostResponses`, so it sees their answers.

`answer_of(error)` reads the same fields from a `ClientError` the application caught, and
`botocore_resends(code, status)` asks botocore's standard retry mode itself whether it would
resend an answer -- for the answers a notebook cannot produce on a local backend.

>>> botocore_resends("ProvisionedThroughputExceededException", 400)
True
>>> botocore_resends("ServiceUnavailable", 503), botocore_resends("ValidationException", 400)
(True, False)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .clock import VirtualClock
from .faults import WRITES, _client_of


@dataclass(frozen=True)
class Answer:
    """One request on the wire, and what came back."""

    operation: str               # e.g. "UpdateItem"
    attempt: int                 # 1 for the application's call, 2, 3 ... for botocore's own resends
    status: int | None           # the HTTP status, or None when no answer arrived
    code: str                    # "OK", DynamoDB's error code, or the exception (e.g. "ReadTimeoutError")
    reasons: tuple[str, ...]     # CancellationReasons codes, one per action (transactions only)
    t: float                     # virtual time when the answer came back

    def __str__(self) -> str:
        status = "no answer" if self.status is None else str(self.status)
        reasons = f" [{', '.join(self.reasons)}]" if self.reasons else ""
        return f"{status} {self.code}{reasons}"


class AnswerLog:
    """The answers one client got, in order; `uninstall()` stops recording."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self._installed: list[tuple[Any, Any]] = []

    @property
    def sends(self) -> int:
        """How many requests went on the wire."""
        return len(self.answers)

    def uninstall(self) -> None:
        while self._installed:
            endpoint, original = self._installed.pop()
            endpoint._do_get_response = original


def watch_answers(target: Any, clock: VirtualClock, *, on_answer: Callable[[Answer], None] | None = None,
                  operations: frozenset[str] = WRITES) -> AnswerLog:
    """Record every answer `target` (a client, resource or Table) gets to a write; returns the log."""
    log = AnswerLog()
    client = _client_of(target)
    endpoint = client._endpoint
    inner = endpoint._do_get_response

    def do_get_response(request: Any, operation_model: Any, context: Any) -> Any:
        result = inner(request, operation_model, context)
        if operation_model.name in operations:
            response, error = result
            attempt = int((context or {}).get("retries", {}).get("attempt", 1))
            if error is not None:
                answer = Answer(operation_model.name, attempt, None, type(error).__name__, (), clock.now())
            else:
                http, parsed = response
                code = parsed.get("Error", {}).get("Code", "OK") if http.status_code >= 300 else "OK"
                reasons = tuple(r.get("Code", "None") for r in parsed.get("CancellationReasons", []))
                answer = Answer(operation_model.name, attempt, http.status_code, code, reasons, clock.now())
            log.answers.append(answer)
            if on_answer is not None:
                on_answer(answer)
        return result

    endpoint._do_get_response = do_get_response
    log._installed.append((endpoint, inner))
    return log


def answer_of(error: ClientError) -> tuple[str, int, tuple[str, ...]]:
    """(error code, HTTP status, CancellationReasons codes) of a `ClientError` the application caught."""
    response = error.response
    reasons = tuple(r.get("Code", "None") for r in response.get("CancellationReasons", []))
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"], reasons


@functools.lru_cache(maxsize=1)
def _dynamodb_model() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("dynamodb")


def botocore_resends(code: str, status: int, operation: str = "TransactWriteItems") -> bool:
    """Would botocore's standard retry mode resend an answer with this error code and HTTP status?"""
    from botocore.awsrequest import AWSResponse
    from botocore.retries.standard import RetryContext, StandardRetryConditions

    model = _dynamodb_model().operation_model(operation)
    http = AWSResponse("https://dynamodb.invalid", status, {}, None)
    context = RetryContext(attempt_number=1, operation_model=model, parsed_response={"Error": {"Code": code}},
                           http_response=http)
    return bool(StandardRetryConditions(max_attempts=3).is_retryable(context))
