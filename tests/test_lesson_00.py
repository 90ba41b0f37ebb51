"""Notebook 00's own scenarios: each way the same request arrives twice really debits twice."""

from __future__ import annotations

import math

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from helpers import BadInput, LostResponses, open_wallet, read_balance
from helpers.fidelity.sqs_clock import use_wall_clock
from helpers.services.gateway import Gateway
from helpers.swimlanes import Timeline

from notebook_code import lesson

NB = "00_why_retries_happen.ipynb"


@pytest.fixture(scope="module")
def nb():
    namespace = lesson(NB)          # its imports cell puts moto's SQS on db.clock
    yield namespace
    use_wall_clock()                # give the rest of the session its wall clock back


def test_client_timeout_and_resend_debits_twice(nb):
    events, balance = nb["client_timeout_and_resend"]()
    assert balance == nb["START"] - 2 * nb["AMOUNT"]
    assert list(events.query("lane == 'client'")["event"]) == [
        "sends the payment", "timeout after 5 s", "sends it again", "sees 200",
    ]
    assert events["t"].is_monotonic_increasing


def test_gateway_504_and_the_lambda_commits_anyway(nb):
    events, balance, statuses = nb["gateway_504"]()
    assert statuses == [504, 200]
    assert balance == nb["START"] - 2 * nb["AMOUNT"]
    gateway_504_at = events.query("lane == 'gateway' and event.str.contains('504')")["t"].tolist()
    first_commit_at = events.query("lane == 'table'")["t"].iloc[0]
    assert gateway_504_at == [29.0] and first_commit_at < 29.0     # committed before the caller was told 504


def test_sqs_redelivery_after_the_visibility_timeout(nb):
    events, balance, deliveries = nb["sqs_redelivery"]()
    assert [d.receive_count for d in deliveries] == [1, 2]
    assert [d.deleted for d in deliveries] == [False, True]
    assert balance == nb["START"] - 2 * nb["AMOUNT"]
    redelivered_at = events.query("event == 'delivers (receive count 2)'")["t"].iloc[0]
    assert redelivered_at > 1 + nb["VISIBILITY_TIMEOUT"]          # not before the timeout ran out


def test_the_sdk_retry_debits_twice_and_without_it_the_write_still_applied(nb):
    _, balance_on, outcome_on = nb["sdk_retry"](sdk_retries=True)
    _, balance_off, outcome_off = nb["sdk_retry"](sdk_retries=False)
    assert (outcome_on, balance_on) == ("success", nb["START"] - 2 * nb["AMOUNT"])
    assert (outcome_off, balance_off) == ("ReadTimeoutError", nb["START"] - nb["AMOUNT"])


@settings(max_examples=25)
@given(schedule=st.lists(st.booleans(), max_size=6))
def test_property_one_sdk_call_debits_once_per_attempt_that_reached_the_table(nb, db, schedule):
    """botocore sends up to 3 attempts; each lost response before an answer is one more debit."""
    table = helpers.fresh_table(db, "test-lesson-00-sdk", sdk_retries=True)
    open_wallet(table, nb["WALLET"], 100)
    faults = LostResponses(at=[i for i, lost in enumerate(schedule) if lost]).install(table)
    try:
        nb["debit"](table, nb["WALLET"], 10)
        saw = "success"
    except ReadTimeoutError:
        saw = "timeout"
    leading_losses = next((i for i, lost in enumerate(schedule) if not lost), len(schedule))
    attempts = min(leading_losses + 1, helpers.backends.SDK_MAX_ATTEMPTS)
    assert faults.sent == attempts
    assert read_balance(table, nb["WALLET"]) == 100 - 10 * attempts
    assert saw == ("timeout" if leading_losses >= helpers.backends.SDK_MAX_ATTEMPTS else "success")


@settings(max_examples=25)
@given(durations=st.lists(st.floats(0, 120, allow_nan=False), min_size=1, max_size=5))
def test_property_behind_a_gateway_every_invocation_debits(nb, db, durations):
    """A caller retrying every 504 debits once per invocation; it stops at the first answer within 29 s."""
    table = helpers.fresh_table(db, "test-lesson-00-gateway")
    open_wallet(table, nb["WALLET"], 1000)
    timeline = Timeline(db.clock)
    handler = nb["payment_handler"](table, timeline, seconds=durations)
    gateway = Gateway(db.clock)
    statuses = []
    for _ in durations:
        statuses.append(gateway.request(handler, {}).status)
        if statuses[-1] == 200:
            break
    assert statuses == [504 if d > 29 else 200 for d in durations[: len(statuses)]]
    assert read_balance(table, nb["WALLET"]) == 1000 - nb["AMOUNT"] * len(statuses)


@pytest.mark.parametrize(
    "wallet_id, amount, message",
    [("alice", -10, "must be positive"), ("alice", 2.5, "not a float"), ("alice", math.inf, "finite"),
     ("", 10, "wallet_id must be a non-empty string")],
)
def test_bad_input_is_refused_and_nothing_is_written(nb, table, wallet_id, amount, message):
    open_wallet(table, "alice", 100)
    with pytest.raises(BadInput, match=message):
        nb["debit"](table, wallet_id, amount)
    assert read_balance(table, "alice") == 100


def test_a_missing_wallet_is_not_created_by_the_debit(nb, table):
    with pytest.raises(ClientError) as raised:
        nb["debit"](table, "nobody", 10)
    assert raised.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert table.scan(ConsistentRead=True)["Items"] == []
