"""Concurrency: DynamoDB applies each write atomically, and so must the default backend.

For every pattern the collection teaches, 32 threads deliver copies of the same operation at the same instant,
round after round (25 rounds, on both backends): exactly one copy may win, the others must be told the
truth ("already applied", a replay, or "in progress, retry" followed by the replay), and the effect must be
there exactly once -- never twice, never lost. Then 32 *distinct* operations at once: none may be lost.

Each pattern is the notebook's own function (notebook_code.lesson). A caller that is told "send again"
(DynamoDB's TransactionConflict between concurrent transactions, TransactionInProgress for a token still
being applied, or 06's 409 "in progress") sends again, as a client would; how often is counted and printed
(tests/harness/resends.py).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
from botocore.config import Config
from harness.resends import Resends
from harness.rigs import NB01, NB02, NB03, NB05, NB06, notebooks
from moto.core.models import botocore_stubber
from summary_lines import summary

import helpers
from helpers import backends, open_wallet, read_balance
from helpers.concurrency import race
from helpers.services.payment_provider import PaymentProvider

THREADS = 32
# 25 rounds per pattern on both backends (200 until issue 37: tools/mutants.py found no mutant that only this
# file's rounds could kill). RETRY_LOAD_ROUNDS overrides, for a longer look; CI runs the default.
ROUNDS = int(os.environ.get("RETRY_LOAD_ROUNDS", 25))
DISTINCT_ROUNDS = ROUNDS // 4
START, AMOUNT = 10_000, 7
_rounds = itertools.count()
nb = notebooks()   # this module's own run of each notebook's code
COUNTS = summary(f"concurrent deliveries on {backends.backend_name()}")   # a line per test, shown at the end


def report(line: str) -> None:
    COUNTS.append(line)
    print("\n" + line)


@pytest.fixture(autouse=True)
def fast_thread_switching():
    """Switch threads every 0.5 ms (default 5 ms): races that exist show up far more often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    yield
    sys.setswitchinterval(before)


# --- the patterns: set up a round, send one copy, check the round -------------------------------------

class Pattern:
    """One pattern under concurrent copies. Subclasses: `reset`, `send`, `check` (returns problems)."""

    name = ""

    def __init__(self, fresh: Callable[..., Any]) -> None:
        self.fresh = fresh
        self.resends = Resends()

    def prepare(self, keys: list[str]) -> None:
        """What must exist before the round's operations on `keys` (nothing, unless a subclass says)."""

    def duplicates(self, round_number: int) -> list[str]:
        self.reset()
        key = f"{self.name[:2]}-dup-{next(_rounds)}"
        self.prepare([key])
        outcomes = race(lambda i: self.resends.until_answered(lambda: self.send(key, i)), THREADS)
        return self.check_duplicates(key, outcomes)

    def distinct(self, round_number: int) -> list[str]:
        self.reset()
        keys = [f"{self.name[:2]}-dis-{next(_rounds)}-{i}" for i in range(THREADS)]
        self.prepare(keys)
        outcomes = race(lambda i: self.resends.until_answered(lambda: self.send(keys[i], i)), THREADS)
        return self.check_distinct(keys, outcomes)


class OneTablePattern(Pattern):
    """A pattern of one notebook on a table of its own (key `pk`), emptied each round."""

    notebook = ""

    def __init__(self, fresh):
        super().__init__(fresh)
        self.code = nb(self.notebook)
        self.table = fresh()

    def reset(self) -> None:
        helpers.empty_table(self.table, ["pk"])


def exactly_one(outcomes: list[Any], won: str, lost: str) -> list[str]:
    problems = [f"{o!r}" for o in outcomes if o not in (won, lost)]
    if outcomes.count(won) != 1:
        problems.append(f"{outcomes.count(won)} copies told {won!r}")
    return problems


