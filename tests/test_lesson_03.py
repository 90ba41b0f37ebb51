"""Notebook 03's own debit functions and client, under lost responses (bad input: test_bad_input.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from helpers import LostResponses, open_wallet, read_balance

from notebook_code import lesson

NB = "03_request_id_increments.ipynb"


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


def run_payments(nb, table, debit, schedule, payments, amount=5, fresh_id_per_retry=False):
    open_wallet(table, nb["WALLET"], 1000)
    faults = LostResponses(at=[i for i, lost in enumerate(schedule) if lost]).install(table)
    ids, log = helpers.RequestIds(1), helpers.EventLog()
    seen = [nb["pay"](table, debit, amount, ids, log, n, fresh_id_per_retry) for n in range(payments)]
    return read_balance(table, nb["WALLET"]), seen, faults


def test_naive_retries_double_charge(nb, table):
    balance, seen, faults = run_payments(nb, table, nb["debit_naive"], [True, False, True, True], payments=2)
    assert seen == ["applied", "applied"]
    assert faults.sent == 5                      # 2 payments + 3 retries
    assert balance == 1000 - 5 * 5               # every attempt debited


def test_idempotent_retries_charge_once(nb, table):
    balance, seen, faults = run_payments(nb, table, nb["debit_idempotent"], [True, False, True, True], payments=2)
    assert seen == ["already applied", "already applied"]
    assert balance == 1000 - 2 * 5


def test_fresh_id_per_retry_is_as_bad_as_naive(nb, table):
    balance, _, _ = run_payments(nb, table, nb["debit_idempotent"], [True, False], payments=1, fresh_id_per_retry=True)
    assert balance == 1000 - 2 * 5


schedules = st.lists(st.booleans(), max_size=40)


@settings(max_examples=60)
@given(schedule=schedules, payments=st.integers(1, 8))
def test_property_the_naive_debit_overcharges_one_amount_per_lost_response(nb, db, schedule, payments):
    """The Monte Carlo's premise, over generated lost-response schedules: naive == truth - amount x retries.

    (That the request-ID debit equals the truth under lost responses and duplicates is the specification's
    checker's: tests/test_specification_lessons.py.)"""
    table = helpers.fresh_table(db, "test-property-naive")
    balance, _, faults = run_payments(nb, table, nb["debit_naive"], schedule, payments)
    retries = faults.sent - payments
    assert balance == 1000 - 5 * payments - 5 * retries
