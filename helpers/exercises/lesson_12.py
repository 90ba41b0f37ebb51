"""Notebook 12's exercise: a caller that retries well.

The reader writes `my_pay(send, order, saved, budget, rng)`, a generator that sleeps with ``yield seconds``
(notebook 12's callers; `helpers.callers.run_together` runs them on the virtual clock). `send(key)` is one
request: notebook 03's idempotent debit of the exercise's wallet with `key`. The checker runs the reader's
caller against the table and counts what reaches it:

1. a 500 that wrote nothing, then DynamoDB's own answer: the caller retries and is charged once;
2. a lost answer (the debit was applied): the resend carries the same key, charged once;
3. a restart: the first answer is lost and the app is killed while the caller sleeps; pressed again, with
   the same phone storage (`saved`), the order is charged once; and no key was sent before it was saved (an
   app killed during that first request would come back without it);
4. a double press: two callers for one order, side by side, charged once; and two orders from one phone, one after
   the other, each charged (one key saved for every order answers the second "already applied", uncharged);
5. a refusal (a wallet that does not exist, an amount that is not allowed): raised at once, one request;
6. twenty callers meeting an outage together, each with its own budget and its own seeded `rng`: every wait
   before retry n lies in full jitter's range, 0 to min(cap, base * 2**n); the first waits are not all the
   same; at most `max_attempts` attempts each;
7. a hundred orders through one budget (the lesson's `RetryBudget`: 10% of the requests, 5 in reserve) while
   every write fails: every order sent, and no more requests than the budget allows;
8. a hundred orders through one budget, one after the other, with every tenth answer lost: a caller that earns
   its budget (`budget.new_request()` once per order) never gives up; one that never earns it runs dry after its
   reserve.

It returns a `Verdict`: PASS, or the first counterexample. It never raises for a wrong answer. Unlike the
handlers' exercises it ends without `Specification`: the write underneath is 03's debit, which the
specification already holds; what is checked here is the caller -- its key, its waits and its load.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Generator
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from ..backends import Backend, connect
from ..callers import Outage, run_together
from ..dynamodb_errors import ERROR_500_NOT_APPLIED, ErrorResponses
from ..faults import LostResponses
from ..tables import read_balance
from ..wire import watch_answers
from .verdict import Counterexample, Verdict, answer, raised, said, verdict, wallet_table

Pay = Callable[..., Any]

WALLET, AMOUNT, START = "exercise-12", 10, 1000
TABLE = "exercise-12"
CALLERS, ORDERS, EARNING = 20, 100, 100
FINAL = ("applied", "already applied")


class RetryBudget:
    """Notebook 12's `RetryBudget`, written again so that the checker does not depend on the notebook's cells."""

    def __init__(self, ratio: float = 0.1, reserve: int = 5) -> None:
        self.ratio, self.reserve, self.tokens = ratio, reserve, float(reserve)

    def new_request(self) -> None:
        self.tokens = min(self.reserve, self.tokens + self.ratio)

    def may_retry(self) -> bool:
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


_debit_03: Callable[..., Any] | None = None


def lesson_03_debit() -> Callable[..., Any]:
    """Notebook 03's `debit_idempotent`, loaded from the notebook (once)."""
    global _debit_03
    if _debit_03 is None:
        from ..lessons import load_lesson

        _debit_03 = load_lesson("03_request_id_increments.ipynb")["debit_idempotent"]
    return _debit_03


def _recorded(caller: Generator[Any, None, Any], waits: list[Any]) -> Generator[Any, None, Any]:
    """`caller`, passing each of its sleeps on and keeping them in `waits`."""
    try:
        wait = next(caller)
        while True:
            waits.append(wait)
            yield wait
            wait = next(caller)
    except StopIteration as done:
        return done.value


