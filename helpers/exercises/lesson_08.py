"""Notebook 08's exercise: a payment that resends what is safe to resend, and nothing else.

The reader writes `pay(table, wallet_id, amount, request_id)` on notebook 08's table (the wallet
is ``pk=wallet_id, sk="wallet"``; markers may live beside it). It answers "applied" or
"already applied", raises `WalletNotFound` for a wallet that does not exist, and raises every
error it does not resend. The checker calls it with SDK retries off, so every answer reaches the
reader's code:

1. plain payments and a duplicate;
2. a wallet that does not exist (the wallet's own condition fails): an error, nothing written;
3. each of DynamoDB's failure answers on the first send (`helpers/dynamodb_errors.py`): a
   TransactionConflict on either action, both throttles, a transaction in progress (the request
   with that token not committing, and committing), a 500 with and without the write applied --
   the payment must go through exactly once;
4. a conflict on every send: an error after a bounded number of sends, backing off on the
   virtual clock, nothing written;
5. a wallet whose balance is not a number (DynamoDB's ValidationException): raised at once;
6. eight concurrent copies of one payment; 7. bad input;
8. the collection's specification (`helpers.checker`): generated histories, in any order, with lost
   responses and DynamoDB's failure answers on the first or second send of a payment, one amount per
   request ID (the marker keeps no payload).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from ..backends import Backend, connect
from ..concurrency import race
from ..dynamodb_errors import CONFLICT, ErrorResponses, answer_of
from ..tables import fresh_table, read_item
from ..wire import watch_answers
from .specified import Specification, debit_subject
from .verdict import (
    Counterexample,
    Verdict,
    answer,
    counted,
    expect_bad_input,
    failure_answers,
    raised,
    snapshot,
    verdict,
)

Pay = Callable[[Any, str, int, str], Any]
TABLE, START, AMOUNT, COPIES = "exercise-08", 100, 10, 8
MAX_SENDS = 10               # more sends than this for one payment is not a bounded resend
ENDLESS = 50                 # a conflict that "never ends" lasts this many sends
SUCCESS = ("applied", "already applied")

# (kind, which action of the transaction carries the conflict, how a counterexample names the answer)
ANSWERS = failure_answers("the wallet (action 0)", "the marker (action 1)")


def _said(result: Any) -> str:
    """What the reader's pay did, in a few words: "raised ThrottlingException", "answered 'applied'"."""
    if isinstance(result, ClientError):
        code, _, reasons = answer_of(result)
        return f"raised {code}" + (f" [{', '.join(reasons)}]" if reasons else "")
    if isinstance(result, Exception):
        return f"raised {raised(result)}"[:90]
    return f"answered {result!r}"[:60]


def _new_wallet(db: Backend, wallets: Iterator[int], balance: Any = START) -> tuple[Any, str]:
    """A wallet of its own with `balance`, on a table client of its own (SDK retries off)."""
    table = db.table(TABLE)                          # a client of its own: SDK retries off
    wallet_id = f"wallet-{next(wallets)}"
    table.put_item(Item={"pk": wallet_id, "sk": "wallet", "balance": balance})
    return table, wallet_id


def _balance(table: Any, wallet_id: str) -> Any:
    """The wallet's balance as stored, or None."""
    return (read_item(table, {"pk": wallet_id, "sk": "wallet"}) or {}).get("balance")


