"""DynamoDB's own failure answers, injected: conflicts, throttling, 500s.

Neither moto nor DynamoDB Local ever cancels a transaction for a conflict,
throttles, or fails with a 500 on its own; AWS does. An `ErrorResponses`
schedule makes chosen write requests get one of those answers instead, shaped
as DynamoDB sends it (error code, message, HTTP status, `CancellationReasons`),
so a handler can be tested against every answer a write can get.

The answer is injected inside botocore, where the HTTP response would arrive:
botocore parses it with its own JSON parser, and its standard retry mode
classifies it exactly as it classifies AWS's answer (it resends throttling,
`TransactionInProgressException` and 500s by itself; it never resends a
cancelled transaction). Nothing here depends on the backend.

| kind                    | what the caller gets                         | applied?  |
|-------------------------|----------------------------------------------|-----------|
| `CONFLICT`              | TransactionCanceledException (400), one      | no        |
|                         | reason per action, `TransactionConflict` at  |           |
|                         | `conflict_item`; TransactionConflictException |           |
|                         | (400) for a single-item write                |           |
| `THROTTLED`             | ProvisionedThroughputExceededException (400) | no        |
| `THROTTLING`            | ThrottlingException (400)                    | no        |
| `IN_PROGRESS`           | TransactionInProgressException (400), only   | no        |
|                         | to TransactWriteItems                        |           |
| `IN_PROGRESS_APPLIED`   | TransactionInProgressException (400), only   | yes       |
|                         | to TransactWriteItems, after the table       |           |
|                         | applied it                                   |           |
| `ERROR_500_NOT_APPLIED` | InternalServerError (500)                    | no        |
| `ERROR_500_APPLIED`     | InternalServerError (500), after the table   | yes       |
|                         | applied the write                            |           |

The caller of a 500 cannot tell the two 500s apart, nor the caller of a
TransactionInProgressException the two `IN_PROGRESS` kinds: that is the point.

`TransactionInProgressException` says that another request with the same
`ClientRequestToken` is still in progress -- a request that may yet commit. So
it is an answer to `TransactWriteItems` alone (the only write with a token):
a schedule that puts it on another operation is refused with a ValueError
(`kinds_for(operation)` lists the kinds an operation can get, and a seeded
draw only picks among those). `IN_PROGRESS_APPLIED` is that in-flight original
committing: the table applies the transaction (with its token, so a resend
with the same token is answered success without a second effect), and the
caller is told TransactionInProgressException.

`install(target)` puts the schedule on the client's wire (`helpers.wire`), outside any `LostResponses`
and inside the watchers; `uninstall()` takes it off. For the application's side, `answer_of(error)`
reads (code, HTTP status, CancellationReasons) from a caught `ClientError`, and `botocore_resends(code,
status)` asks botocore's standard retry mode itself whether it would resend an answer -- for the answers
a notebook cannot produce on a local backend. (Each answer on the wire: `helpers.wire.watch_answers`.)

Sources for the shapes:
- TransactWriteItems errors and CancellationReasons:
  https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
- Common and DynamoDB errors (throttling, InternalServerError, TransactionConflict):
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
- Transaction conflict handling:
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html
- TransactionInProgressException ("The transaction with the given request token is already in
  progress"; retries should reach at least 5 s after the first attempt):
  https://docs.aws.amazon.com/botocore/latest/reference/services/dynamodb/client/exceptions/TransactionInProgressException.html
- The exceptions as botocore models them (TransactionCanceledException's causes, TransactionConflictException):
  https://docs.aws.amazon.com/botocore/latest/reference/services/dynamodb/client/exceptions/TransactionCanceledException.html
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from .schedule import Schedule
from .wire import FAILURE_ANSWER, WRITES, Call, Layer, Result

CONFLICT = "TransactionConflict"
THROTTLED = "ProvisionedThroughputExceeded"
THROTTLING = "Throttling"
IN_PROGRESS = "TransactionInProgress"
IN_PROGRESS_APPLIED = "TransactionInProgress (the original commits)"
ERROR_500_NOT_APPLIED = "InternalServerError (not applied)"
ERROR_500_APPLIED = "InternalServerError (applied)"
KINDS = (CONFLICT, THROTTLED, THROTTLING, IN_PROGRESS, ERROR_500_NOT_APPLIED, ERROR_500_APPLIED)
ALL_KINDS = KINDS + (IN_PROGRESS_APPLIED,)  # KINDS keeps its six for the tests that draw from it
# Two more answers the service model lists that a lesson's handler can meet, neither applied, both resent by
# botocore's standard mode: the account's request limit (on-demand), and a 503. Drawn by the checker's exhaustive
# phase (helpers.catalogue lists which answers it draws, and why not the others); not in ALL_KINDS, so the tests
# and notebooks that iterate over the answer table keep theirs.
REQUEST_LIMIT = "RequestLimitExceeded"
UNAVAILABLE = "ServiceUnavailable (503)"
MORE_KINDS = (REQUEST_LIMIT, UNAVAILABLE)
APPLIED = frozenset({ERROR_500_APPLIED, IN_PROGRESS_APPLIED})  # the table applied the write first
TRANSACTION_ONLY = frozenset({IN_PROGRESS, IN_PROGRESS_APPLIED})  # answers only TransactWriteItems gets

# The answer table: every failure answer a write can get, once, as (kind, conflict_item) -- the conflict
# on a transaction's last action (-1) and on its first (0). Tests and checkers iterate over it.
ANSWERS = tuple((kind, -1) for kind in ALL_KINDS) + ((CONFLICT, 0),)

# One kind for each different thing a failure answer can mean to a handler, the ones helpers.checker draws
# from: nothing written and botocore does not resend (CONFLICT); nothing written and botocore resends
# (THROTTLED; THROTTLING means the same); a 500 after the write applied, and one before. The two
# TransactionInProgress kinds are left out: only TransactWriteItems gets them, so they need a schedule of
# their own (the checker keeps one, on transactions only).
DISTINCT_KINDS = (CONFLICT, THROTTLED, ERROR_500_APPLIED, ERROR_500_NOT_APPLIED)


def kinds_for(operation: str, kinds: Iterable[str] = ALL_KINDS) -> tuple[str, ...]:
    """The kinds of `kinds` that DynamoDB can answer `operation` with.

    >>> kinds_for("UpdateItem") == tuple(k for k in ALL_KINDS if k not in TRANSACTION_ONLY)
    True
    >>> IN_PROGRESS_APPLIED in kinds_for("TransactWriteItems")
    True
    """
    return tuple(k for k in kinds if operation == "TransactWriteItems" or k not in TRANSACTION_ONLY)

_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_SHAPES = {  # kind -> (HTTP status, error code, message), as DynamoDB words them
    THROTTLED: (400, "ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded. "
                "Consider increasing your provisioning level with the UpdateTable API."),
    THROTTLING: (400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."),
    IN_PROGRESS: (400, "TransactionInProgressException",
                  "The transaction with the given request token is already in progress."),
    IN_PROGRESS_APPLIED: (400, "TransactionInProgressException",
                          "The transaction with the given request token is already in progress."),
    ERROR_500_NOT_APPLIED: (500, "InternalServerError",
                           "Internal server error"),
    ERROR_500_APPLIED: (500, "InternalServerError", "Internal server error"),
    REQUEST_LIMIT: (400, "RequestLimitExceeded",
                    "Throughput exceeds the current throughput limit for your account. Please contact AWS Support at "
                    "https://aws.amazon.com/support request a limit increase"),
    UNAVAILABLE: (503, "ServiceUnavailable", "The service is currently unavailable or busy."),
}


class ErrorResponses(Schedule, Layer):
    """Which write requests get which of DynamoDB's failure answers.

    `at` maps the n-th write request (0, 1, 2, ... in order of sending, retries included)
    to a kind; with `p` > 0 the other requests get a kind drawn from `kinds` with
    probability `p`, from a seeded generator (among the kinds the request's operation can get:
    `kinds_for`). A TransactionInProgress kind named by `at` for a request that is not a
    TransactWriteItems raises ValueError when that request is sent: DynamoDB never answers it so --
    or, with `impossible="skip"` (for schedules generated without knowing each write's operation),
    that request gets DynamoDB's own answer.

    >>> ErrorResponses(at={1: CONFLICT}).decide_many(3)
    [None, 'TransactionConflict', None]
    >>> ErrorResponses(p=0.5, seed=3, kinds=(THROTTLING,)).decide_many(4)
    ['Throttling', 'Throttling', None, 'Throttling']
    """

    no_fault = None                    # DynamoDB's own answer
    rank = FAILURE_ANSWER              # on the wire (helpers.wire): outside LostResponses, inside the watchers
    must_get_through = "a request"

    def __init__(
        self,
        *,
        at: Mapping[int, str] | None = None,
        p: float = 0.0,
        seed: int = 0,
        kinds: Iterable[str] = KINDS,
        operations: Iterable[str] = WRITES,
        conflict_item: int = -1,
        impossible: str = "raise",
    ) -> None:
        at = dict(at or {})
        if impossible not in ("raise", "skip"):
            raise ValueError(f"impossible is 'raise' or 'skip', got {impossible!r}")
        self.impossible = impossible
        self.kinds = tuple(kinds)
        for kind in list(at.values()) + list(self.kinds):
            if kind not in ALL_KINDS + MORE_KINDS:
                raise ValueError(f"unknown answer {kind!r}: use one of {', '.join(ALL_KINDS)}")
        if "TransactWriteItems" not in set(operations) and TRANSACTION_ONLY & (set(at.values()) | set(self.kinds)):
            raise ValueError("TransactionInProgressException answers only TransactWriteItems (a ClientRequestToken "
                             "still in progress), and these operations leave it out")
        super().__init__(p=p, seed=seed, at=at)   # `sent`: write requests seen so far
        self.operations = frozenset(operations)
        self.conflict_item = conflict_item
        self.answered: list[tuple[int, str, str]] = []  # (n, operation, kind)

    def fault(self, n: int) -> str | None:
        """The kind for picked request `n`: the one `at` names, or one drawn from `kinds`."""
        return self._kind(n, None)

    def _kind(self, n: int, operation: str | None) -> str | None:
        if n in self.at:
            return self.at[n]
        kinds = kinds_for(operation, self.kinds) if operation else self.kinds
        return self._rng.choice(kinds) if kinds else None

    def decide(self, operation: str | None = None) -> str | None:
        """The kind for the next write request (of `operation`, if given), or None for DynamoDB's own answer.

        A seeded draw picks among the kinds `operation` can get. Raises ValueError if `at` names a
        TransactionInProgress kind for an operation other than TransactWriteItems.
        """
        with self._lock:
            n = self._number_next()
            if n is None:
                return self.no_fault
            kind = self._kind(n, operation)
        if kind in TRANSACTION_ONLY and operation not in (None, "TransactWriteItems"):
            if self.impossible == "skip":
                return self.no_fault          # a generated schedule: this write gets DynamoDB's own answer
            raise ValueError(f"write request {n} is a {operation}: DynamoDB answers TransactionInProgressException "
                             "only to TransactWriteItems (a ClientRequestToken still in progress)")
        return kind

    def on_wire(self, call: Call) -> Result:
        """Answer the request by this schedule: DynamoDB's own answer, or the kind it picks."""
        if call.operation not in self.operations:
            return call.send()
        kind = self.decide(call.operation)
        if kind is None:
            return call.send()
        if kind in APPLIED:
            result = call.send()
            if result[1] is not None or result[0][0].status_code >= 300:
                return result  # DynamoDB refused it anyway: that answer stands
        with self._lock:
            self.answered.append((self.sent - 1, call.operation, kind))
        return self._answer(kind, call)

    def _answer(self, kind: str, call: Call) -> Result:
        from botocore.awsrequest import AWSResponse

        request, operation_model, endpoint = call.request, call.operation_model, call.endpoint
        parser = endpoint._response_parser_factory.create_parser(operation_model.service_model.protocol)

        if kind == CONFLICT:
            status, body = 400, self._conflict_body(request, operation_model.name)
        else:
            status, code, message = _SHAPES[kind]
            body = {"__type": _ERROR_PREFIX + code, "message": message}
        raw = json.dumps(body).encode()
        headers = {"x-amzn-requestid": "INJECTED", "content-type": "application/x-amz-json-1.0",
                   "content-length": str(len(raw))}
        http_response = AWSResponse(request.url, status, headers, _Raw(raw))
        response_dict = {"headers": headers, "status_code": status, "body": raw}
        parsed = parser.parse(response_dict, operation_model.output_shape)
        endpoint._add_modeled_error_fields(response_dict, parsed, operation_model, parser)  # CancellationReasons
        return (http_response, parsed), None

    def _conflict_body(self, request: Any, operation: str) -> dict[str, Any]:
        if operation != "TransactWriteItems":
            return {"__type": _ERROR_PREFIX + "TransactionConflictException",
                    "message": "Transaction is ongoing for the item"}
        actions = len(json.loads(request.body or b"{}").get("TransactItems", [])) or 1
        conflict = self.conflict_item % actions
        reasons = [{"Code": "None"} for _ in range(actions)]
        reasons[conflict] = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        names = ", ".join(r["Code"] for r in reasons)
        return {"__type": _ERROR_PREFIX + "TransactionCanceledException",
                "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{names}]",
                "CancellationReasons": reasons}


class _Raw:
    """The smallest stand-in for urllib3's response body that botocore's AWSResponse reads."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, *_args: Any, **_kwargs: Any) -> Any:
        yield self._data


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
    """Would botocore's standard retry mode resend an answer with this error code and HTTP status?

    >>> botocore_resends("ProvisionedThroughputExceededException", 400)
    True
    >>> botocore_resends("ServiceUnavailable", 503), botocore_resends("ValidationException", 400)
    (True, False)
    """
    from botocore.awsrequest import AWSResponse
    from botocore.retries.standard import RetryContext, StandardRetryConditions

    model = _dynamodb_model().operation_model(operation)
    http = AWSResponse("https://dynamodb.invalid", status, {}, None)
    context = RetryContext(attempt_number=1, operation_model=model, parsed_response={"Error": {"Code": code}},
                           http_response=http)
    return bool(StandardRetryConditions(max_attempts=3).is_retryable(context))
