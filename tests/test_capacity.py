"""ConsumedCapacity: the figures DynamoDB Local reports, and the moto default reports the same.

Every expected number below was measured on DynamoDB Local 3.3.1; the same test runs on moto
(where `helpers/fidelity/faithful_moto.py` rewrites moto's own, wrong, figures). Items are kept well
away from KB boundaries, where exact byte counts could differ.
"""

from __future__ import annotations

import itertools

import pytest
from botocore.exceptions import ClientError

from helpers.fidelity import capacity

_keys = itertools.count()


@pytest.fixture
def sk_table(fresh):
    return fresh(sort_key="sk")


def put(table, size, *, condition=False):
    action = {"TableName": table.name, "Item": {"pk": "w", "sk": f"i{next(_keys)}", "d": "x" * size}}
    if condition:
        action["ConditionExpression"] = "attribute_not_exists(sk)"
    return {"Put": action}


def transact(table, actions, mode="TOTAL", **extra):
    response = table.meta.client.transact_write_items(TransactItems=actions, ReturnConsumedCapacity=mode, **extra)
    return {entry["TableName"]: entry["CapacityUnits"] for entry in response["ConsumedCapacity"]}


def single(response):
    return response["ConsumedCapacity"]["CapacityUnits"]


def test_single_item_writes_cost_one_unit_per_started_kb_of_the_larger_version(sk_table):
    client, name = sk_table.meta.client, sk_table.name
    key = {"pk": "w", "sk": "wallet"}
    assert single(client.put_item(TableName=name, Item=key | {"balance": 100}, ReturnConsumedCapacity="TOTAL")) == 1.0
    update = dict(TableName=name, Key=key, UpdateExpression="SET balance = balance - :a",
                  ExpressionAttributeValues={":a": 1}, ReturnConsumedCapacity="TOTAL")
    assert single(client.update_item(**update)) == 1.0       # stock moto says 0.5
    big = client.put_item(TableName=name, Item=key | {"d": "x" * 2500}, ReturnConsumedCapacity="TOTAL")
    assert single(big) == 3.0
    shrink = client.put_item(TableName=name, Item=key | {"balance": 1}, ReturnConsumedCapacity="TOTAL")
    assert single(shrink) == 3.0                              # the larger of before and after
    assert single(client.delete_item(TableName=name, Key=key, ReturnConsumedCapacity="TOTAL")) == 1.0
    assert single(client.delete_item(TableName=name, Key=key, ReturnConsumedCapacity="TOTAL")) == 1.0


def test_indexes_mode_adds_the_table_breakdown(sk_table):
    response = sk_table.meta.client.update_item(
        TableName=sk_table.name, Key={"pk": "w", "sk": "wallet"}, UpdateExpression="SET balance = :b",
        ExpressionAttributeValues={":b": 1}, ReturnConsumedCapacity="INDEXES")
    assert response["ConsumedCapacity"] == {"TableName": sk_table.name, "CapacityUnits": 1.0,
                                            "Table": {"CapacityUnits": 1.0}}


def test_no_capacity_unless_asked(sk_table):
    response = sk_table.meta.client.update_item(
        TableName=sk_table.name, Key={"pk": "w", "sk": "wallet"}, UpdateExpression="SET balance = :b",
        ExpressionAttributeValues={":b": 1})
    assert "ConsumedCapacity" not in response


def test_reads_cost_one_unit_per_4kb_and_half_when_eventually_consistent(sk_table):
    client, name = sk_table.meta.client, sk_table.name
    client.put_item(TableName=name, Item={"pk": "w", "sk": "big", "d": "x" * 5000})
    get = dict(TableName=name, Key={"pk": "w", "sk": "big"}, ReturnConsumedCapacity="TOTAL")
    assert single(client.get_item(**get, ConsistentRead=True)) == 2.0
    assert single(client.get_item(**get)) == 1.0
    missing = dict(get, Key={"pk": "w", "sk": "missing"})
    assert single(client.get_item(**missing, ConsistentRead=True)) == 1.0


def test_a_one_action_transaction_costs_two_units_per_kb(sk_table):
    assert transact(sk_table, [put(sk_table, 10)]) == {sk_table.name: 2.0}
    assert transact(sk_table, [put(sk_table, 3000)]) == {sk_table.name: 6.0}


