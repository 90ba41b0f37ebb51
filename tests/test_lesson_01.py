"""Notebook 01's own updates: fixed values are idempotent, counters are not, and order needs a condition."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import BadInput, LostResponses, read_item
from helpers.late_retry import late_retry

from notebook_code import lesson

NB = "01_fixed_value_updates.ipynb"


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


def lost_at(schedule):
    return [i for i, lost in enumerate(schedule) if lost]


def test_five_copies_of_a_fixed_value_equal_one(nb):
    once, sent_once = nb["run"](nb["ship"], lost_at=[])
    many, sent_many = nb["run"](nb["ship"], lost_at=[0, 1, 2, 3])
    assert (sent_once, sent_many) == (1, 5)
    assert once == many == {"attempts": 0, "pk": nb["ORDER"], "status": "shipped"}


def test_a_counter_counts_every_copy(nb):
    once, _ = nb["run"](nb["count_attempt"], lost_at=[])
    many, sent = nb["run"](nb["count_attempt"], lost_at=[0, 1, 2, 3])
    assert once["attempts"] == 1
    assert many["attempts"] == sent == 5


# Losing MAX_ATTEMPTS responses in a row would make the sender give up: keep runs of losses shorter.
schedules = st.lists(st.booleans(), max_size=12).filter(lambda s: "T" * 8 not in "".join("TF"[not x] for x in s))


@settings(max_examples=30)
@given(schedule=schedules)
def test_property_fixed_value_is_idempotent_counter_is_not(nb, schedule):
    once, _ = nb["run"](nb["ship"], lost_at=[])
    shipped, sent = nb["run"](nb["ship"], lost_at=lost_at(schedule))
    assert shipped == once
    counted, sent_counted = nb["run"](nb["count_attempt"], lost_at=lost_at(schedule))
    assert sent_counted == sent
    assert counted["attempts"] == sent          # 1 + one per lost response before the first answer


def test_the_sender_gives_up_after_max_attempts(nb):
    with pytest.raises(TimeoutError, match="no answer after 8 attempts"):
        nb["run"](nb["ship"], lost_at=range(nb["MAX_ATTEMPTS"]))


def test_a_late_fixed_value_retry_overwrites_newer_state(nb):
    log = late_retry(nb["set_status"], nb)
    assert list(log["caller_saw"]) == ["timeout", "applied", "applied"]
    assert list(log["status_now"]) == ["packed", "shipped", "packed"]


def test_the_guarded_update_rejects_the_late_retry(nb):
    log = late_retry(nb["advance_status"], nb)
    assert list(log["caller_saw"]) == ["timeout", "applied", "StaleUpdate"]
    assert list(log["status_now"]) == ["packed", "shipped", "shipped"]


def test_the_guarded_update_calls_a_prompt_retry_already_applied(nb, table):
    table.put_item(Item={"pk": "o", "status": "placed"})
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        nb["advance_status"](table, "o", "packed")
    assert nb["advance_status"](table, "o", "packed") == "already applied"
    assert nb["advance_status"](table, "o", "shipped") == "applied"
    assert read_item(table, {"pk": "o"})["status"] == "shipped"


def test_the_version_check_applies_at_the_expected_version_only(nb, table):
    """The version-number alternative: a write read at a version that has moved on is refused, and nothing changes.

    (No other test ran `set_status_at_version`: tools/mutants.py found both of its mutants alive.)"""
    table.put_item(Item={"pk": "o", "status": "placed", "version": 0})
    assert nb["set_status_at_version"](table, "o", "packed", 0) == "applied"
    assert read_item(table, {"pk": "o"}) == {"pk": "o", "status": "packed", "version": 1}
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        nb["set_status_at_version"](table, "o", "placed", 0)         # read at version 0: stale now
    assert read_item(table, {"pk": "o"}) == {"pk": "o", "status": "packed", "version": 1}


def test_the_guarded_update_refuses_skipping_a_state(nb, table):
    table.put_item(Item={"pk": "o", "status": "placed"})
    with pytest.raises(nb["StaleUpdate"], match="is 'placed'; refusing to set 'shipped'"):
        nb["advance_status"](table, "o", "shipped")
    assert read_item(table, {"pk": "o"})["status"] == "placed"


@pytest.mark.parametrize("update", ["set_status", "advance_status"])
@pytest.mark.parametrize("status", ["delivered", "", None, "Shipped"])
def test_an_unknown_status_is_refused_and_nothing_is_written(nb, table, update, status):
    table.put_item(Item={"pk": "o", "status": "placed"})
    with pytest.raises(BadInput, match="status must be one of"):
        nb[update](table, "o", status)
    assert table.scan(ConsistentRead=True)["Items"] == [{"pk": "o", "status": "placed"}]


def test_a_missing_order_is_refused_by_the_guarded_update(nb, table):
    with pytest.raises(LookupError, match="order 'nobody' does not exist"):
        nb["advance_status"](table, "nobody", "packed")
    assert table.scan(ConsistentRead=True)["Items"] == []
