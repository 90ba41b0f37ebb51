"""helpers.ttl.sweep deletes what DynamoDB's TTL may delete -- and nothing else -- on every backend."""

from __future__ import annotations

from helpers import connect, fresh_table, read_item
from helpers.ttl import sweep


def test_sweep_deletes_only_items_whose_ttl_number_is_past():
    db = connect()
    table = fresh_table(db, "ttl-sweep")
    now = int(db.clock.now())
    table.put_item(Item={"pk": "expired", "expires_at": now - 1})
    table.put_item(Item={"pk": "at-now", "expires_at": now})           # not less than now: not expired yet
    table.put_item(Item={"pk": "later", "expires_at": now + 60})
    table.put_item(Item={"pk": "no-ttl"})                               # no attribute: never deleted
    table.put_item(Item={"pk": "a-string", "expires_at": str(now - 1)})  # not a Number: never deleted
    assert sweep(table, now) == []                                      # TTL is off on this table
    assert sweep(table, now, attribute="expires_at") == [{"pk": "expired"}]
    assert read_item(table, {"pk": "expired"}) is None
    for kept in ("at-now", "later", "no-ttl", "a-string"):
        assert read_item(table, {"pk": kept}) is not None, kept
    table.meta.client.update_time_to_live(TableName=table.name, TimeToLiveSpecification={
        "Enabled": True, "AttributeName": "expires_at"})
    assert sorted(key["pk"] for key in sweep(table, now + 61)) == ["at-now", "later"]   # the table's own setting
    assert read_item(table, {"pk": "no-ttl"}) is not None
