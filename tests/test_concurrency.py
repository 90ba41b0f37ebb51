"""Concurrency: DynamoDB applies each write atomically, and so must the default backend."""

from __future__ import annotations

import sys

import pytest
from botocore.config import Config
from moto.core.models import botocore_stubber

from helpers import backends, open_wallet, read_balance
from helpers.concurrency import race
from notebook_code import lesson

THREADS, ROUNDS = 32, 200


@pytest.fixture(autouse=True)
def fast_thread_switching():
    """Switch threads every 0.5 ms (default 5 ms): races that exist show up far more often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    yield
    sys.setswitchinterval(before)


def test_same_guarded_debit_from_32_threads_has_exactly_one_winner_every_round(table):
    nb = lesson("03_request_id_increments.ipynb")
    debit = nb["debit_idempotent"]
    bad_rounds = []
    for round_number in range(ROUNDS):
        open_wallet(table, "w", 10_000)
        request_id = f"round-{round_number}"
        outcomes = race(lambda i: debit(table, "w", 7, request_id), THREADS)
        winners = outcomes.count("applied")
        if winners != 1 or outcomes.count("already applied") != THREADS - 1 or read_balance(table, "w") != 9_993:
            bad_rounds.append((round_number, winners, outcomes))
    print(f"\n{THREADS} threads x {ROUNDS} rounds of one guarded debit: {len(bad_rounds)} rounds without exactly one winner")
    assert bad_rounds == []


def test_distinct_debits_from_32_threads_lose_no_update(table):
    nb = lesson("03_request_id_increments.ipynb")
    debit = nb["debit_idempotent"]
    lost = 0
    for round_number in range(ROUNDS // 4):
        open_wallet(table, "w", 10_000)
        outcomes = race(lambda i: debit(table, "w", 3, f"r{round_number}-{i}"), THREADS)
        assert outcomes == ["applied"] * THREADS
        lost += (read_balance(table, "w") - (10_000 - 3 * THREADS)) // 3
    print(f"\n{THREADS} threads x {ROUNDS // 4} rounds of distinct debits: {lost} lost updates")
    assert lost == 0


def test_naive_concurrent_copies_all_apply(table):
    nb = lesson("03_request_id_increments.ipynb")
    open_wallet(table, "w", 10_000)
    outcomes = race(lambda i: nb["debit_naive"](table, "w", 1, "same"), THREADS)
    assert outcomes == ["applied"] * THREADS and read_balance(table, "w") == 10_000 - THREADS


@pytest.mark.skipif(backends.backend_name() != "moto", reason="stock moto is only a question on the moto backend")
def test_stock_moto_without_the_lock_really_loses_updates(db, table):
    """The proof that the tests above can fail: the same load through moto's own, unserialized handler."""
    stock = db._session.resource(
        "dynamodb", endpoint_url=db.endpoint_url, config=Config(max_pool_connections=64, retries={"mode": "standard", "total_max_attempts": 1})
    ).Table(table.name)
    stock.meta.client.meta.events.register("before-send", botocore_stubber)  # moto's own handler, no lock
    wrong_rounds, errors = 0, 0
    for round_number in range(20):
        open_wallet(table, "w", 10_000)
        outcomes = race(lambda i: stock.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                                                    ExpressionAttributeValues={":a": 1}), THREADS)
        errors += sum(isinstance(o, Exception) for o in outcomes)
        wrong_rounds += read_balance(table, "w") != 10_000 - THREADS
    print(f"\nstock moto, {THREADS} threads x 20 rounds of distinct debits: "
          f"{wrong_rounds} rounds with a wrong balance, {errors} calls failed")
    assert wrong_rounds > 0
