"""Notebook 03's own debit functions and client, under lost responses and bad input."""

from __future__ import annotations

import math
from decimal import Decimal

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
def test_property_idempotent_equals_the_truth_naive_overcharges_per_lost_response(nb, db, schedule, payments):
    """Over generated lost-response schedules: idempotent == truth; naive == truth - amount x retries."""
    naive_table, good_table = (helpers.fresh_table(db, f"test-property-{kind}") for kind in ("naive", "good"))
    naive_balance, naive_seen, naive_faults = run_payments(nb, naive_table, nb["debit_naive"], schedule, payments)
    good_balance, good_seen, good_faults = run_payments(nb, good_table, nb["debit_idempotent"], schedule, payments)
    assert naive_faults.sent == good_faults.sent      # the same attempts reached the table
    retries = good_faults.sent - payments
    assert good_balance == 1000 - 5 * payments
    assert naive_balance == 1000 - 5 * payments - 5 * retries
    assert "gave up" not in good_seen or len(good_faults.lost) >= nb["MAX_ATTEMPTS"]


BAD_INPUTS = [
    ("negative amount", dict(amount=-10), "amount must be positive"),
    ("zero amount", dict(amount=0), "amount must be positive"),
    ("float amount", dict(amount=2.5), "not a float"),
    ("NaN amount", dict(amount=math.nan), "finite"),
    ("infinite amount", dict(amount=math.inf), "finite"),
    ("Decimal fraction", dict(amount=Decimal("1.5")), "whole number"),
    ("39-digit amount", dict(amount=10**38), "at most 38"),
    ("bool amount", dict(amount=True), "whole number"),
    ("string amount", dict(amount="10"), "whole number"),
    ("empty request ID", dict(request_id=""), "must not be empty"),
    ("blank request ID", dict(request_id="   "), "must not be empty"),
    ("non-string request ID", dict(request_id=42), "must be a string"),
    ("37-character request ID", dict(request_id="x" * 37), "at most 36"),
    ("empty wallet ID", dict(wallet_id=""), "wallet_id must be a non-empty string"),
    ("missing wallet", dict(wallet_id="nobody"), "wallet 'nobody' does not exist"),
]


CASES = [
    pytest.param(debit, override, message, id=f"{debit}: {case}")
    for debit in ("debit_naive", "debit_idempotent")
    for case, override, message in BAD_INPUTS
    if not (debit == "debit_naive" and "request ID" in case)  # the naive debit ignores the request ID
]


@pytest.mark.parametrize("debit_name, override, message", CASES)
def test_bad_input_is_refused_and_nothing_is_written(nb, table, debit_name, override, message):
    open_wallet(table, "alice", 100)
    before = table.scan(ConsistentRead=True)["Items"]
    args = dict(wallet_id="alice", amount=10, request_id="req-1") | override
    with pytest.raises((ValueError, LookupError), match=message):
        nb[debit_name](table, args["wallet_id"], args["amount"], args["request_id"])
    assert table.scan(ConsistentRead=True)["Items"] == before
