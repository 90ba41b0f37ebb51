"""Notebook 04's exercise: an overdraft guard that tells a duplicate from insufficient funds.

The reader writes `debit(table, wallet_id, amount, request_id)` on notebook 04's
table (the wallet is the item ``pk=wallet_id, sk="wallet"``). It never takes
the balance below zero and answers "applied", "already applied" (a retry of a
debit that went through) or "insufficient funds" (declined, nothing taken). Notebook 04's
`debit_guarded` words that last answer "insufficient funds (unless applied before another
debit)", since `last_request_id` cannot tell a first send from a late copy: both are accepted
(the checker resends each payment before sending the next, so no copy comes late here).
The checker sends payments that run the wallet dry under seeded lost
responses, concurrent copies and concurrent distinct debits, and bad input. Then
it holds the debit to the collection's specification (`helpers.checker`):
generated histories on small wallets with lost responses and DynamoDB's failure
answers injected, one payment at a time (as above: no copy comes late), where
"insufficient funds" is a refusal -- nothing taken, and the caller told so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import Backend, connect
from ..concurrency import race
from ..faults import LostResponses
from ..tables import fresh_table, read_item
from .specified import Specification, debit_subject
from .verdict import Counterexample, Verdict, expect_bad_debits, resend, run_prefix, said, verdict

Debit = Callable[[Any, str, int, str], Any]
TABLE, WALLET, START, AMOUNT, PAYMENTS, COPIES = "exercise-04", "alice", 50, 20, 4, 16
WENT_THROUGH, DECLINED = ("applied", "already applied"), "insufficient funds"
DECLINED_ANSWERS = (DECLINED, "insufficient funds (unless applied before another debit)")
OPENING = {"alice": 100, "bob": 20}       # the generated histories' wallets: small, so that payments run them dry


def check_guarded_debit(debit: Debit, *, db: Backend | None = None, schedules: int = 12) -> Verdict:
    """Does `debit(table, wallet_id, amount, request_id)` tell a duplicate from insufficient funds? A `Verdict`."""
    db = db or connect()
    run = run_prefix()

    def new_wallet(balance: int = START) -> Any:
        table = fresh_table(db, TABLE, sort_key="sk")
        table.put_item(Item={"pk": WALLET, "sk": "wallet", "balance": balance})
        return table

    def balance(table: Any) -> Any:
        return (read_item(table, {"pk": WALLET, "sk": "wallet"}) or {}).get("balance")

    def lost_responses() -> None:
        expected = [WENT_THROUGH, WENT_THROUGH] + [DECLINED_ANSWERS] * (PAYMENTS - 2)
        for seed in range(schedules):
            table = new_wallet()
            faults = LostResponses(p=0.4, seed=seed).install(table)
            for n in range(PAYMENTS):
                left = balance(table)
                result = resend(lambda: debit(table, WALLET, AMOUNT, f"{run}-{seed}-{n}"))
                if result not in expected[n]:
                    want = " or ".join(repr(e) for e in expected[n])
                    raise Counterexample(
                        f"{PAYMENTS} payments of {AMOUNT} from {START}, each under a request ID of its own that every "
                        f"resend after a lost response reuses (responses of write requests {faults.lost} lost, "
                        f"seed {seed}): payment {n + 1}, "
                        f"sent when the balance was {left}, should answer {want}; your debit answered {said(result)}.")
            if balance(table) != START - 2 * AMOUNT:
                raise Counterexample(f"{PAYMENTS} payments of {AMOUNT} from {START}, responses of write requests "
                                     f"{faults.lost} lost (seed {seed}): expected balance {START - 2 * AMOUNT}, your "
                                     f"debit left {balance(table)}.")

    def concurrent() -> None:
        table = new_wallet()
        outcomes = race(lambda i: debit(table, WALLET, AMOUNT, f"{run}-same"), COPIES)
        if (sorted(map(str, outcomes)) != ["already applied"] * (COPIES - 1) + ["applied"]
                or balance(table) != START - AMOUNT):
            raise Counterexample(f"{COPIES} copies of one debit of {AMOUNT} from {START} at the same instant: "
                                 f"expected one 'applied', {COPIES - 1} 'already applied' and balance "
                                 f"{START - AMOUNT}; your debit answered {_counts(outcomes)} "
                                 f"and left {balance(table)}.")
        table = new_wallet()
        outcomes = race(lambda i: debit(table, WALLET, 10, f"{run}-distinct-{i}"), COPIES)
        want = sorted(["applied"] * (START // 10) + [DECLINED] * (COPIES - START // 10))
        answered = [DECLINED if o in DECLINED_ANSWERS else str(o) for o in outcomes]
        if sorted(answered) != want or balance(table) != 0:
            raise Counterexample(f"{COPIES} different debits of 10 from {START} at the same instant: expected "
                                 f"{START // 10} 'applied', {COPIES - START // 10} 'insufficient funds' and balance 0; "
                                 f"your debit answered {_counts(outcomes)} and left {balance(table)}.")

    def bad_input() -> None:
        expect_bad_debits(new_wallet(), debit, WALLET, run)

    held = Specification.staged(lambda: debit_subject(debit, fresh_table(db, TABLE, sort_key="sk"), db,
                                                      wallet_sort_key=True, refused=DECLINED_ANSWERS, opening=OPENING),
                                name="your debit", keys_reused=False, one_at_a_time=True)
    return verdict(
        [lost_responses, concurrent, bad_input, held],
        passed=lambda: f"{schedules} lost-response schedules running the wallet dry, {COPIES} concurrent copies, "
                       f"{COPIES} concurrent distinct debits and bad input all handled. {held.passed()}",
    )


def _counts(outcomes: list[Any]) -> str:
    names = [type(o).__name__ if isinstance(o, Exception) else str(o) for o in outcomes]
    return ", ".join(f"{names.count(n)} × {n!r}" for n in sorted(set(names)))
