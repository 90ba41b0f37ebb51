"""Notebook 02's own creates: the first write wins, a naive retry overwrites, ALL_OLD catches a conflict."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import BadInput, read_item

from notebook_code import lesson

NB = "02_conditional_creates.ipynb"


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


def test_a_naive_retry_overwrites_the_server_stamp(nb):
    log, _ = nb["run"](nb["create_naive"], lost_at=[0])
    assert list(log["caller_saw"]) == ["timeout", "created"]
    assert list(log["created_at"]) == [0, 1]


@pytest.mark.parametrize("create", ["create_once", "create_checked"])
def test_a_conditional_retry_leaves_the_first_write(nb, create):
    log, item = nb["run"](nb[create], lost_at=[0])
    assert list(log["caller_saw"]) == ["timeout", "already created"]
    assert list(log["created_at"]) == [0, 0]
    assert {k: item[k] for k in ("customer", "amount")} == {"customer": "alice", "amount": 25}


def test_the_condition_fails_with_its_error_code_and_writes_nothing(nb, table):
    from botocore.exceptions import ClientError

    assert nb["create_once"](table, "o", "alice", 25) == "created"
    before = read_item(table, {"pk": "o"})
    with pytest.raises(ClientError) as raised:
        table.put_item(Item={"pk": "o", "customer": "x", "amount": 1}, ConditionExpression="attribute_not_exists(pk)")
    assert raised.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert read_item(table, {"pk": "o"}) == before


schedules = st.lists(st.booleans(), max_size=10).filter(lambda s: "T" * 8 not in "".join("TF"[not x] for x in s))


@settings(max_examples=30)
@given(schedule=schedules)
def test_property_the_first_write_wins_the_naive_last_write_wins(nb, schedule):
    lost = [i for i, x in enumerate(schedule) if x]
    once_log, _ = nb["run"](nb["create_once"], lost_at=lost)
    naive_log, _ = nb["run"](nb["create_naive"], lost_at=lost)
    attempts = len(once_log)
    assert len(naive_log) == attempts
    assert list(once_log["created_at"]) == [0] * attempts
    assert list(naive_log["created_at"]) == list(range(attempts))
    expected_last = "created" if attempts == 1 else "already created"
    assert once_log["caller_saw"].iloc[-1] == expected_last
    assert naive_log["caller_saw"].iloc[-1] == "created"


def test_create_once_reports_someone_elses_row_as_success(nb, table):
    assert nb["create_once"](table, "o", "alice", 25) == "created"
    assert nb["create_once"](table, "o", "bob", 40) == "already created"      # the silent wrong success
    assert read_item(table, {"pk": "o"})["customer"] == "alice"


def test_create_checked_tells_a_retry_from_a_conflict(nb, table):
    assert nb["create_checked"](table, "o", "alice", 25) == "created"
    assert nb["create_checked"](table, "o", "alice", 25) == "already created"
    with pytest.raises(nb["OrderConflict"], match=r"differs in amount, customer\); nothing was written"):
        nb["create_checked"](table, "o", "bob", 40)
    with pytest.raises(nb["OrderConflict"], match=r"differs in amount\)"):
        nb["create_checked"](table, "o", "alice", 26)
    item = read_item(table, {"pk": "o"})
    assert (item["customer"], item["amount"]) == ("alice", 25)


BAD = [
    (("", "alice", 25), "order_id must be a non-empty string"),
    ((None, "alice", 25), "order_id must be a non-empty string"),
    (("o", "  ", 25), "customer must be a non-empty string"),
    (("o", "alice", 0), "amount must be positive"),
    (("o", "alice", -5), "amount must be positive"),
    (("o", "alice", 2.5), "not a float"),
    (("o", "alice", math.nan), "finite"),
    (("o", "alice", "25"), "whole number"),
]


@pytest.mark.parametrize("create", ["create_naive", "create_once", "create_checked"])
@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_refused_and_nothing_is_written(nb, table, create, args, message):
    with pytest.raises(BadInput, match=message):
        nb[create](table, *args)
    assert table.scan(ConsistentRead=True)["Items"] == []