class _Rig:
    """A fresh wallet of START, and `send(key)`: one debit of AMOUNT with `key`, each key's sends counted."""

    def __init__(self, db: Backend, debit: Callable[..., Any], amount: Any = AMOUNT, wallet: str = WALLET,
                 saved: dict | None = None) -> None:
        self.table = wallet_table(db, TABLE, WALLET, START)
        self.wire = watch_answers(self.table, db.clock)
        self.sends: dict[str, int] = {}
        self.amount, self.wallet = amount, wallet
        self.saved, self.sent_unsaved = saved, False    # `saved`: the phone storage watched at each send
        self.debit = debit

    def send(self, key: Any) -> Any:
        self.sends[key] = self.sends.get(key, 0) + 1
        if self.saved is not None and key not in self.saved.values():
            self.sent_unsaved = True
        return self.debit(self.table, self.wallet, self.amount, key)

    def charged(self) -> Any:
        return START - read_balance(self.table, WALLET)


def _caller(pay: Pay, rig: _Rig, order: str, saved: dict, budget: RetryBudget, rng: random.Random,
            waits: list[Any] | None = None) -> Generator[Any, None, Any]:
    """The reader's caller, checked to be one: a generator that sleeps with `yield seconds`."""
    started = answer(lambda: pay(rig.send, order, saved, budget, rng))
    if isinstance(started, BaseException):
        raise Counterexample(f"your client raised {raised(started)} when it was called") from None
    if not inspect.isgenerator(started):
        raise Counterexample(f"your client returned {started!r} when it was called: it should sleep with "
                             f"`yield seconds`, so calling it gives a generator that the checker runs.")
    return _recorded(started, waits if waits is not None else [])


def _one(pay: Pay, db: Backend, rig: _Rig, order: str = "order-1", saved: dict | None = None) -> Any:
    """One run of the reader's caller for `order`, with a fresh budget and rng seed 12: its result."""
    return run_together([_caller(pay, rig, order, {} if saved is None else saved, RetryBudget(),
                                 random.Random(12))], db.clock)[0]