class DebitPattern(Pattern):
    """A debit function of notebook 03 or 05: `debit(table, wallet, amount, request_id)`."""

    def __init__(self, fresh, notebook: str, function: str, won: str, lost: str, sort_key: bool) -> None:
        super().__init__(fresh)
        code = nb(notebook)
        self.debit, self.won, self.lost = code[function], won, lost
        self.table = fresh(sort_key="sk") if sort_key else fresh()
        self.open_wallet = code["open_wallet"] if sort_key else open_wallet
        self.read_balance = code["read_balance"] if sort_key else read_balance
        self.sort_key = sort_key

    def reset(self) -> None:
        if self.sort_key:   # the ledger's markers: an empty table each round (moto copies a table per transaction)
            helpers.empty_table(self.table, ["pk", "sk"])
        self.open_wallet(self.table, "w", START)

    def send(self, key: str, i: int) -> Any:
        return self.debit(self.table, "w", AMOUNT, key)

    def check_duplicates(self, key, outcomes) -> list[str]:
        problems = exactly_one(outcomes, self.won, self.lost) if self.won != self.lost else \
            [repr(o) for o in outcomes if o != self.won]
        debited = START - self.read_balance(self.table, "w")
        if debited != AMOUNT:
            problems.append(f"debited {debited // AMOUNT} times")
        return problems

    def check_distinct(self, keys, outcomes) -> list[str]:
        problems = [repr(o) for o in outcomes if o != self.won]
        debited = START - self.read_balance(self.table, "w")
        if debited != AMOUNT * THREADS:
            problems.append(f"{THREADS - debited // AMOUNT} of {THREADS} debits lost")
        return problems


class GuardedDebit(DebitPattern):
    name = "guarded last_request_id debit (03)"

    def __init__(self, fresh):
        super().__init__(fresh, NB03, "debit_idempotent", "applied", "already applied", sort_key=False)


class LedgerTransaction(DebitPattern):
    name = "ledger transaction (05)"

    def __init__(self, fresh):
        super().__init__(fresh, NB05, "debit_ledger", "applied", "already applied", sort_key=True)


class ClientTokenTransaction(DebitPattern):
    """DynamoDB does not tell the caller whether a token was applied or replayed: the winner shows in the balance."""

    name = "client-token transaction (05)"

    def __init__(self, fresh):
        super().__init__(fresh, NB05, "debit_token", "applied or replayed", "applied or replayed", sort_key=True)


class ConditionalCreate(OneTablePattern):
    name, notebook = "conditional create (02)", NB02

    def send(self, key, i):
        return self.code["create_checked"](self.table, key, "alice", 25)

    def expected(self, key) -> dict[str, Any]:
        return {"pk": key, "customer": "alice", "amount": 25, "created_at": int(self.code["db"].clock.now())}

    def check_duplicates(self, key, outcomes):
        problems = exactly_one(outcomes, "created", "already created")
        if helpers.read_item(self.table, {"pk": key}) != self.expected(key):
            problems.append(f"order is {helpers.read_item(self.table, {'pk': key})}")
        return problems

    def check_distinct(self, keys, outcomes):
        problems = [repr(o) for o in outcomes if o != "created"]
        stored = sum(helpers.read_item(self.table, {"pk": k}) == self.expected(k) for k in keys)
        if stored != THREADS:
            problems.append(f"{THREADS - stored} of {THREADS} orders lost")
        return problems


class GuardedStatusUpdate(OneTablePattern):
    """01's `advance_status`: the fixed value with a condition on the state before it.

    (01's unguarded `set_status` has no winner to count: every copy writes the same value, and all say
    "applied"; test_lesson_01 shows the item is identical after one copy or many.)
    """

    name, notebook = "guarded status update (01)", NB01

    def prepare(self, keys):
        for k in keys:
            self.table.put_item(Item={"pk": k, "status": "packed"})

    def send(self, key, i):
        return self.code["advance_status"](self.table, key, "shipped")

    def check_duplicates(self, key, outcomes):
        problems = exactly_one(outcomes, "applied", "already applied")
        if helpers.read_item(self.table, {"pk": key}) != {"pk": key, "status": "shipped"}:
            problems.append(f"order is {helpers.read_item(self.table, {'pk': key})}")
        return problems

    def check_distinct(self, keys, outcomes):
        problems = [repr(o) for o in outcomes if o != "applied"]
        shipped = sum(helpers.read_item(self.table, {"pk": k})["status"] == "shipped" for k in keys)
        if shipped != THREADS:
            problems.append(f"{THREADS - shipped} of {THREADS} updates lost")
        return problems


