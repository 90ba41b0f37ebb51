"""Notebook 04's exercise: an overdraft guard that tells a duplicate from insufficient funds.

The reader writes `debit(table, wallet_id, amount, request_id)` on notebook 04's
table (the wallet is the item ``pk=wallet_id, sk="wallet"``). It never takes
the balance below zero and answers "applied", "already applied" (a retry of a
debit that went through) or "insufficient funds" (declined, nothing taken). Notebook 04's
`debit_guarded` words that last answer "insufficient funds (unless applied before another
debit)", since `last_request_id` cannot tell a first send from a late copy: both are accepted
(the checker resends each payment before sending the next, so no copy comes late here).
The checker sends payments that run the wallet dry under seeded lost
responses, a first payment larger than an untouched wallet's balance, a copy of
the same debit landing between the debit's read and its write (run on the wire,
`helpers.wire.Between`: the same on every run and every backend), concurrent
copies and concurrent distinct debits, and bad input. Then
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
from ..wire import Between
from .specified import Specification, debit_subject
from .verdict import Counterexample, Verdict, answer, expect_bad_debits, resend, run_prefix, said, verdict

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
                    want = repr(expected[n][0]) + (" or 'already applied'" if expected[n] is WENT_THROUGH else "")
                    raise Counterexample(
                        f"{PAYMENTS} payments of {AMOUNT} from {START}, each under a request ID of its own that every "
                        f"resend after a lost response reuses ({_lost(faults.lost)}, "
                        f"seed {seed}): payment {n + 1}, "
                        f"sent when the balance was {left}, should answer {want}; your debit answered {said(result)}.")
            if balance(table) != START - 2 * AMOUNT:
                raise Counterexample(f"{PAYMENTS} payments of {AMOUNT} from {START}, responses of write requests "
                                     f"{faults.lost} lost (seed {seed}): expected balance {START - 2 * AMOUNT}, your "
                                     f"debit left {balance(table)}.")

    def untouched_wallet() -> None:
        table = new_wallet(balance=AMOUNT - 5)
        result = answer(lambda: debit(table, WALLET, AMOUNT, f"{run}-first"))
        if result not in DECLINED_ANSWERS or balance(table) != AMOUNT - 5:
            raise Counterexample(
                f"a first payment of {AMOUNT} from a wallet of {AMOUNT - 5} that no debit has touched yet (it has no "
                f"last_request_id): expected 'insufficient funds' and the balance still {AMOUNT - 5}; your debit "
                f"answered {said(result)} and left {balance(table)}. The old item in the error holds only what the "
                "wallet has: read what may be missing with .get().")

    def copy_in_between() -> None:
        table = new_wallet()
        other = db.table(TABLE)                           # the copy's own client: another Lambda instance
        copy = Between(lambda: answer(lambda: debit(other, WALLET, AMOUNT, f"{run}-copy"))).install(table)
        result = answer(lambda: debit(table, WALLET, AMOUNT, f"{run}-copy"))
        copy.uninstall()
        if result not in WENT_THROUGH or balance(table) != START - AMOUNT:
            raise Counterexample(
                f"a payment of {AMOUNT} from {START}; just before your debit's write reached the table, another copy "
                f"of the same payment (a resend, handled by another Lambda instance) was applied: expected "
                f"'already applied' and balance {START - AMOUNT}; your debit answered {said(result)} and left "
                f"{balance(table)}. A copy can land between a read and a write: the checks belong in the write's "
                "own condition.")

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
        [lost_responses, untouched_wallet, copy_in_between, concurrent, bad_input, held],
        passed=lambda: f"{schedules} lost-response schedules running the wallet dry, a first payment over the "
                       f"balance, a copy between your read and your write, {COPIES} concurrent copies, "
                       f"{COPIES} concurrent distinct debits and bad input all handled. {held.passed()}",
    )


def _lost(lost: list[int]) -> str:
    return f"responses of write requests {lost} lost" if lost else "no response lost"


def _counts(outcomes: list[Any]) -> str:
    names = [type(o).__name__ if isinstance(o, Exception) else str(o) for o in outcomes]
    return ", ".join(f"{names.count(n)} × {n!r}" for n in sorted(set(names)))