def _scenario_after_a_500(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks a 500 that wrote nothing, then a normal answer: retried, charged once."""
    rig = _Rig(db, debit)
    ErrorResponses(at={0: ERROR_500_NOT_APPLIED}).install(rig.table)
    result = _one(pay, db, rig)
    if result != "applied" or rig.charged() != AMOUNT:
        raise Counterexample(f"DynamoDB answered the first request with a 500 that wrote nothing, then answered "
                             f"normally: expected a retry, 'applied' and one charge of {AMOUNT}; your client "
                             f"{said(result) if isinstance(result, BaseException) else 'answered ' + said(result)}"
                             f" and was charged {rig.charged()}.")


def _scenario_after_a_lost_answer(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks a lost answer (the debit applied): resent with the same key, charged once."""
    rig = _Rig(db, debit)
    LostResponses(at={0}).install(rig.table)
    result = _one(pay, db, rig)
    if result not in FINAL or rig.charged() != AMOUNT:
        raise Counterexample(f"the first answer was lost (the debit was applied): expected a resend with the "
                             f"same key, answered 'already applied', and one charge of {AMOUNT}; your client "
                             f"answered {said(result)} and was charged {rig.charged()}"
                             f"{' (a new key on the resend)' if len(rig.sends) > 1 else ''}.")


def _scenario_after_a_restart(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks a restart while sleeping: charged once, and no key sent before it was saved."""
    saved: dict = {}
    rig = _Rig(db, debit, saved=saved)
    LostResponses(at={0}).install(rig.table)
    first = _caller(pay, rig, "order-1", saved, RetryBudget(), random.Random(12))
    if isinstance(answer(lambda: next(first)), BaseException):
        return                                       # it never slept: after_a_lost_answer tells why
    first.close()                                    # the app is killed while the caller sleeps
    result = _one(pay, db, rig, saved=saved)
    if rig.charged() != AMOUNT:
        raise Counterexample(f"the first answer was lost (the debit was applied) and the app was restarted while "
                             f"your client slept; the order, paid again after the restart with the same phone "
                             f"storage, was charged {rig.charged()} instead of {AMOUNT} (it answered "
                             f"{said(result)}): the key must be saved before the first attempt, and found "
                             f"there after a restart.")
    if rig.sent_unsaved:
        raise Counterexample("your client sent a key that was not yet in the phone storage: an app killed "
                             "during that request (the debit applied, the answer lost) comes back without the "
                             "key, and pays the order again under a new one. Save the key before the first "
                             "attempt.")


def _scenario_double_press(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks two callers for one order side by side: charged once."""
    rig, saved = _Rig(db, debit), {}
    results = run_together([_caller(pay, rig, "order-1", saved, RetryBudget(), random.Random(n)) for n in (1, 2)],
                           db.clock)
    if rig.charged() != AMOUNT or any(r not in FINAL for r in results):
        raise Counterexample(f"Pay pressed twice for one order (two calls of your client, same order, same "
                             f"phone storage): expected one charge of {AMOUNT}; your client answered "
                             f"{' and '.join(said(r) for r in results)} and was charged {rig.charged()}.")


def _scenario_two_orders(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks two orders from one phone, one after the other: each charged."""
    rig, saved = _Rig(db, debit), {}
    results = [_one(pay, db, rig, order, saved=saved) for order in ("order-1", "order-2")]
    if rig.charged() != 2 * AMOUNT or any(r != "applied" for r in results):
        raise Counterexample(f"two orders from one phone, one after the other (same phone storage, orders "
                             f"'order-1' and 'order-2'): expected each applied and {2 * AMOUNT} charged; your "
                             f"client answered {' and '.join(said(r) for r in results)} and was charged "
                             f"{rig.charged()}. A key belongs to one order: save it under that order.")


def _scenario_refusals(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks refusals (a missing wallet, an amount of -5): raised at once, after one request."""
    for label, rig in (("a wallet that does not exist", _Rig(db, debit, wallet="nobody")),
                       ("an amount of -5", _Rig(db, debit, amount=-5))):
        result = _one(pay, db, rig)
        sent = sum(rig.sends.values())
        if not isinstance(result, (ValueError, LookupError)) or sent != 1:
            raise Counterexample(f"a payment from {label} is refused: expected the refusal raised at once, "
                                 f"after one request; your client {_told(result)} after {sent} "
                                 f"request{'s' if sent != 1 else ''}.")


def _scenario_outage_together(pay: Pay, db: Backend, debit: Callable[..., Any], base: float, cap: float,
                              max_attempts: int) -> None:
    """Checks CALLERS callers in one outage: at most max_attempts each, full-jitter waits, not all in step."""
    rig = _Rig(db, debit)
    Outage(db.clock, db.clock.now(), db.clock.now() + 1.0).install(rig.table)
    waits: list[list[Any]] = [[] for _ in range(CALLERS)]
    callers = [_caller(pay, rig, f"order-{n}", {}, RetryBudget(), random.Random(n), waits[n]) for n in range(CALLERS)]
    results = run_together(callers, db.clock)
    broken = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, ClientError)), None)
    if broken is not None:
        raise Counterexample(f"{CALLERS} callers meeting a 1-second outage: your client {_told(broken)}.")
    most = max(rig.sends.values(), default=0)
    if most > max_attempts:
        raise Counterexample(f"{CALLERS} callers meeting a 1-second outage: one of them made {most} attempts; "
                             f"at most {max_attempts} a payment (the per-request budget).")
    for sleeps in waits:
        for retry, wait in enumerate(sleeps):
            bound = min(cap, base * 2 ** retry)
            if not 0 <= wait <= bound:
                shown = f"{wait:.3g} s" if isinstance(wait, (int, float)) else repr(wait)
                raise Counterexample(f"{CALLERS} callers meeting a 1-second outage: one of them waited {shown} "
                                     f"before retry {retry}; full jitter waits between 0 and min({cap}, "
                                     f"{base} * 2 ** {retry}) = {bound:g} s.")
    first = {round(sleeps[0], 9) for sleeps in waits if sleeps}
    if len(first) == 1 and sum(1 for sleeps in waits if sleeps) > 1:
        raise Counterexample(f"{CALLERS} callers met a 1-second outage at the same instant, and every one waited "
                             f"{first.pop():g} s before its first retry: they retry in step, all at once. Draw "
                             f"each wait from rng (full jitter).")


