"""The checker's own reads and wallet openings on moto, made without a request (helpers/subjects.py).

A history reads the balances before and after each request it sends, and opens the wallets as it begins. On moto,
where no layer on the wire would see it, the checker does that straight in moto's tables: these tests hold it to
giving exactly what the request would have -- the same items, the same stored item -- and to sending the request
whenever anyone watches the wire, or the backend is not moto.
"""

from __future__ import annotations

import os

import pytest

import helpers
from helpers.meter import CallCounter
from helpers.subjects import DebitSubject, read_in_process
from helpers.tables import fresh_table

BACKEND = os.environ.get("RETRY_BACKEND", "moto")
ON_MOTO = pytest.mark.skipif(BACKEND != "moto", reason="the in-process path exists on moto only")
ITEMS = [{"pk": "alice", "balance": 990, "tags": {"a", "b"}, "m": {"x": [True, None, "y", 10**37]}},
         {"pk": "bob", "balance": 1000}]


@pytest.fixture()
def table():
    db = helpers.connect()
    table = fresh_table(db, "in-process-reads")
    for item in ITEMS:
        table.put_item(Item=item)
    table.update_item(Key={"pk": "alice"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": 7})
    return table


def keys(*names):
    return [{"pk": {"S": name}} for name in names]


def batch_get(client, table, wanted):
    return client.batch_get_item(RequestItems={table.name: {"Keys": wanted, "ConsistentRead": True}})[
        "Responses"][table.name]


@ON_MOTO
def test_a_read_in_process_gives_what_batch_get_item_answers(table):
    client = helpers.connect().client()
    wanted = keys("alice", "bob", "nobody")
    assert read_in_process(client, table.name, wanted) == batch_get(client, table, wanted)


@ON_MOTO
def test_a_binary_value_or_a_missing_table_sends_the_request(table):
    client = helpers.connect().client()
    table.put_item(Item={"pk": "carol", "blob": b"\x00\x01"})
    assert read_in_process(client, table.name, keys("carol")) is None
    assert read_in_process(client, "no-such-table", keys("alice")) is None


@ON_MOTO
def test_a_counter_on_the_wire_sees_the_read_as_a_request(table):
    client = helpers.connect().client()
    with CallCounter().install(client) as counter:
        assert read_in_process(client, table.name, keys("alice")) is None
    assert counter.calls == {}


def test_another_backend_always_sends_the_request(table):
    if BACKEND == "moto":
        pytest.skip("on moto the read is in process")
    assert read_in_process(helpers.connect().client(), table.name, keys("alice")) is None


@ON_MOTO
def test_a_subject_opens_its_wallets_as_a_put_item_would_and_on_the_wire_when_counted(table):
    db = helpers.connect()
    subject = DebitSubject(lambda table, wallet, amount, request_id: None, table=table, db=db)
    subject.begin()                                      # in process: nothing on the wire
    opened = batch_get(db.client(), table, keys("alice", "bob"))
    for wallet in ("alice", "bob"):
        table.put_item(Item={"pk": wallet, "balance": 1000})
    assert batch_get(db.client(), table, keys("alice", "bob")) == opened
    with CallCounter().install(table) as counter:
        subject.begin()
        assert subject.balances() == {"alice": 1000, "bob": 1000}
    assert counter.calls == {"PutItem": 2, "BatchGetItem": 1}


def test_a_fresh_table_already_there_is_empty_on_every_backend_and_a_stream_sees_its_deletes(monkeypatch):
    """`fresh_table` on a table that exists empties it: on moto in process (no Scan, no DeleteItem sent) unless the
    table has a stream, whose records must show each delete as the requests make them; elsewhere by the requests."""
    from helpers.fidelity import moto_speed

    sent = []
    answer = moto_speed.dynamodb_answer
    monkeypatch.setattr(moto_speed, "dynamodb_answer", lambda request: sent.append(request) or answer(request))
    db = helpers.connect()
    table = fresh_table(db, "fresh-again")
    table.put_item(Item={"pk": "alice", "balance": 5})
    sent.clear()
    again = fresh_table(db, "fresh-again")
    assert sent == [] or BACKEND != "moto"           # on moto: not a request (the old path began with CreateTable)
    assert again.scan(ConsistentRead=True)["Items"] == []
    ranged = fresh_table(db, "fresh-again-ranged", sort_key="sk")
    ranged.put_item(Item={"pk": "a", "sk": "1"})
    assert fresh_table(db, "fresh-again-ranged", sort_key="sk").scan(ConsistentRead=True)["Items"] == []
    if BACKEND != "moto":
        return
    client = db.client()
    streamed = fresh_table(db, "fresh-again-streamed")
    client.update_table(TableName=streamed.name,
                        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
    streamed.put_item(Item={"pk": "alice"})
    fresh_table(db, "fresh-again-streamed")
    assert streamed.scan(ConsistentRead=True)["Items"] == []
    from helpers.fidelity.faithful_moto import _tables_of
    records = _tables_of("us-east-1").tables[streamed.name].stream_shard.items
    assert [r.record["eventName"] for r in records][-1:] == ["REMOVE"]
