"""Notebook 00's exercise: a payment handler that survives one payment arriving twice.

The reader writes `handler(table, request)`, where a request is
``{"wallet": "alice", "amount": 10, "payment_id": "..."}`` and the payment ID is
made once per payment, by the caller. The checker delivers payments the ways
notebook 00 shows: every payment twice in a row (a client timeout and resend,
an API Gateway 504, an SQS redelivery), once from the application with
botocore's own retries resending lost responses, sixteen copies at once, and
bad input — a payment from a wallet that does not exist included, which must
raise `WalletNotFound` (a LookupError) and write nothing, not answer "paid".
Then it holds the handler to the collection's specification (`helpers.checker`):
generated histories with lost responses and DynamoDB's failure answers injected,
one payment at a time (a handler that remembers only the last payment ID gives
up *once* when an older one comes back: notebook 04). It returns one
counterexample, or PASS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import Backend, connect
from ..concurrency import race
from ..faults import LostResponses
from ..tables import fresh_table, read_balance
from .specified import Specification, debit_subject
from .verdict import (
    Counterexample,
    Verdict,
    answer,
    expect_bad_input,
    expect_not_found,
    raised,
    resend,
    run_prefix,
    verdict,
    wallet_table,
)

Handler = Callable[[Any, dict], Any]
TABLE, WALLET, START, AMOUNT, PAYMENTS, COPIES = "exercise-00", "alice", 100, 10, 3, 16


def check_payment_handler(handler: Handler, *, db: Backend | None = None, schedules: int = 8) -> Verdict:
    """Is `handler(table, request)` safe when one payment reaches it more than once? Returns a `Verdict`."""
    db = db or connect()
    run = run_prefix()

    def request(n: int) -> dict[str, Any]:
        return {"wallet": WALLET, "amount": AMOUNT, "payment_id": f"{run}-pay-{n}"}

    def balance_is(table: Any, expected: int, story: str, then: str = "") -> None:
        actual = read_balance(table, WALLET)
        if actual != expected:
            raise Counterexample(f"{story}: expected balance {expected}, your handler left {actual}.{then}")

    def sent_twice() -> None:
        table = wallet_table(db, TABLE, WALLET, START)
        for n in range(PAYMENTS):
            for copy in ("first", "second"):
                result = answer(lambda: handler(table, request(n)))
                if isinstance(result, Exception):
                    raise Counterexample(f"the {copy} copy of payment {n + 1} raised {raised(result)}; "
                                         "a copy of a payment that went through should get an answer, not an error.")
        balance_is(table, START - AMOUNT * PAYMENTS, f"{PAYMENTS} payments of {AMOUNT} from {START}, each delivered "
                   "twice (a client timeout and resend, a 504, an SQS redelivery)")

    def sdk_retries() -> None:
        for seed in range(schedules):
            table = wallet_table(db, TABLE, WALLET, START, sdk_retries=True)
            faults = LostResponses(p=0.4, seed=seed).install(table)
            for n in range(PAYMENTS):
                result = resend(lambda: handler(table, request(100 * (seed + 1) + n)))
                if isinstance(result, Exception):
                    raise Counterexample(f"with botocore's retries on and lost responses (seed {seed}), payment "
                                         f"{n + 1} raised {raised(result)}")
            balance_is(table, START - AMOUNT * PAYMENTS,
                       f"{PAYMENTS} payments of {AMOUNT} from {START}, each sent once by the application, with "
                       f"botocore's own retries on and the responses of write requests {faults.lost} lost "
                       f"(seed {seed})", then=" botocore sent those writes again inside update_item, below your "
                       "handler: only the table sees every copy of a payment.")

    def concurrent_copies() -> None:
        table = wallet_table(db, TABLE, WALLET, START)
        outcomes = race(lambda i: handler(table, request(10_000)), COPIES)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if errors:
            raise Counterexample(f"{COPIES} copies of one payment at the same instant: one raised {raised(errors[0])}")
        balance_is(table, START - AMOUNT, f"{COPIES} copies of one payment of {AMOUNT} at the same instant")

    def bad_input() -> None:
        table = wallet_table(db, TABLE, WALLET, START)
        for field, value in (("amount", -5), ("amount", 2.5), ("payment_id", "")):
            bad = {**request(20_000), field: value}
            expect_bad_input(table, f"a request with {field} {value!r}", lambda: handler(table, bad))
        expect_not_found(table, lambda: handler(table, {**request(30_000), "wallet": "nobody"}),
                         "a payment from a wallet that does not exist should raise WalletNotFound and write nothing "
                         "— no payment happened", "your handler")

    def as_debit(table: Any, wallet: str, amount: int, payment_id: str) -> Any:
        return handler(table, {"wallet": wallet, "amount": amount, "payment_id": payment_id})

    as_debit.__name__ = getattr(handler, "__name__", "handler")
    held = Specification.staged(lambda: debit_subject(as_debit, fresh_table(db, TABLE), db,
                                                      success=({"status": "paid"},)),
                                name="your handler", keys_reused=False, one_at_a_time=True)
    return verdict(
        [sent_twice, sdk_retries, concurrent_copies, bad_input, held],
        passed=lambda: f"every payment delivered twice, {schedules} lost-response schedules under botocore's own "
                       f"retries, {COPIES} concurrent copies, a missing wallet and bad input all handled. "
                       f"{held.passed()}",
    )
