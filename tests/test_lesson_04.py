"""Notebook 04's own functions: where the last_request_id debit stops, caught failing.

Property-based tests generate delivery schedules (duplicates, reorderings, lost responses): the
last_request_id debit double-applies exactly when a request returns after a different one (ABA), and the
ledger never does.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from harness.wallets import check_last_request_id, deliver, module_fixtures, new_wallet, schedules, truth
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import LostResponses
from helpers.concurrency import race

NB = "04_where_it_stops.ipynb"
nb, name = module_fixtures(NB, "test-04")   # the notebook's own code; one table for the module
SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


# --- 1 · ABA --------------------------------------------------------------

def test_aba_debits_twice(nb, db, name):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    debit = nb["debit_idempotent"]
    assert [debit(table, wallet_id, a, r) for a, r in [(10, "A"), (20, "B"), (10, "A")]] == ["applied"] * 3
    assert nb["read_balance"](table, wallet_id) == 60             # the truth is 70
    assert debit(table, wallet_id, 10, "A") == "already applied"   # right behind itself: caught


@SETTINGS
@given(schedule=schedules)
def test_property_last_request_id_double_applies_exactly_in_the_aba_shape(nb, db, name, schedule):
    check_last_request_id(nb, db, name, schedule)


@SETTINGS
@given(schedule=schedules)
def test_property_the_ledger_never_double_applies(nb, db, name, schedule):
    order, lost = schedule
    balance, seen = deliver(nb, db, name, nb["debit_ledger"], order, sorted(lost))
    assert balance == truth(order)
    firsts = {order.index(r) for r in set(order)}
    assert all(s in ("applied", "timeout") for n, s in enumerate(seen) if n in firsts)
    assert all(s in ("already applied", "timeout") for n, s in enumerate(seen) if n not in firsts)


def test_the_notebooks_search_finds_aba_for_last_request_id_and_nothing_for_the_ledger(nb, db, name):
    table = db.table(name)
    assert nb["smallest_counterexample"](nb["debit_idempotent"], table) == ["A", "B", "A"]
    assert nb["smallest_counterexample"](nb["debit_ledger"], table) is None


@pytest.mark.parametrize("debit_name", ["debit_idempotent", "debit_ledger"])
def test_concurrent_duplicates_apply_once(nb, db, name, debit_name):
    table = db.table(name)
    debit = nb[debit_name]
    for round_number in range(5):
        wallet_id = new_wallet(nb, table, 100)
        outcomes = race(lambda i: debit(table, wallet_id, 5, f"r{round_number}"), threads=8)
        assert outcomes.count("applied") == 1 and outcomes.count("already applied") == 7
        assert nb["read_balance"](table, wallet_id) == 95


def test_concurrent_duplicates_after_another_request_still_slip_through_last_request_id(nb, db, name):
    """ABA under concurrency: one late copy of A after B is applied again, the others are refused."""
    table = db.table(name)
    debit = nb["debit_idempotent"]
    wallet_id = new_wallet(nb, table, 100)
    debit(table, wallet_id, 10, "A")
    debit(table, wallet_id, 20, "B")
    outcomes = race(lambda i: debit(table, wallet_id, 10, "A"), threads=8)
    assert outcomes.count("applied") == 1
    assert nb["read_balance"](table, wallet_id) == 60


# --- 3 · the overdraft guard -------------------------------------------------

def test_the_guard_makes_the_failure_ambiguous_until_all_old(nb, db, name):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 30)
    ambiguous, guarded = nb["debit_guarded_ambiguous"], nb["debit_guarded"]
    assert guarded(table, wallet_id, 10, "r1") == "applied"
    assert (ambiguous(table, wallet_id, 10, "r1") == ambiguous(table, wallet_id, 50, "r2")
            == "ConditionalCheckFailedException")
    assert guarded(table, wallet_id, 10, "r1") == "already applied"
    assert guarded(table, wallet_id, 50, "r2") == nb["INSUFFICIENT"]
    assert nb["read_balance"](table, wallet_id) == 20


def test_a_late_copy_after_another_debit_is_not_told_a_plain_insufficient_funds(nb, db, name):
    """r1 is applied, then r2; a late copy of r1 finds too little money. Its money was taken, so a plain
    "insufficient funds" would be false: the answer must say it is ambiguous (before this, it was the plain one)."""
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 40)
    guarded = nb["debit_guarded"]
    assert [guarded(table, wallet_id, 20, "r1"), guarded(table, wallet_id, 10, "r2")] == ["applied", "applied"]
    late = guarded(table, wallet_id, 20, "r1")
    assert late != "insufficient funds" and late == nb["INSUFFICIENT"]
    assert "unless applied before another debit" in late
    assert nb["read_balance"](table, wallet_id) == 10                     # r1's 20 was taken, once


@SETTINGS
@given(debits=st.lists(st.tuples(st.sampled_from("ABC"), st.integers(1, 60)), min_size=1, max_size=8))
def test_property_the_guard_never_overdraws_and_names_the_reason(nb, db, name, debits):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    balance, last = 100, None
    for request, amount in debits:
        outcome = nb["debit_guarded"](table, wallet_id, amount, request)
        if request == last:
            expected = "already applied"
        elif amount > balance:
            expected = nb["INSUFFICIENT"]
        else:
            expected, balance, last = "applied", balance - amount, request
        assert outcome == expected
    assert nb["read_balance"](table, wallet_id) == balance >= 0


# --- 4 · no replay -----------------------------------------------------------

def test_a_retry_gets_no_receipt(nb, db, name):
    table, client_side = db.table(name), db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    LostResponses(at=[0]).install(client_side)
    with pytest.raises(ReadTimeoutError):
        nb["debit_with_receipt"](client_side, wallet_id, 10, "A")
    assert nb["debit_with_receipt"](client_side, wallet_id, 10, "A") == {
        "outcome": "already applied", "new_balance": None}
    assert nb["debit_with_receipt"](table, wallet_id, 5, "B") == {"outcome": "applied", "new_balance": 85}


def test_other_errors_are_not_swallowed(nb, db):
    missing = db.table("no-such-table-04")
    for debit_name in ("debit_idempotent", "debit_ledger", "debit_guarded"):
        with pytest.raises(ClientError) as error:
            nb[debit_name](missing, "alice", 10, "req-1")
        assert error.value.response["Error"]["Code"] == "ResourceNotFoundException"
