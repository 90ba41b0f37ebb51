"""Concurrency: DynamoDB applies each write atomically, and so must the default backend."""

from __future__ import annotations

from helpers import open_wallet, read_balance
from helpers.concurrency import race
from notebook_code import lesson

THREADS, ROUNDS = 32, 200


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
