"""Capacity units: what DynamoDB Local reports in `ConsumedCapacity`, as rules.

Ask any read or write for ``ReturnConsumedCapacity="TOTAL"`` (or ``"INDEXES"``)
and DynamoDB says how many capacity units it charged. Notebook 05 compares the
cost of its retry-safe patterns that way. Stock moto gets these figures wrong
(UpdateItem 0.5, transactions an empty list), so `faithful_moto` rewrites them
with the rules below. They are the ones measured on DynamoDB Local 3.3.1 for
tables without secondary indexes (`tests/test_capacity.py` checks them on both
backends):

* **Single-item writes** (PutItem, UpdateItem, DeleteItem): one write unit per
  started KB of the larger of the item before and after the write; at least 1.
  A DeleteItem of a missing item costs 1. (AWS documents the same rule.)
* **GetItem**: one read unit per started 4 KB of the item (at least 1, also for
  a missing item); half of that for an eventually consistent read.
* **TransactWriteItems**: each action costs two units per started KB (Put and
  Update: the larger of before and after; Delete: the item before; a
  ConditionCheck: one KB). So far DynamoDB Local agrees with AWS's documentation.
  **But** DynamoDB Local then adds up only the *distinct* per-action figures of
  each table: a transaction of two 1-KB actions on one table reports 2.0, not
  the 4.0 AWS documents; 1 KB + 3 KB reports 8.0 (= 2 + 6), and 3 KB + 3 KB
  reports 6.0. `transaction_units` reproduces that, and
  `documented_transaction_units` gives AWS's documented figure beside it.
* A request that fails (a failed condition, a cancelled transaction) returns
  no `ConsumedCapacity` on either backend.

Item sizes follow AWS's documented rules (attribute names count; a number takes
about one byte per two significant digits plus one). Near a KB boundary
DynamoDB's exact byte count may differ by a few bytes.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from typing import Any

KB = 1024
READ_BLOCK = 4 * KB


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return max(1, math.ceil(len(digits) / 2)) + 1


def value_size(value: Mapping[str, Any]) -> int:
    """The size in bytes of one attribute value in DynamoDB's wire format, e.g. ``{"S": "alice"}``."""
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return _number_size(inner)
    if kind == "B":
        return len(base64.b64decode(inner)) if isinstance(inner, str) else len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(_number_size(n) for n in inner)
    if kind == "BS":
        return sum(value_size({"B": b}) for b in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: Mapping[str, Any] | None) -> int:
    """The size in bytes of an item in wire format (attribute names included); 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def kilobytes(*sizes: int) -> int:
    """Started KB of the largest size given, at least 1."""
    return max(1, math.ceil(max(sizes, default=0) / KB))


def write_units(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> float:
    """Write units of a PutItem, UpdateItem or DeleteItem that changed `before` into `after`."""
    return float(kilobytes(item_size(before), item_size(after)))


def read_units(item: Mapping[str, Any] | None, *, consistent: bool) -> float:
    """Read units of a GetItem that found `item` (or nothing)."""
    blocks = max(1, math.ceil(item_size(item) / READ_BLOCK))
    return float(blocks) if consistent else blocks / 2


def action_kilobytes(action: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> int:
    """Started KB one TransactWriteItems action is charged for (before the factor of two)."""
    if action == "ConditionCheck":
        return 1
    if action == "Delete":
        return kilobytes(item_size(before))
    return kilobytes(item_size(before), item_size(after))


def transaction_units(actions: Iterable[tuple[str, int]]) -> dict[str, float]:
    """Write units per table as DynamoDB Local reports them, from (table, KB) per action.

    DynamoDB Local sums the *distinct* figures of each table (see the module docstring).
    """
    distinct: dict[str, set[int]] = {}
    for table, kb in actions:
        distinct.setdefault(table, set()).add(kb)
    return {table: 2.0 * sum(kbs) for table, kbs in distinct.items()}


def documented_transaction_units(actions: Iterable[tuple[str, int]]) -> dict[str, float]:
    """Write units per table by AWS's documented rule: two per KB of every action."""
    total: dict[str, float] = {}
    for table, kb in actions:
        total[table] = total.get(table, 0.0) + 2.0 * kb
    return total


def consumed(table: str, units: float, mode: str) -> dict[str, Any]:
    """One `ConsumedCapacity` entry in the shape DynamoDB returns for `mode` (TOTAL or INDEXES)."""
    entry: dict[str, Any] = {"TableName": table, "CapacityUnits": units}
    if mode == "INDEXES":
        entry["Table"] = {"CapacityUnits": units}
    return entry
