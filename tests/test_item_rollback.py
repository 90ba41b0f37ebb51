"""moto's transactions rolled back item by item (helpers/fidelity/item_rollback.py) end as stock moto's do.

Random transactions -- puts, updates, deletes and condition checks, on a table with a sort key and one
without, some conditions failing, some naming one item twice -- are sent to two identical pairs of tables
in moto's own backend: once with the item-level rollback, once with moto's whole-table copy. After every
transaction both pairs must hold the same items, and both calls must have raised the same error with the
same cancellation reasons.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto.core import DEFAULT_ACCOUNT_ID

import helpers
from helpers.backends import REGION, backend_name
from helpers.fidelity import item_rollback

pytestmark = pytest.mark.skipif(backend_name() != "moto", reason="a patch of moto's own backend")

KEYS = ["a", "b", "c"]
SORTS = ["1", "2"]


@pytest.fixture(scope="module")
def worlds(db):
    """Two pairs of tables (no sort key, sort key): one for each way of rolling back."""
    pairs = []
    for side in ("cheap", "stock"):
        plain = helpers.fresh_table(db, f"rollback-{side}")
        sorted_ = helpers.fresh_table(db, f"rollback-{side}-sk", sort_key="sk")
        pairs.append((plain.name, sorted_.name))
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION], pairs


def entry(kind: str, sorted_: bool, pk: str, sk: str, guarded: bool, value: int) -> dict:
    key = {"pk": {"S": pk}, **({"sk": {"S": sk}} if sorted_ else {})}
    spec: dict = {"TableName": int(sorted_)}
    if kind == "Put":
        spec["Item"] = {**key, "n": {"N": str(value)}}
        if guarded:
            spec["ConditionExpression"] = "attribute_not_exists(pk)"
    else:
        spec["Key"] = key
    if kind == "Update":
        spec.update(UpdateExpression="ADD n :v", ExpressionAttributeValues={":v": {"N": str(value)}})
        if guarded:
            spec.update(ConditionExpression="attribute_not_exists(n) OR n < :lim",
                        ExpressionAttributeValues={":v": {"N": str(value)}, ":lim": {"N": "5"}})
    if kind == "Delete" and guarded:
        spec.update(ConditionExpression="n > :z", ExpressionAttributeValues={":z": {"N": "2"}})
    if kind == "ConditionCheck":
        spec["ConditionExpression"] = "attribute_exists(pk)" if guarded else "attribute_not_exists(pk)"
    return {kind: spec}


entries = st.builds(entry, st.sampled_from(["Put", "Update", "Delete", "ConditionCheck"]), st.booleans(),
                    st.sampled_from(KEYS), st.sampled_from(SORTS), st.booleans(), st.integers(1, 3))
transactions = st.lists(st.lists(entries, min_size=1, max_size=4), min_size=1, max_size=8)


def send(backend, names: tuple[str, str], transaction: list[dict], cheap: bool) -> str:
    items = []
    for item in transaction:
        (kind, spec), = item.items()
        items.append({kind: {**spec, "TableName": names[spec["TableName"]]}})
    try:
        if cheap:
            with item_rollback.cheap_rollback():
                backend.transact_write_items(items)
        else:
            backend.transact_write_items(items)
    except Exception as error:
        return f"{type(error).__name__}: {getattr(error, 'message', error)}"
    return "ok"


def contents(backend, names: tuple[str, str]) -> list:
    """Each table's items, as plain JSON, in key order (and which partitions exist)."""
    tables = [backend.tables[name] for name in names]
    return [sorted(json.dumps(item.to_json(), sort_keys=True) for item in table.all_items()) for table in tables] + [
        sorted(str(k) for k in tables[1].items)]


@settings(max_examples=150, deadline=None)
@given(transactions=transactions)
def test_item_rollback_ends_as_stock_moto_ends(worlds, transactions):
    backend, (cheap, stock) = worlds
    for names in (cheap, stock):
        for name in names:
            backend.tables[name].items.clear()
    for transaction in transactions:
        answers = [send(backend, cheap, transaction, cheap=True), send(backend, stock, transaction, cheap=False)]
        assert answers[0] == answers[1], transaction
        assert contents(backend, cheap) == contents(backend, stock), (transaction, answers)


def test_a_cancelled_transaction_really_is_rolled_back(worlds):
    """The comparison above could pass if neither side wrote anything: here the write and its undoing are seen."""
    backend, ((plain, sorted_), _) = worlds
    backend.tables[plain].items.clear()
    ok = [entry("Put", False, "a", "1", True, 1)]
    assert send(backend, (plain, sorted_), ok, cheap=True) == "ok"
    cancelled = [entry("Update", False, "b", "1", False, 2), entry("Put", False, "a", "1", True, 1)]
    assert send(backend, (plain, sorted_), cancelled, cheap=True).startswith("TransactionCanceledException")
    assert [json.loads(i)["Attributes"]["pk"] for i in contents(backend, (plain, sorted_))[0]] == [{"S": "a"}]
