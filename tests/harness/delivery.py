"""Delivering a schedule: lost responses armed per delivery, bursts on threads, the caller's final retry.

`deliver_all` sends each delivery of a schedule through the pattern's `send(op)`, arming `Faults` so that
exactly the deliveries marked lost lose their response; a burst sends its copies at one instant
(`helpers.concurrency.race`). An operation whose caller got no answer is sent once more at the end, as a
client's retry loop would. `failure_answers` installs one schedule of DynamoDB's own failure answers on
the clients a pattern writes through, for as long as the `with` block runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError

from helpers import LostResponses
from helpers.concurrency import race
from helpers.dynamodb_errors import ErrorResponses

SUCCESS = {"applied", "already applied", "applied or replayed", "created", "already created"}
NON_RETRYABLE = {"StaleUpdate", "OrderConflict"}   # definitive refusals: the caller does not try again


class Faults:
    """One `LostResponses` installed once on a table's client, re-armed before each delivery.

    `arm(k)` loses the response of the k-th write from now (0: the next one); `arm(None)` loses none.
    Installing once per table (not once per example) keeps an example to a few milliseconds.
    """

    def __init__(self, table: Any) -> None:
        self.lost = LostResponses().install(table)

    def arm(self, k: int | None) -> None:
        self.lost.at = frozenset() if k is None else frozenset([self.lost.sent + k])


def outcome_of(send: Callable[[], Any]) -> Any:
    """What a caller saw: the answer, "timeout" for a lost response, or an error's name/code."""
    try:
        return send()
    except ReadTimeoutError:
        return "timeout"
    except ClientError as error:
        return error.response["Error"]["Code"]
    except Exception as error:  # a refusal the lesson raises (StaleUpdate, OrderConflict, ...)
        return type(error).__name__


def deliver_all(schedule: list[tuple[int, bool, int]], faults: Faults, send: Callable[[int], Any],
                before: Callable[[int], None] = lambda op: None,
                after: Callable[[int], None] = lambda op: None) -> dict[int, list]:
    """Deliver `schedule` through `send(op)`; then one more try for every op that got no answer.

    Returns each op's answers, in order. `before(op)` and `after(op)` run around each delivery (a burst
    counts as one).
    """
    answers: dict[int, list] = {op: [] for op, *_ in schedule}

    def one(op):
        before(op)
        answers[op].append(outcome_of(lambda: send(op)))
        after(op)

    for op, lost, copies in schedule:
        if copies == 1:
            faults.arm(0 if lost else None)
            one(op)
        else:
            faults.arm(None)
            before(op)
            answers[op].extend(race(lambda i: outcome_of(lambda: send(op)), copies))
            after(op)
    faults.arm(None)
    for op, seen in answers.items():
        if not any(a in SUCCESS or a in NON_RETRYABLE for a in seen):   # timeouts or errors only
            one(op)                                                     # the caller's last retry
    return answers


@contextmanager
def failure_answers(schedule: list[str | None], *targets: Any) -> Iterator[ErrorResponses]:
    """DynamoDB answers the n-th write through any of `targets` with `schedule[n]` (None: its own answer; so does a
    write whose operation can never get that answer: TransactionInProgress on a single-item write).

    One schedule across every target, in the order the writes are sent; uninstalled when the block ends.
    """
    errors = ErrorResponses(at={n: kind for n, kind in enumerate(schedule) if kind}, impossible="skip")
    for target in targets:
        errors.install(target)
    try:
        yield errors
    finally:
        errors.uninstall()
