"""Sending again: what a caller does when it is told to, or when it got no answer.

Two callers. `Resends.until_answered` is the load tests' caller: it sends again only on DynamoDB's "nothing
was written, send it again" answers to concurrent transactions (TransactionConflict, TransactionInProgress)
and counts how often. `resend_until_told` is the failure-answer tests' caller: it resends the same request
after every error, a bounded number of times, until it gets an answer it accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
