"""`resender()`: send a write again while DynamoDB wrote nothing, or cannot say whether it did.

Notebook 06's handler sends each of its writes through the function this returns:

    with_resends = resender(db.clock, attempts=4)
    with_resends(lambda: records.put_item(...))

It calls the write; on an answer that means *nothing was written* (a conflict, throttling, a transaction
cancelled only for those reasons) or *unknown* (a 500, or `TransactionInProgressException`, which only a
`TransactWriteItems` whose `ClientRequestToken` is still in flight can get) it backs off on the virtual
clock and sends it again, at most `attempts` times; anything else -- a failed condition, a validation
error -- is raised at once, as is the last answer when the attempts are used up.

A resend after *unknown* is safe only because each write of the handler recognises its own earlier
success (the claim its lease token, the debit its marker, the completion its response); the resend is a
new call, with a new `ClientRequestToken`. Which answer means what is notebook 08's subject.

The backoff is botocore's own for DynamoDB from 1.44: 25 ms, doubling, capped at 20 s (without jitter, so
the virtual clock reads the same on every run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from .validation import BadInput

T = TypeVar("T")

RESEND = frozenset({"TransactionConflictException", "ProvisionedThroughputExceededException", "ThrottlingException",
                    "RequestLimitExceeded", "TransactionInProgressException", "InternalServerError"})
RESEND_REASONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})


def worth_resending(error: ClientError) -> bool:
    """True if `error` means nothing was written (or cannot say): a conflict, a throttle, a 500, a token in flight."""
    code = error.response["Error"]["Code"]
    reasons = {r.get("Code") for r in error.response.get("CancellationReasons", [])}
    cancelled_for_nothing = (code == "TransactionCanceledException" and bool(reasons & RESEND_REASONS)
                             and "ConditionalCheckFailed" not in reasons)
    return code in RESEND or cancelled_for_nothing


def resender(clock: Any, attempts: int) -> Callable[[Callable[[], T]], T]:
    """`with_resends(write)`: call `write()`, sending it again while `worth_resending`, at most `attempts` times."""
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        raise BadInput(f"attempts must be a whole number of at least 1, got {attempts!r}")

    def with_resends(write: Callable[[], T]) -> T:
        for attempt in range(1, attempts + 1):
            try:
                return write()
            except ClientError as error:
                if attempt == attempts or not worth_resending(error):
                    raise
                clock.advance(min(0.025 * 2 ** (attempt - 1), 20))
        raise AssertionError("unreachable")  # pragma: no cover

    return with_resends
