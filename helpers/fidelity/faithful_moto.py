"""Make moto answer like DynamoDB where the lessons depend on it.

moto runs inside the kernel's own process: no Java, no network. Measured on
moto 5.2.5, two of its gaps would teach the wrong lesson, so this module
closes them for every DynamoDB client the helpers hand out:

* **Atomicity.** moto handles concurrent requests concurrently, so two
  threads sending the same guarded debit can both pass the condition.
  DynamoDB applies each write atomically. Here every request is answered
  under one lock.
* **ClientRequestToken.** moto ignores it on TransactWriteItems; DynamoDB
  replays the first answer within ten minutes and rejects a changed request
  under the same token. `client_tokens.TokenLedger` does the same here, on
  the virtual clock.
* **ConsumedCapacity.** moto reports UpdateItem as 0.5 write units and
  transactions as an empty list. For GetItem, PutItem, UpdateItem,
  DeleteItem and TransactWriteItems asked for ``ReturnConsumedCapacity``
  (TOTAL or INDEXES), the figures are replaced with what DynamoDB Local
  reports, by the rules in `capacity.py` (sizes of the items before and
  after the request, read from moto's own tables).

It also makes moto cheaper (`moto_speed.py`: each expression parsed once, a request carried straight to
moto's DynamoDB handler; the same answers), and refuses to let any request leave the machine: a request moto
cannot answer raises instead of being sent.

`answered_by(client)` tells which `FaithfulMoto` answers a client; its `read`
hands over stored items and its `put` stores one, without a request (the checker
reads the balances and opens the wallets that way: see `helpers.subjects`); its
`empty` empties a table as its Scan and DeleteItems would (`fresh_table` on a
table already there).
"""

from __future__ import annotations

import json
import threading
import weakref
import zlib
from typing import Any

from botocore.awsrequest import AWSResponse
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.botocore_stubber import MockRawResponse
from moto.core.models import botocore_stubber

from ..clock import VirtualClock
from . import capacity, item_rollback, moto_speed
from .client_tokens import TokenLedger

item_rollback.use_item_rollback()
moto_speed.use_moto_speed()


class LeftTheMachine(RuntimeError):
    """A request on the moto backend would have gone to the network."""


