"""watch_attempts (helpers/wire.py): every request on the wire, retries included."""

from __future__ import annotations

import pytest
from botocore.exceptions import ReadTimeoutError

from helpers import LostResponses, open_wallet, read_balance
from helpers.wire import watch_attempts


def debit(table):
    table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": 10})


def test_sdk_retries_show_as_numbered_attempts(fresh):
    table = fresh(sdk_retries=True)
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    seen = []
    watch_attempts(table, seen.append)
    debit(table)                                           # one call from the application
    assert [(a.operation, a.number, a.answered, a.error) for a in seen] == [
        ("UpdateItem", 1, False, "ReadTimeoutError"),
        ("UpdateItem", 2, True, None),
    ]
    assert read_balance(table, "w") == 80                  # both attempts applied


def test_without_sdk_retries_there_is_one_attempt(fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    seen = []
    watch_attempts(table, seen.append)
    with pytest.raises(ReadTimeoutError):
        debit(table)
    assert [(a.number, a.answered) for a in seen] == [(1, False)]
    assert read_balance(table, "w") == 90


def test_operations_filter_and_reads_are_seen_too(fresh):
    table = fresh()
    seen, updates = [], []
    watch_attempts(table, seen.append)
    watch_attempts(table, updates.append, operations={"UpdateItem"})
    open_wallet(table, "w", 100)
    read_balance(table, "w")
    debit(table)
    assert [a.operation for a in seen] == ["PutItem", "GetItem", "UpdateItem"]
    assert [a.operation for a in updates] == ["UpdateItem"]


def test_bad_arguments_are_refused(table):
    with pytest.raises(TypeError, match="on_attempt must be callable"):
        watch_attempts(table, on_attempt="print")
    with pytest.raises(TypeError, match="expected a boto3 client"):
        watch_attempts(object(), print)
