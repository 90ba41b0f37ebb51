"""Notebook 03's exercise: a debit that is safe to retry.

The checker runs the reader's function against the real backend -- under seeded
lost-response schedules, a copy of the same request landing between the
debit's read and its write (run on the wire, `helpers.wire.Between`: the same
on every run and every backend), concurrent duplicates and bad input, then through the
collection's checker (`helpers.checker`: generated histories with lost responses
and DynamoDB's failure answers injected, one request at a time, since a
`last_request_id` debit gives up *once* under ABA on purpose, as notebook 04
shows) -- and returns a `Verdict`: a pass, or **one concrete counterexample**
(the schedule, the expected and the actual balance; or the broken property and
the shortest history). It never raises for a wrong answer, so an unsolved
exercise does not stop "Run All" in a workshop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ReadTimeoutError

from ..backends import Backend, connect
from ..concurrency import race
from ..faults import LostResponses
from ..ids import RequestIds
from ..tables import fresh_table, read_balance
from ..wire import Between
from .specified import Specification, debit_subject
from .verdict import Counterexample, Verdict, answer, expect_bad_debits, said, verdict, wallet_table

Debit = Callable[[Any, str, int, str], Any]


def _pay(table: Any, debit: Debit, wallet: str, amount: int, request_id: str, attempts: int = 6) -> None:
    for _ in range(attempts):
        try:
            debit(table, wallet, amount, request_id)
            return
        except ReadTimeoutError:
            continue


def check_retry_safe_debit(debit: Debit, *, db: Backend | None = None, schedules: int = 12) -> Verdict:
    """Is `debit(table, wallet_id, amount, request_id)` safe to retry? Returns a `Verdict`."""
    db = db or connect()
    start, amount, payments = 100, 5, 4

    def new_wallet() -> Any:
        return wallet_table(db, "exercise-debit", "w", start)

    def lost_responses() -> None:
        for seed in range(schedules):
            table = new_wallet()
            faults = LostResponses(p=0.4, seed=seed).install(table)
            ids = RequestIds(seed)
            try:
                for _ in range(payments):
                    _pay(table, debit, "w", amount, ids.next())
            except Exception as error:  # the reader's code raised: that is the counterexample
                raise Counterexample(f"with seed {seed} your debit raised {type(error).__name__}: {error}") from None
            expected, actual = start - amount * payments, read_balance(table, "w")
            if actual != expected:
                raise Counterexample(f"{payments} payments of {amount} from {start}, with the responses of write "
                                     f"requests {faults.lost} lost (seed {seed}, each retry resent with the same "
                                     f"request ID): expected balance {expected}, your debit left {actual}. A lost "
                                     "response means the write landed: its resend must find the request ID stamped "
                                     "by that same write.")

    def copy_in_between() -> None:
        table = new_wallet()
        other = db.table("exercise-debit")                # the copy's own client: another Lambda instance
        copy = Between(lambda: answer(lambda: debit(other, "w", amount, "pay-1"))).install(table)  # your own debit
        result = answer(lambda: debit(table, "w", amount, "pay-1"))
        copy.uninstall()
        if read_balance(table, "w") != start - amount:
            raise Counterexample(
                f"a payment of {amount} from {start} (request pay-1); just before your debit's write reached the "
                "table, another copy of pay-1 (a resend, handled by another Lambda instance) was applied: expected "
                f"balance {start - amount}; your debit answered {said(result)} and left {read_balance(table, 'w')}. "
                "A copy can land between a read and a write: the check for the request ID belongs in the write's "
                "own condition.")

    def concurrent() -> None:
        table = new_wallet()
        outcomes = race(lambda i: debit(table, "w", amount, "same-request"), 16)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if errors or read_balance(table, "w") != start - amount:
            detail = f"raised {type(errors[0]).__name__}" if errors else f"left {read_balance(table, 'w')}"
            raise Counterexample(f"16 concurrent copies of one request: expected balance {start - amount}, "
                                 f"your debit {detail}.")

    held = Specification.staged(lambda: debit_subject(debit, fresh_table(db, "exercise-debit"), db), name="your debit",
                                keys_reused=False, one_at_a_time=True)
    return verdict(
        [lost_responses, copy_in_between, concurrent, lambda: expect_bad_debits(new_wallet(), debit, "w", "check"),
         held],
        passed=lambda: f"{schedules} lost-response schedules, a copy between your read and your write, 16 "
                       f"concurrent duplicates, bad input and a missing "
                       f"wallet all handled. {held.passed()}",
    )