@pytest.mark.parametrize("sizes, reported, documented", [
    ((10, 10), 2.0, 4.0),              # two small items: DynamoDB Local reports one of them
    ((10, 10, 10, 10), 2.0, 8.0),
    ((3000, 10), 8.0, 8.0),            # 3 KB + 1 KB: distinct figures are all counted
    ((3000, 3000), 6.0, 12.0),
    ((2000, 10, 10), 6.0, 8.0),
    ((10, 2000, 3000), 12.0, 12.0),
])
def test_dynamodb_local_counts_only_distinct_action_sizes_per_table(sk_table, sizes, reported, documented):
    actions = [put(sk_table, size, condition=True) for size in sizes]
    assert transact(sk_table, actions, mode="INDEXES") == {sk_table.name: reported}
    kbs = [(sk_table.name, capacity.kilobytes(capacity.item_size(_wire(a["Put"]["Item"])))) for a in actions]
    assert capacity.transaction_units(kbs) == {sk_table.name: reported}
    assert capacity.documented_transaction_units(kbs) == {sk_table.name: documented}


def test_the_ledger_debit_transaction(sk_table):
    """Notebook 05's shape: update the wallet, put a marker. AWS documents 4.0; DynamoDB Local reports 2.0."""
    client, name = sk_table.meta.client, sk_table.name
    client.put_item(TableName=name, Item={"pk": "w", "sk": "wallet", "balance": 100})
    actions = [
        {"Update": {"TableName": name, "Key": {"pk": "w", "sk": "wallet"},
                    "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 5}}},
        {"Put": {"TableName": name, "Item": {"pk": "w", "sk": "req#1", "expires_at": 1_700_086_400},
                 "ConditionExpression": "attribute_not_exists(sk)"}},
    ]
    assert transact(sk_table, actions) == {name: 2.0}
    assert transact(sk_table, [actions[0], put(sk_table, 3000)]) == {name: 8.0}    # 1 KB update + 3 KB put


def test_condition_check_and_delete_actions(sk_table):
    client, name = sk_table.meta.client, sk_table.name
    client.put_item(TableName=name, Item={"pk": "w", "sk": "big", "d": "x" * 2500})
    check = {"ConditionCheck": {"TableName": name, "Key": {"pk": "w", "sk": "big"},
                                "ConditionExpression": "attribute_exists(pk)"}}
    assert transact(sk_table, [check, put(sk_table, 3000)]) == {name: 8.0}          # the check counts 1 KB
    delete = {"Delete": {"TableName": name, "Key": {"pk": "w", "sk": "big"}}}
    assert transact(sk_table, [delete, put(sk_table, 10)]) == {name: 8.0}           # the delete counts 3 KB


def test_two_tables_are_reported_separately(fresh):
    one, two = fresh(sort_key="sk"), fresh(sort_key="sk")
    assert transact(one, [put(one, 3000), put(two, 5000)]) == {one.name: 6.0, two.name: 10.0}


def test_a_replayed_token_reports_the_first_answer(sk_table):
    actions = [put(sk_table, 10)]
    first = transact(sk_table, actions, ClientRequestToken="capacity-token")
    assert transact(sk_table, actions, ClientRequestToken="capacity-token") == first == {sk_table.name: 2.0}


def test_failed_requests_report_no_capacity(sk_table):
    client, name = sk_table.meta.client, sk_table.name
    with pytest.raises(ClientError) as error:
        client.update_item(TableName=name, Key={"pk": "w", "sk": "wallet"}, UpdateExpression="SET b = :b",
                           ConditionExpression="attribute_exists(pk)", ExpressionAttributeValues={":b": 1},
                           ReturnConsumedCapacity="TOTAL")
    assert error.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert "ConsumedCapacity" not in error.value.response
    marker = put(sk_table, 10, condition=True)
    transact(sk_table, [marker])
    with pytest.raises(ClientError) as error:
        transact(sk_table, [marker])
    assert error.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "ConsumedCapacity" not in error.value.response


def _wire(item):
    return {k: ({"S": v} if isinstance(v, str) else {"N": str(v)}) for k, v in item.items()}


def test_item_size_follows_the_documented_rules():
    assert capacity.item_size(None) == 0
    assert capacity.item_size({"pk": {"S": "alice"}}) == 2 + 5
    assert capacity.item_size({"n": {"N": "12345"}}) == 1 + 3 + 1
    assert capacity.item_size({"b": {"BOOL": True}, "z": {"NULL": True}}) == 4
    assert capacity.item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1
    assert capacity.item_size({"l": {"L": [{"S": "ab"}]}}) == 1 + 3 + 1 + 2
    assert capacity.kilobytes(0) == 1 and capacity.kilobytes(1024) == 1 and capacity.kilobytes(1025) == 2