def _scenario_within_budget(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks ORDERS orders through one budget in a long outage: every order sent, no more than allowed."""
    rig, budget = _Rig(db, debit), RetryBudget()
    Outage(db.clock, db.clock.now(), db.clock.now() + 3600).install(rig.table)

    def arriving(n: int) -> Generator[Any, None, Any]:
        yield n * 0.1
        return (yield from _caller(pay, rig, f"order-{n}", {}, budget, random.Random(n)))

    results = run_together([arriving(n) for n in range(ORDERS)], db.clock)
    broken = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, ClientError)), None)
    if broken is not None:
        raise Counterexample(f"{ORDERS} orders during a long outage: your client {_told(broken)}.")
    allowed, sent = ORDERS + budget.reserve + int(budget.ratio * ORDERS), rig.wire.sends
    if len(rig.sends) < ORDERS:
        raise Counterexample(f"{ORDERS} orders, one every 0.1 s, through one retry budget during a long outage: "
                             f"{ORDERS - len(rig.sends)} of them were never sent. A budget limits retries, never "
                             f"a payment's first attempt.")
    if sent > allowed:
        raise Counterexample(f"{ORDERS} orders, one every 0.1 s, through one retry budget (10% of the requests, "
                             f"{budget.reserve} in reserve) while every write failed: the budget allows {allowed} "
                             f"requests; your client sent {sent}. Retry only when the budget allows it.")


def _scenario_budget_earned(pay: Pay, db: Backend, debit: Callable[..., Any]) -> None:
    """Checks EARNING orders with every tenth answer lost: a caller that earns its budget never gives up."""
    rig, budget = _Rig(db, debit, amount=1), RetryBudget()
    LostResponses(at=set(range(9, 20 * EARNING, 10))).install(rig.table)
    results = [run_together([_caller(pay, rig, f"order-{n}", {}, budget, random.Random(n))], db.clock)[0]
               for n in range(EARNING)]
    broken = next((r for r in results if isinstance(r, BaseException)), None)
    if broken is not None:
        raise Counterexample(f"{EARNING} orders with every tenth answer lost: your client {_told(broken)}.")
    gave_up = sum(1 for r in results if r not in FINAL)
    if gave_up:
        raise Counterexample(f"{EARNING} orders through one retry budget, one after the other, with every tenth "
                             f"answer lost: your client gave up {gave_up} time{'s' if gave_up != 1 else ''} "
                             f"(expected 0: one retry in ten requests is within a 10% budget). Call "
                             f"budget.new_request once for each order: that is how the budget is earned.")


def check_careful_client(pay: Pay, *, db: Backend | None = None, debit: Callable[..., Any] | None = None,
                         base: float = 0.1, cap: float = 5.0, max_attempts: int = 3) -> Verdict:
    """Does `pay(send, order, saved, budget, rng)` key, wait and retry as notebook 12 teaches? A `Verdict`."""
    if not callable(pay):
        return Verdict(False, f"expected your function, my_pay(send, order, saved, budget, rng); got "
                              f"{type(pay).__name__}.")
    db = db or connect()
    debit = debit or lesson_03_debit()
    return verdict(
        [partial(_scenario_after_a_500, pay, db, debit),
         partial(_scenario_after_a_lost_answer, pay, db, debit),
         partial(_scenario_after_a_restart, pay, db, debit),
         partial(_scenario_double_press, pay, db, debit),
         partial(_scenario_two_orders, pay, db, debit),
         partial(_scenario_refusals, pay, db, debit),
         partial(_scenario_outage_together, pay, db, debit, base, cap, max_attempts),
         partial(_scenario_within_budget, pay, db, debit),
         partial(_scenario_budget_earned, pay, db, debit)],
        passed=f"a 500, a lost answer, a restart, a double press, two orders and two refusals handled, one charge an "
               f"order; "
               f"{CALLERS} callers in an outage waited with full jitter, at most {max_attempts} attempts each; "
               f"{ORDERS} orders stayed within one retry budget, and {EARNING} earned theirs.",
    )


def _told(result: Any) -> str:
    """What the reader's caller did: raised something, or answered something."""
    return f"raised {raised(result)}" if isinstance(result, BaseException) else f"answered {result!r}"
