"""Lost responses: the write commits, the caller sees a timeout -- on every backend."""

from __future__ import annotations

import pytest
from botocore.exceptions import ReadTimeoutError

import helpers
from helpers import LostResponses, open_wallet, read_balance


def naive_update(table, amount=10):
    table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": amount})


def test_with_sdk_retries_botocore_resends_and_the_debit_lands_twice(fresh, db):
    table = fresh(sdk_retries=True)
    open_wallet(table, "w", 100)
    faults = LostResponses(at=[0]).install(table)
    before = db.clock.now()
    naive_update(table)                          # called once; no error reaches the application
    assert read_balance(table, "w") == 80        # ...but botocore sent it twice
    assert faults.sent == 2 and faults.lost == [0]
    assert db.clock.now() - before == pytest.approx(0.025, abs=1e-6)  # one backoff, on the virtual clock


def test_without_sdk_retries_the_application_sees_the_timeout_and_the_write_applied(fresh):
    table = fresh(sdk_retries=False)
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        naive_update(table)
    assert read_balance(table, "w") == 90        # committed, although the caller saw a timeout
    naive_update(table)                          # the application's retry is the second debit
    assert read_balance(table, "w") == 80


def test_sdk_retries_give_up_after_three_attempts(fresh):
    table = fresh(sdk_retries=True)
    open_wallet(table, "w", 100)
    LostResponses(at=[0, 1, 2]).install(table)
    with pytest.raises(ReadTimeoutError):
        naive_update(table)
    assert read_balance(table, "w") == 70        # all three attempts were applied


def test_reads_are_never_lost(fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    faults = LostResponses(at=range(100)).install(table)
    assert read_balance(table, "w") == 100
    assert faults.sent == 0


def test_a_failed_condition_can_lose_its_response_too(fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = :z",
                          ConditionExpression="attribute_not_exists(pk)", ExpressionAttributeValues={":z": 0})
    assert read_balance(table, "w") == 100       # nothing was applied


def test_schedules_are_seeded():
    assert LostResponses(p=0.3, seed=5).decide_many(50) == LostResponses(p=0.3, seed=5).decide_many(50)
    assert LostResponses(p=0.3, seed=5).decide_many(50) != LostResponses(p=0.3, seed=6).decide_many(50)
    assert LostResponses(at=[1, 3]).decide_many(5) == [False, True, False, True, False]


@pytest.mark.parametrize("p", [-0.1, 1.0, float("nan")])
def test_a_schedule_must_let_responses_through(p):
    with pytest.raises(ValueError, match="probability below 1"):
        LostResponses(p=p)


def test_install_rejects_what_is_not_a_client():
    with pytest.raises(TypeError, match="expected a boto3 client"):
        LostResponses().install("not a client")


def test_request_ids_are_seeded_uuids():
    import uuid

    ids = [helpers.RequestIds(seed=4).next() for _ in range(2)]
    assert ids[0] == ids[1] and uuid.UUID(ids[0]).version == 4
    stream = helpers.RequestIds(seed=4)
    assert len({stream.next() for _ in range(1000)}) == 1000
