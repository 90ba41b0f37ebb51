"""Notebook 03's exercise: a debit that is safe to retry.

The checker runs the reader's function against the real backend -- under seeded
lost-response schedules, concurrent duplicates and bad input, then through the
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
from ..tables import fresh_table, open_wallet, read_balance, read_item
from .display import shown_by_line
from .verdict import Counterexample, Specification, Verdict, answer, debit_subject, raised

Debit = Callable[[Any, str, int, str], Any]


def _pay(table: Any, debit: Debit, wallet: str, amount: int, request_id: str, attempts: int = 6) -> None:
    for _ in range(attempts):
        try:
            debit(table, wallet, amount, request_id)
            return
        except ReadTimeoutError:
            continue


@shown_by_line
def check_retry_safe_debit(debit: Debit, *, db: Backend | None = None, schedules: int = 12) -> Verdict:
    """Is `debit(table, wallet_id, amount, request_id)` safe to retry? Returns a `Verdict`."""
    db = db or connect()
    table = fresh_table(db, "exercise-debit")
    start, amount, payments = 100, 5, 4
    for seed in range(schedules):
        table = fresh_table(db, "exercise-debit")
        open_wallet(table, "w", start)
        faults = LostResponses(p=0.4, seed=seed).install(table)
        ids = RequestIds(seed)
        try:
            for _ in range(payments):
                _pay(table, debit, "w", amount, ids.next())
        except Exception as error:  # the reader's code raised: that is the counterexample
            return Verdict(False, f"with seed {seed} your debit raised {type(error).__name__}: {error}")
        expected, actual = start - amount * payments, read_balance(table, "w")
        if actual != expected:
            return Verdict(
                False,
                f"{payments} payments of {amount} from {start}, with the responses of write requests "
                f"{faults.lost} lost (seed {seed}, each retry resent with the same request ID): "
                f"expected balance {expected}, your debit left {actual}.",
            )
    table = fresh_table(db, "exercise-debit")
    open_wallet(table, "w", start)
    outcomes = race(lambda i: debit(table, "w", amount, "same-request"), 16)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    if errors or read_balance(table, "w") != start - amount:
        detail = f"raised {type(errors[0]).__name__}" if errors else f"left {read_balance(table, 'w')}"
        return Verdict(False, f"16 concurrent copies of one request: expected balance {start - amount}, "
                              f"your debit {detail}.")
    for bad in (-5, 2.5):
        try:
            debit(table, "w", bad, "bad-input")
        except ValueError:
            continue
        except Exception as error:
            return Verdict(False, f"amount {bad!r} should raise ValueError, got {type(error).__name__}")
        return Verdict(False, f"amount {bad!r} was accepted; bad input should raise ValueError and write nothing.")
    if read_balance(table, "w") != start - amount:
        return Verdict(False, "bad input changed the balance; it should write nothing.")
    result = answer(lambda: debit(table, "nobody", amount, "to-nobody"))
    if not isinstance(result, LookupError) or read_item(table, {"pk": "nobody"}) is not None:
        saw = raised(result) if isinstance(result, Exception) else repr(result)
        return Verdict(False, "a debit from a wallet that does not exist should raise WalletNotFound (a "
                              f"LookupError) and write nothing; your debit answered {saw}.")
    held = Specification(lambda: debit_subject(debit, fresh_table(db, "exercise-debit"), db), "debit",
                         keys_reused=False, one_at_a_time=True)
    try:
        held()
    except Counterexample as found:
        return Verdict(False, str(found))
    return Verdict(True, f"{schedules} lost-response schedules, 16 concurrent duplicates, bad input and a missing "
                         f"wallet all handled. {held.passed()}")