class SavedResponseHandler(Pattern):
    """06's `pay`: one copy claims and does the work; the others are told 409 (in progress) or get its replay.

    A caller told 409 sends again once the round is over, and must get the winner's response.
    """

    name = "saved-response handler (06)"

    def __init__(self, fresh):
        super().__init__(fresh)
        self.code = nb(NB06)

    def reset(self) -> None:
        code = self.code
        code["provider"] = self.provider = PaymentProvider(code["db"].clock)
        helpers.empty_table(code["wallets"], ["pk"])
        helpers.empty_table(code["records"], ["pk"])
        open_wallet(code["wallets"], "w", START)

    def send(self, key, i):
        return self.code["pay"](key, {"wallet": "w", "amount": AMOUNT}, f"inv-{i}")

    def check_duplicates(self, key, outcomes):
        problems = [repr(o) for o in outcomes if isinstance(o, BaseException)]
        if problems:
            return problems
        winners = [i for i, o in enumerate(outcomes)
                   if o["status"] == 201 and json.loads(o["body"])["served_by"] == f"inv-{i}"]
        if len(winners) != 1:
            return [f"{len(winners)} copies did the work"]
        response = outcomes[winners[0]]
        for i, o in enumerate(outcomes):
            if o == self.code["IN_PROGRESS"]:
                o = self.send(key, i)                     # told to retry later: it does, after the round
            if o != response:
                problems.append(f"copy {i} told {o}, the winner's response is {response}")
        debited = START - read_balance(self.code["wallets"], "w")
        if (debited, self.provider.charges) != (AMOUNT, 1):
            problems.append(f"debited {debited // AMOUNT} times, charged {self.provider.charges} times")
        return problems

    def check_distinct(self, keys, outcomes):
        problems = [repr(o) for o in outcomes if isinstance(o, BaseException) or o["status"] != 201]
        debited = START - read_balance(self.code["wallets"], "w")
        if (debited, self.provider.charges) != (AMOUNT * THREADS, THREADS):
            problems.append(f"{THREADS - debited // AMOUNT} debits lost, "
                            f"{THREADS - self.provider.charges} charges lost")
        return problems


PATTERNS = [GuardedDebit, LedgerTransaction, ConditionalCreate, ClientTokenTransaction, SavedResponseHandler,
            GuardedStatusUpdate]
def rounds_with_problems(one_round: Callable[[int], list[str]], rounds: int) -> dict[int, list[str]]:
    """Run `rounds` rounds; the first three problems of each round that had any, by round number."""
    found = {}
    for round_number in range(rounds):
        problems = one_round(round_number)
        if problems:
            found[round_number] = problems[:3]
    return found


by_name = pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])


@by_name
def test_concurrent_duplicates_have_exactly_one_winner_every_round(fresh, pattern):
    p = pattern(fresh)
    bad_rounds = rounds_with_problems(p.duplicates, ROUNDS)
    report(f"{p.name}: {THREADS} threads x {ROUNDS} rounds of one operation: {ROUNDS - len(bad_rounds)} rounds with "
          f"exactly one winner and one effect, {len(bad_rounds)} without; {p.resends.count} sends repeated on "
          f"DynamoDB's 'send again'")
    assert bad_rounds == {}


@by_name
def test_concurrent_distinct_operations_lose_no_update(fresh, pattern):
    p = pattern(fresh)
    bad_rounds = rounds_with_problems(p.distinct, DISTINCT_ROUNDS)
    report(f"{p.name}: {THREADS} threads x {DISTINCT_ROUNDS} rounds of distinct operations: "
          f"{len(bad_rounds)} rounds with a lost update or a wrong answer; {p.resends.count} sends repeated")
    assert bad_rounds == {}


def test_naive_concurrent_copies_all_apply(table):
    code = nb(NB03)
    open_wallet(table, "w", 10_000)
    outcomes = race(lambda i: code["debit_naive"](table, "w", 1, "same"), THREADS)
    assert outcomes == ["applied"] * THREADS and read_balance(table, "w") == 10_000 - THREADS


@pytest.mark.skipif(backends.backend_name() != "moto", reason="stock moto is only a question on the moto backend")
def test_stock_moto_without_the_lock_really_loses_updates(db, table):
    """The proof that the tests above can fail: the same load through moto's own, unserialized handler."""
    stock = db._session.resource(
        "dynamodb", endpoint_url=db.endpoint_url,
        config=Config(max_pool_connections=64, retries={"mode": "standard", "total_max_attempts": 1}),
    ).Table(table.name)
    stock.meta.client.meta.events.register("before-send", botocore_stubber)  # moto's own handler, no lock
    wrong_rounds, errors = 0, 0
    for _ in range(20):
        open_wallet(table, "w", 10_000)
        outcomes = race(lambda i: stock.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                                                    ExpressionAttributeValues={":a": 1}), THREADS)
        errors += sum(isinstance(o, Exception) for o in outcomes)
        wrong_rounds += read_balance(table, "w") != 10_000 - THREADS
    report(f"stock moto, {THREADS} threads x 20 rounds of distinct debits: "
          f"{wrong_rounds} rounds with a wrong balance, {errors} calls failed")
    assert wrong_rounds > 0
