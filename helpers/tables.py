"""Tables and wallets: created idempotently, read back consistently.

`fresh_table` makes re-running a notebook's setup cell safe: the table is
created if it is missing and emptied if it exists, so every run starts from
the same state on every backend.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .backends import Backend


def fresh_table(db: Backend, name: str, *, sort_key: str | None = None, **client_options: Any) -> Any:
    """An empty table called `name` (key ``pk``, plus `sort_key` if given), as a boto3 `Table`.

    One client does it all (the returned table's own: nothing is installed on it yet), since making a client
    costs more than the requests it sends here."""
    table = db.table(name, **client_options)
    client = table.meta.client
    real_name = db.table_name(name)
    keys = [("pk", "HASH")] + ([(sort_key, "RANGE")] if sort_key else [])
    if db.emptied_in_process(real_name, [a for a, _ in keys]):
        return table   # moto, the table already there: emptied as the Scan and DeleteItems below would
    try:
        client.create_table(
            TableName=real_name,
            KeySchema=[{"AttributeName": a, "KeyType": t} for a, t in keys],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a, _ in keys],
            BillingMode="PAY_PER_REQUEST",
        )
        db.remember_table(real_name)
        client.get_waiter("table_exists").wait(TableName=real_name, WaiterConfig={"Delay": 1})
    except client.exceptions.ResourceInUseException:
        empty_table(table, [a for a, _ in keys])
    return table


def empty_table(table: Any, key_names: list[str] | None = None) -> None:
    """Delete every item of `table` (a boto3 `Table`); the table itself stays.

    `key_names` are the table's key attributes (``["pk"]``, ``["pk", "sk"]``);
    when not given they are read from ``table.key_schema`` (one DescribeTable).
    """
    if key_names is None:
        key_names = [key["AttributeName"] for key in table.key_schema]
    scan: dict[str, Any] = {"ProjectionExpression": ", ".join(key_names)}
    with table.batch_writer() as batch:
        while True:
            page = table.scan(**scan)
            for item in page["Items"]:
                batch.delete_item(Key={k: item[k] for k in key_names})
            if "LastEvaluatedKey" not in page:
                break
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def open_wallet(table: Any, wallet_id: str, balance: int) -> None:
    """Create (or reset) the wallet `wallet_id` with `balance`."""
    table.put_item(Item={"pk": wallet_id, "balance": balance})


def read_balance(table: Any, wallet_id: str) -> int:
    """The wallet's balance, read back from the table (strongly consistent)."""
    item = table.get_item(Key={"pk": wallet_id}, ConsistentRead=True).get("Item")
    if item is None:
        raise LookupError(f"wallet {wallet_id!r} does not exist")
    return int(item["balance"])


def read_item(table: Any, key: dict[str, str]) -> dict[str, Any] | None:
    """The item at `key` with numbers as ints (strongly consistent), or None."""
    item = table.get_item(Key=key, ConsistentRead=True).get("Item")
    return None if item is None else with_ints(item)


def with_ints(item: dict[str, Any]) -> dict[str, Any]:
    """`item` (a boto3 Table's) with whole numbers as ints, its attributes in name order (`read_item`'s answer)."""
    return {k: (int(v) if isinstance(v, Decimal) and v == v.to_integral_value() else v)
            for k, v in sorted(item.items())}


def as_python(item: dict[str, Any]) -> dict[str, Any]:
    """An item as DynamoDB's own JSON carries it (``{"status": {"S": "COMPLETED"}}``, as in an error response's
    `Item` or a transaction's cancellation reasons) turned into Python values (``{"status": "COMPLETED"}``)."""
    from boto3.dynamodb.types import TypeDeserializer

    return {name: TypeDeserializer().deserialize(value) for name, value in item.items()}


def as_dynamodb_json(item: dict[str, Any]) -> dict[str, Any]:
    """The reverse of `as_python`: Python values (``{"pk": "alice"}``) as DynamoDB's own JSON
    (``{"pk": {"S": "alice"}}``)."""
    from boto3.dynamodb.types import TypeSerializer

    return {name: TypeSerializer().serialize(value) for name, value in item.items()}