class FaithfulMoto:
    """A botocore ``before-send`` handler that answers from moto, one request at a time."""

    def __init__(self, clock: VirtualClock) -> None:
        self._lock = threading.Lock()
        self.tokens = TokenLedger(clock)

    def install(self, client: Any) -> Any:
        """Route `client`'s requests through this handler instead of stock moto's."""
        client.meta.events.unregister("before-send", botocore_stubber)
        client.meta.events.register("before-send", self)
        _answering[client] = self
        return client

    def read(self, region: str, table: str, keys: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The items stored at `keys` (DynamoDB JSON, ``{"pk": {"S": "alice"}}``) in `table`, read from moto's
        tables in this process without sending a request: the items a strongly consistent BatchGetItem answers,
        in DynamoDB JSON too, missing ones left out. None when moto has no such table (send the request: moto's
        own error comes back), or an item holds a binary value (moto keeps it base64-encoded, botocore decodes it:
        the request answers it as DynamoDB does)."""
        tables = _tables_of(region)
        with self._lock:                          # as a request is: not halfway through another one's write
            if table not in tables.tables:
                return None
            found = (tables.get_item(table, key) for key in keys)
            items = [item.to_json()["Attributes"] for item in found if item is not None]
        return None if any(_binary(value) for item in items for value in item.values()) else items

    def put(self, region: str, table: str, item: dict[str, Any]) -> bool:
        """Store `item` (DynamoDB JSON) in `table` as an unconditional PutItem does, without sending a request.
        False, and nothing stored, when moto refuses it (no such table, a key missing: moto checks before it
        stores) -- send the request then, and moto's own error comes back as DynamoDB's."""
        tables = _tables_of(region)
        with self._lock:
            try:
                tables.put_item(table, item, overwrite=True)
            except Exception:  # noqa: BLE001 - any refusal: the request will say which
                return False
            return True

    def delete(self, region: str, table: str, key: dict[str, Any]) -> bool:
        """Delete the item at `key` (DynamoDB JSON) from `table` as an unconditional DeleteItem does, without
        sending a request. False, and nothing deleted, when moto refuses it (send the request then)."""
        tables = _tables_of(region)
        with self._lock:
            try:
                tables.delete_item(table, key)
            except Exception:  # noqa: BLE001 - any refusal: the request will say which
                return False
            return True

    def empty(self, region: str, table: str, key_names: list[str]) -> bool:
        """Delete every item of `table`, as a Scan and a DeleteItem per item would, without sending a request.
        False, and nothing deleted, unless the table exists with exactly `key_names` as its key and no stream
        (a stream records each delete: send the requests then, so that it does)."""
        tables = _tables_of(region)
        with self._lock:
            found = tables.tables.get(table)
            if found is None or found.table_key_attrs != key_names or found.stream_shard is not None:
                return False
            found.items.clear()
            return True

    def __call__(self, request: Any, event_name: str = "", **kwargs: Any) -> Any:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            if operation == "TransactWriteItems":
                with item_rollback.cheap_rollback():
                    return self.tokens.answer(
                        request,
                        lambda: self._counted(request, event_name, operation),
                        replayed=lambda body: _replayed_capacity(request, body),
                    )
            return self._counted(request, event_name, operation)

    def _counted(self, request: Any, event_name: str, operation: str) -> Any:
        """Answer from moto; where capacity was asked for, report it as DynamoDB Local does."""
        if operation not in _CAPACITY_OPERATIONS:
            return self._moto(request, event_name)
        params = json.loads(request.body or b"{}")
        mode = params.get("ReturnConsumedCapacity", "NONE")
        if mode not in ("TOTAL", "INDEXES"):
            return _without_capacity(self._moto(request, event_name))
        tables = _moto_tables(request.url)
        try:
            targets = _targets(tables, operation, params)
        except Exception:  # no such table, a malformed request: let moto give its own error
            return self._moto(request, event_name)
        before = [_stored(tables, table, key) for _, table, key in targets]
        response = self._moto(request, event_name)
        if response.status_code != 200:
            return response
        after = [_stored(tables, table, key) for _, table, key in targets]
        if operation == "TransactWriteItems":
            per_table = capacity.transaction_units(
                (table, capacity.action_kilobytes(action, old, new))
                for (action, table, _), old, new in zip(targets, before, after)
            )
            figure: Any = [capacity.consumed(t, units, mode) for t, units in sorted(per_table.items())]
        else:
            (_, table, _), old, new = targets[0], before[0], after[0]
            if operation == "GetItem":
                units = capacity.read_units(old, consistent=bool(params.get("ConsistentRead")))
            else:
                units = capacity.write_units(old, new)
            figure = capacity.consumed(table, units, mode)
        body = json.loads(response.content or b"{}")
        body["ConsumedCapacity"] = figure
        return _with_body(response, json.dumps(body).encode())

    def _moto(self, request: Any, event_name: str) -> Any:
        response = moto_speed.dynamodb_answer(request)
        if response is None:
            response = botocore_stubber(event_name=event_name, request=request)
        if response is None:
            raise LeftTheMachine(
                f"refusing to send {request.method} {request.url} off this machine: "
                "the moto backend answers everything in-process"
            )
        return response


def _binary(value: dict[str, Any]) -> bool:
    """Whether an attribute value (DynamoDB JSON) is binary, or holds one in a map or a list."""
    (kind, inner), = value.items()
    if kind == "M":
        return any(_binary(v) for v in inner.values())
    if kind == "L":
        return any(_binary(v) for v in inner)
    return kind in ("B", "BS")


_answering: weakref.WeakKeyDictionary[Any, FaithfulMoto] = weakref.WeakKeyDictionary()


def answered_by(client: Any) -> FaithfulMoto | None:
    """The `FaithfulMoto` that answers `client` (a botocore client), or None (a client of another backend)."""
    return _answering.get(client)


_CAPACITY_OPERATIONS = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})


def _replayed_capacity(request: Any, body: bytes) -> bytes:
    """A token replay reports capacity as its own request asks (measured on DynamoDB Local).

    The figure is the one the transaction's items would cost now (before = after: nothing changes).
    """
    params = json.loads(request.body or b"{}")
    mode = params.get("ReturnConsumedCapacity", "NONE")
    answer = json.loads(body or b"{}")
    answer.pop("ConsumedCapacity", None)
    if mode in ("TOTAL", "INDEXES"):
        tables = _moto_tables(request.url)
        targets = _targets(tables, "TransactWriteItems", params)
        current = [_stored(tables, table, key) for _, table, key in targets]
        per_table = capacity.transaction_units(
            (table, capacity.action_kilobytes(action, item, item)) for (action, table, _), item in zip(targets, current)
        )
        answer["ConsumedCapacity"] = [capacity.consumed(t, units, mode) for t, units in sorted(per_table.items())]
    return json.dumps(answer).encode()


def _moto_tables(url: str) -> Any:
    """moto's in-process DynamoDB backend for the region in `url` (its tables hold wire-format items)."""
    return _tables_of(url.split("//", 1)[-1].split(".")[1])


def _tables_of(region: str) -> Any:
    """moto's in-process DynamoDB backend for `region`."""
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][region]


def _targets(tables: Any, operation: str, params: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(action, table name, key) for every item the request touches."""
    if operation == "TransactWriteItems":
        actions = [next(iter(entry.items())) for entry in params["TransactItems"]]
    else:
        actions = [(operation.removesuffix("Item"), params)]
    targets = []
    for action, spec in actions:
        table = spec["TableName"]
        if "Key" in spec:
            key = spec["Key"]
        else:
            names = [n for n in (tables.get_table(table).hash_key_attr, tables.get_table(table).range_key_attr) if n]
            key = {name: spec["Item"][name] for name in names}
        targets.append((action, table, key))
    return targets


def _stored(tables: Any, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    item = tables.get_item(table, key)
    return None if item is None else item.to_json()["Attributes"]


def _without_capacity(response: Any) -> Any:
    """DynamoDB sends no ConsumedCapacity unless asked; moto sometimes does."""
    if response.status_code != 200 or b"ConsumedCapacity" not in (response.content or b""):
        return response
    body = json.loads(response.content)
    body.pop("ConsumedCapacity", None)
    return _with_body(response, json.dumps(body).encode())


def _with_body(response: Any, body: bytes) -> AWSResponse:
    headers = dict(response.headers)
    if "x-amz-crc32" in {h.lower() for h in headers}:
        headers = {h: v for h, v in headers.items() if h.lower() != "x-amz-crc32"}
        headers["x-amz-crc32"] = str(zlib.crc32(body) & 0xFFFFFFFF)
    if any(h.lower() == "content-length" for h in headers):
        headers = {h: v for h, v in headers.items() if h.lower() != "content-length"}
        headers["Content-Length"] = str(len(body))
    return AWSResponse(response.url, response.status_code, headers, MockRawResponse(body))
