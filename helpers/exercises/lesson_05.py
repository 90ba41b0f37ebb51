"""Notebook 05's exercise: a debit that remembers every request, also across lost responses.

The reader writes `debit(table, wallet_id, amount, request_id)` on notebook 05's
table (the wallet is ``pk=wallet_id, sk="wallet"``; markers may live beside it).
It answers "applied" or "already applied", and raises `WalletNotFound` for a
wallet that does not exist, writing nothing. The checker delivers requests in
ABA orders (a late retry after other requests), the same orders under seeded
lost responses, sixteen concurrent copies, and bad input. Then it holds the debit
to the collection's specification (`helpers.checker`): generated histories, in
any order, with lost responses and DynamoDB's failure answers injected
(TransactionInProgress included), one amount per request ID -- the marker keeps
no payload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from ..backends import Backend, connect
from ..concurrency import race
from ..faults import LostResponses
from ..tables import fresh_table, read_item
from .specified import Specification, debit_subject
from .verdict import Counterexample, Verdict, expect_bad_debits, raised, resend, run_prefix, verdict

Debit = Callable[[Any, str, int, str], Any]
TABLE, WALLET, START, COPIES = "exercise-05", "alice", 100, 16
REQUESTS = {"A": 10, "B": 20, "C": 40}
ORDERS = (["A", "B", "A"], ["A", "B", "C", "B", "A"], ["A", "A", "B", "C", "C", "A"])
LATE = ["A", "B", "C", "A", "B"]


def check_ledger_debit(debit: Debit, *, db: Backend | None = None, schedules: int = 12) -> Verdict:
    """Is `debit(table, wallet_id, amount, request_id)` applied once per request, in any order? A `Verdict`."""
    db = db or connect()
    run = run_prefix()

    def new_wallet() -> Any:
        table = fresh_table(db, TABLE, sort_key="sk")
        table.put_item(Item={"pk": WALLET, "sk": "wallet", "balance": START})
        return table

    def balance(table: Any) -> Any:
        return (read_item(table, {"pk": WALLET, "sk": "wallet"}) or {}).get("balance")

    def truth(order: list[str]) -> int:
        return START - sum(REQUESTS[r] for r in set(order))

    def deliver(table: Any, order: list[str], prefix: str, story: Callable[[], str]) -> None:
        for label in order:
            result = resend(lambda: debit(table, WALLET, REQUESTS[label], f"{prefix}-{label}"))
            if isinstance(result, Exception):
                raise Counterexample(f"{story()}: request {label} raised {raised(result)}")
        if balance(table) != truth(order):
            raise Counterexample(f"{story()}: expected balance {truth(order)}, your debit left {balance(table)}.")

    def late_retries() -> None:
        for n, order in enumerate(ORDERS):
            deliver(new_wallet(), order, f"{run}-{n}",
                    lambda: f"delivery order {' → '.join(order)} (amounts {_amounts()}, no responses lost)")

    def lost_responses() -> None:
        for seed in range(schedules):
            table = new_wallet()
            faults = LostResponses(p=0.4, seed=seed).install(table)
            deliver(table, LATE, f"{run}-s{seed}",
                    lambda: f"delivery order {' → '.join(LATE)} (amounts {_amounts()}), "
                    f"each resent after a lost response "
                    f"(responses of write requests {faults.lost} lost, seed {seed})")

    def concurrent() -> None:
        table = new_wallet()
        outcomes = race(lambda i: debit(table, WALLET, 10, f"{run}-same"), COPIES)
        for i, outcome in enumerate(outcomes):             # a copy cancelled by a transaction conflict is sent again
            if _transaction_conflict(outcome):
                outcomes[i] = resend(lambda: debit(table, WALLET, 10, f"{run}-same"))
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if errors or balance(table) != START - 10:
            saw = f"one raised {raised(errors[0])}" if errors else f"your debit left {balance(table)}"
            raise Counterexample(f"{COPIES} copies of one debit of 10 from {START} at the same instant: "
                                 f"expected balance {START - 10}; {saw}.")

    def bad_input() -> None:
        expect_bad_debits(new_wallet(), debit, WALLET, run, not_even=", not even a marker")

    held = Specification.staged(lambda: debit_subject(debit, fresh_table(db, TABLE, sort_key="sk"), db,
                                                      wallet_sort_key=True),
                                name="your debit", keys_reused=False)
    return verdict(
        [late_retries, lost_responses, concurrent, bad_input, held],
        passed=lambda: f"{len(ORDERS)} late-retry orders, {schedules} lost-response schedules, {COPIES} concurrent "
                       f"copies and bad input all handled. {held.passed()}",
    )


def _amounts() -> str:
    return ", ".join(f"{k}={v}" for k, v in REQUESTS.items())


def _transaction_conflict(outcome: Any) -> bool:
    if not isinstance(outcome, ClientError):
        return False
    return any(r.get("Code") == "TransactionConflict" for r in outcome.response.get("CancellationReasons", []))
