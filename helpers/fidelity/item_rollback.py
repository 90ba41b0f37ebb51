"""TransactWriteItems on moto, rolled back item by item instead of table by table.

Stock moto (5.2.5) backs up every table a transaction names with `copy.deepcopy` *before* it runs, to put
the copy back if the transaction is cancelled. The cost grows with the table (every item is copied, on
every transaction), so a table that keeps its markers made each transaction slower than the one before;
DynamoDB's own cost does not depend on what else the table holds.

While `FaithfulMoto` answers a transaction (one request at a time, under its lock), `cheap_rollback()` is
active: moto's backup of a table is replaced by a `_Kept` stand-in, the items the transaction names are
copied instead, and if moto "restores" the stand-in, those items are put back as they were. The outcome
is the same as stock moto's (tests/test_item_rollback.py runs random transactions both ways and compares
the tables); anything unusual (a stream on the table, a request this cannot read) takes moto's own path.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from typing import Any

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_stock_transact = DynamoDBBackend.transact_write_items
_active = threading.local()


class _Kept:
    """Stands where moto keeps its deep copy of `table` (so restoring it is seen, and undone item by item)."""

    def __init__(self, table: Table) -> None:
        self.table = table


class _CopyModule:
    """moto.dynamodb.models' `copy`: a whole table is not copied while a cheap rollback is active."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        if isinstance(value, Table) and getattr(_active, "on", False):
            return _Kept(value)
        return copy.deepcopy(value, memo)


def _slot(table: Table, entry: dict[str, Any]) -> tuple[DynamoType, DynamoType | None]:
    """(hash, range) of the item a transaction entry names, as moto stores it."""
    _, spec = next(iter(entry.items()))
    key = spec["Key"] if "Key" in spec else spec["Item"]
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


def _read(table: Table, slot: tuple[DynamoType, DynamoType | None]) -> tuple[bool, Any]:
    hash_value, range_value = slot
    if range_value is None:
        return hash_value in table.items, copy.deepcopy(table.items.get(hash_value))
    partition = table.items.get(hash_value)
    return partition is not None, copy.deepcopy(None if partition is None else partition.get(range_value))


def _put_back(table: Table, slot: tuple[DynamoType, DynamoType | None], kept: tuple[bool, Any]) -> None:
    (hash_value, range_value), (had_partition, item) = slot, kept
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item
        return
    if item is not None:
        table.items[hash_value][range_value] = item
        return
    partition = table.items.get(hash_value)
    if partition is not None:
        partition.pop(range_value, None)
        if not partition and not had_partition:
            del table.items[hash_value]


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's TransactWriteItems, with an item-level backup when `cheap_rollback()` is active."""
    if not getattr(_active, "on", False):
        return _stock_transact(self, transact_items)
    try:
        backups = []
        for entry in transact_items[:100]:
            name = next(iter(entry.values()))["TableName"]
            table = self.tables[name]
            if table.stream_shard is not None:
                raise LookupError("a table with a stream: moto's own rollback")
            slot = _slot(table, entry)
            backups.append((name, table, slot, _read(table, slot)))
    except Exception:  # a missing table, a malformed entry, a stream: moto's own path and its own error
        _active.on = False
        try:
            return _stock_transact(self, transact_items)
        finally:
            _active.on = True
    try:
        return _stock_transact(self, transact_items)
    finally:
        restored = {name for name, value in self.tables.items() if isinstance(value, _Kept)}
        for name in restored:
            self.tables[name] = self.tables[name].table
        for name, table, slot, kept in reversed(backups):
            if name in restored:
                _put_back(table, slot, kept)


@contextlib.contextmanager
def cheap_rollback() -> Iterator[None]:
    """Within this block (one thread, one request at a time), transactions back up only their own items."""
    _active.on = True
    try:
        yield
    finally:
        _active.on = False


def use_item_rollback() -> None:
    """Patch moto's DynamoDB backend once (it stays stock outside `cheap_rollback()`)."""
    if not isinstance(dynamodb_models.copy, _CopyModule):
        dynamodb_models.copy = _CopyModule()
        DynamoDBBackend.transact_write_items = transact_write_items
