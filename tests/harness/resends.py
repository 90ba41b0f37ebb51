"""Sending again: what a caller does when it is told to, or when it got no answer.

Two callers, and one check. `Resends.until_answered` is the load tests' caller: it sends again only on
DynamoDB's "nothing was written, send it again" answers to concurrent transactions (TransactionConflict,
TransactionInProgress) and counts how often. `resend_until_told` is the failure-answer tests' caller: it
resends the same request after every error, a bounded number of times, until it gets an answer it accepts.
`answer_then_resend` checks a debit function under one failure answer and the resend that follows (05's and
08's lessons).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

SEND_AGAIN = {"TransactionConflict", "TransactionInProgressException"}
MAX_SENDS = 200


def must_send_again(error: Exception) -> bool:
    """DynamoDB's "nothing was written, send it again" answers to concurrent transactions."""
    if not isinstance(error, ClientError):
        return False
    code = error.response["Error"]["Code"]
    reasons = {r.get("Code") for r in error.response.get("CancellationReasons", [])} - {"None"}
    return code in SEND_AGAIN or (code == "TransactionCanceledException" and bool(reasons) and reasons <= SEND_AGAIN)


class Resends:
    """Counts the sends a caller had to repeat because DynamoDB said "send again"."""

    def __init__(self) -> None:
        self.count = 0

    def until_answered(self, send: Callable[[], Any]) -> Any:
        for _ in range(MAX_SENDS):
            try:
                return send()
            except ClientError as error:
                if not must_send_again(error):
                    raise
                self.count += 1  # racy increments are fine: a count for the printout, not an assertion
        raise AssertionError(f"still told to send again after {MAX_SENDS} sends")


def resend_until_told(send: Callable[[], Any], schedule: list[Any],
                      accept: Callable[[Any], bool] = lambda answer: True) -> list[Any]:
    """Call `send()` until it gives an answer `accept` takes, resending after every error; the answers it gave.

    At most ``len(schedule) + 2`` sends: by then every injected answer of `schedule` is used up.
    """
    answers = []
    for _ in range(len(schedule) + 2):
        try:
            answer = send()
        except ClientError:
            continue
        answers.append(answer)
        if accept(answer):
            break
    return answers


def answer_then_resend(debit: Callable[..., Any], table: Any, wallet_id: str, read_balance: Callable[..., int],
                       kind: str, conflict_item: int | None, request_id: str) -> None:
    """A debit of 10 from a wallet of 100, its first send answered `kind` (botocore's retries off: the handler sees
    the answer itself), then the same request resent.

    Only the request's own failed condition means "already applied": the answer must reach the caller as an error
    (never read as a duplicate, nor as a missing wallet), have written only what `kind` says, and the resend must
    be told success with the debit applied once in all.
    """
    from helpers.dynamodb_errors import APPLIED, ErrorResponses

    from .delivery import SUCCESS

    errors = ErrorResponses(at={0: kind}, conflict_item=conflict_item).install(table)
    try:
        with pytest.raises(ClientError) as raised:
            debit(table, wallet_id, 10, request_id)
    finally:
        errors.uninstall()
    assert raised.value.response["Error"]["Code"] != "ConditionalCheckFailedException"
    assert read_balance(table, wallet_id) == (90 if kind in APPLIED else 100)
    assert debit(table, wallet_id, 10, request_id) in SUCCESS
    assert read_balance(table, wallet_id) == 90