def _scenario_plain(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks plain payments and a duplicate, with no failure answers."""
    table, wallet_id = _new_wallet(db, wallets)
    for label, request_id, amount, expected, left in [("a payment of 10", "pay-1", 10, "applied", 90),
                                                      ("its duplicate", "pay-1", 10, "already applied", 90),
                                                      ("a second payment of 20", "pay-2", 20, "applied", 70)]:
        result = answer(lambda: pay(table, wallet_id, amount, request_id))
        if result != expected or _balance(table, wallet_id) != left:
            raise Counterexample(f"{label} from a wallet of {START} (no failure answers): expected {expected!r} "
                                 f"and balance {left}; your pay {_said(result)} and left "
                                 f"{_balance(table, wallet_id)}.")


def _scenario_missing_wallet(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks a payment from a wallet that does not exist: WalletNotFound, nothing written."""
    table, _ = _new_wallet(db, wallets)
    before = snapshot(table)
    result = answer(lambda: pay(table, "nobody", AMOUNT, "pay-1"))
    wrote = snapshot(table) != before
    if not isinstance(result, LookupError) or wrote:
        said = _said(result) + (" and wrote to the table" if wrote else "")
        lost = " -- a payment reported done that never happened" if result in SUCCESS else ""
        raise Counterexample(
            "a payment from a wallet that does not exist: DynamoDB cancels the transaction with "
            "CancellationReasons [ConditionalCheckFailed, None] -- the wallet's condition, not the marker's. "
            f"Expected WalletNotFound and nothing written; your pay {said}{lost}.")


def _scenario_failure_answers(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks each of DynamoDB's failure answers on the first send: the payment goes through once."""
    for kind, item, described in ANSWERS:
        table, wallet_id = _new_wallet(db, wallets)
        ErrorResponses(at={0: kind}, conflict_item=item).install(table)
        wire = watch_answers(table, db.clock)
        result = answer(lambda: pay(table, wallet_id, AMOUNT, "pay-1"))
        left = _balance(table, wallet_id)
        if result not in SUCCESS or left != START - AMOUNT:
            lost = " -- a payment lost" if result in SUCCESS and left == START else ""
            raise Counterexample(
                f"one payment of {AMOUNT} from {START}. DynamoDB answered your first send with {described}; "
                f"sending it again is safe (the marker refuses a second debit). Expected 'applied' or "
                f"'already applied' and balance {START - AMOUNT}; your pay {_said(result)} after "
                f"{counted(wire.sends, 'send')} and left {left}{lost}.")


def _scenario_endless_conflict(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks a conflict on every send: bounded resends, backing off, an error, nothing written."""
    table, wallet_id = _new_wallet(db, wallets)
    ErrorResponses(at={n: CONFLICT for n in range(ENDLESS)}, conflict_item=0).install(table)
    wire = watch_answers(table, db.clock)
    result = answer(lambda: pay(table, wallet_id, AMOUNT, "pay-1"))
    times = [a.t for a in wire.answers]
    story = f"every send cancelled with TransactionConflict on the wallet (the first {ENDLESS} sends)"
    if wire.sends > MAX_SENDS:
        raise Counterexample(f"{story}: your pay sent the payment {wire.sends} times; bound the resends (a few "
                             f"sends, at most {MAX_SENDS}), then raise.")
    if not isinstance(result, Exception):
        raise Counterexample(f"{story}: expected an error after a bounded number of sends, nothing written; "
                             f"your pay {_said(result)} after {counted(wire.sends, 'send')}, balance "
                             f"{_balance(table, wallet_id)}.")
    if wire.sends > 1 and len(set(times)) == 1:
        raise Counterexample(f"{story}: your pay resent {counted(wire.sends - 1, 'time')} at the same virtual "
                             "instant; back off between sends (db.clock.advance).")
    if _balance(table, wallet_id) != START:
        raise Counterexample(f"{story}: nothing should be written; your pay left {_balance(table, wallet_id)}.")


def _scenario_not_a_number(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks a balance that is not a number (ValidationException): raised at once, nothing written."""
    table, wallet_id = _new_wallet(db, wallets, balance="100")
    before = snapshot(table)
    wire = watch_answers(table, db.clock)
    result = answer(lambda: pay(table, wallet_id, AMOUNT, "pay-1"))
    if result in SUCCESS or not isinstance(result, Exception) or snapshot(table) != before:
        raise Counterexample("a wallet whose balance is the string '100': DynamoDB refuses the update "
                             "(ValidationException). Expected an error and nothing written; your pay "
                             f"{_said(result)}.")
    if wire.sends > 1:
        raise Counterexample("a wallet whose balance is the string '100': DynamoDB answers ValidationException, "
                             "and the same answer every time; your pay sent it "
                             f"{counted(wire.sends, 'time')}. Raise it.")


def _scenario_concurrent(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks COPIES concurrent copies of one payment: debited once, no errors."""
    table, wallet_id = _new_wallet(db, wallets)
    outcomes = race(lambda i: pay(table, wallet_id, AMOUNT, "pay-same"), COPIES)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    if errors or _balance(table, wallet_id) != START - AMOUNT:
        saw = f"one {_said(errors[0])}" if errors else f"your pay left {_balance(table, wallet_id)}"
        raise Counterexample(f"{COPIES} copies of one payment of {AMOUNT} from {START} at the same instant: "
                             f"expected balance {START - AMOUNT}; {saw}.")


def _scenario_bad_input(pay: Pay, db: Backend, wallets: Iterator[int]) -> None:
    """Checks bad amounts (negative, fractional): refused."""
    table, wallet_id = _new_wallet(db, wallets)
    for amount in (-5, 2.5):
        expect_bad_input(table, f"amount {amount!r}", lambda: pay(table, wallet_id, amount, "pay-bad"))


def check_bounded_pay(pay: Pay, *, db: Backend | None = None) -> Verdict:
    """Does `pay(table, wallet_id, amount, request_id)` pay once, whatever DynamoDB answers? A `Verdict`."""
    db = db or connect()
    fresh_table(db, TABLE, sort_key="sk")            # emptied: the wallets' names can be the same every run
    wallets = iter(range(1, 10_000))
    scenarios = [_scenario_plain, _scenario_missing_wallet, _scenario_failure_answers, _scenario_endless_conflict,
                 _scenario_not_a_number, _scenario_concurrent, _scenario_bad_input]
    held = Specification.staged(lambda: debit_subject(pay, fresh_table(db, TABLE, sort_key="sk"), db,
                                                      wallet_sort_key=True, writes=2),
                                name="your pay", keys_reused=False)
    return verdict(
        [*(partial(scenario, pay, db, wallets) for scenario in scenarios), held],
        passed=lambda: f"plain payments and a duplicate, a missing wallet, {len(ANSWERS)} of DynamoDB's failure "
                       f"answers, an endless conflict, a ValidationException, {COPIES} concurrent copies and bad input "
                       f"all handled. {held.passed()}",
    )
