"""ClientRequestToken on TransactWriteItems, as DynamoDB (and DynamoDB Local) behaves.

(A Table's client takes plain Python values, as in the notebooks.)
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from helpers import open_wallet, read_balance


def debit(table, amount, token, condition="attribute_exists(pk)"):
    return table.meta.client.transact_write_items(
        ClientRequestToken=token,
        TransactItems=[{"Update": {
            "TableName": table.name, "Key": {"pk": "w"},
            "UpdateExpression": "SET balance = balance - :a", "ConditionExpression": condition,
            "ExpressionAttributeValues": {":a": amount},
        }}],
    )


def code(error):
    return error.value.response["Error"]["Code"]


def test_replay_with_the_same_token_succeeds_without_a_second_effect(table):
    open_wallet(table, "w", 100)
    debit(table, 10, "token-1")
    debit(table, 10, "token-1")
    assert read_balance(table, "w") == 90


def test_same_token_different_parameters_is_a_mismatch(table):
    open_wallet(table, "w", 100)
    debit(table, 10, "token-2")
    with pytest.raises(ClientError) as error:
        debit(table, 20, "token-2")
    assert code(error) == "IdempotentParameterMismatchException"
    assert read_balance(table, "w") == 90


def test_a_failed_transaction_does_not_record_its_token(table):
    open_wallet(table, "w", 100)
    with pytest.raises(ClientError) as error:
        debit(table, 10, "token-3", condition="attribute_not_exists(pk)")
    assert code(error) == "TransactionCanceledException"
    debit(table, 10, "token-3")                  # same token, other parameters: runs
    assert read_balance(table, "w") == 90


def test_a_token_over_36_characters_is_rejected(table):
    open_wallet(table, "w", 100)
    with pytest.raises(ClientError) as error:
        debit(table, 10, "t" * 37)
    assert code(error) == "ValidationException"
    assert read_balance(table, "w") == 100


def test_without_a_token_each_call_applies(table):
    open_wallet(table, "w", 100)
    for _ in range(2):
        table.meta.client.transact_write_items(TransactItems=[{"Update": {
            "TableName": table.name, "Key": {"pk": "w"},
            "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 10},
        }}])
    assert read_balance(table, "w") == 80


def test_the_window_closes_after_ten_minutes_of_virtual_time(db, table):
    if db.name != "moto":
        pytest.skip("DynamoDB Local keeps its tokens on the wall clock; ten real minutes is too long for a test")
    open_wallet(table, "w", 100)
    debit(table, 10, "token-4")
    db.clock.advance(599)
    debit(table, 10, "token-4")
    assert read_balance(table, "w") == 90        # still inside the window: replayed
    db.clock.advance(2)
    debit(table, 10, "token-4")
    assert read_balance(table, "w") == 80        # outside it: a new request


def test_what_is_reported_is_not_compared(table):
    """A replay may ask for ConsumedCapacity (or not) unlike the first call: still a replay (DynamoDB Local)."""
    open_wallet(table, "w", 100)
    update = {"Update": {
        "TableName": table.name, "Key": {"pk": "w"},
        "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 10},
    }}
    client = table.meta.client
    client.transact_write_items(ClientRequestToken="token-5", TransactItems=[update])
    replay = client.transact_write_items(ClientRequestToken="token-5", TransactItems=[update],
                                         ReturnConsumedCapacity="TOTAL")
    assert replay["ConsumedCapacity"] == [{"TableName": table.name, "CapacityUnits": 2.0}]
    indexes = client.transact_write_items(ClientRequestToken="token-5", TransactItems=[update],
                                          ReturnConsumedCapacity="INDEXES", ReturnItemCollectionMetrics="SIZE")
    assert indexes["ConsumedCapacity"] == [
        {"TableName": table.name, "CapacityUnits": 2.0, "Table": {"CapacityUnits": 2.0}}]
    quiet = client.transact_write_items(ClientRequestToken="token-5", TransactItems=[update])
    assert "ConsumedCapacity" not in quiet
    assert read_balance(table, "w") == 90
