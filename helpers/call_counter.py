"""Count the DynamoDB requests a piece of code sends, by operation.

moto's ConsumedCapacity figures are wrong, so the notebooks measure cost as
round trips and writes: every request a client sends is counted here, on the
client itself (botocore's ``before-call`` event), on every backend alike.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


class CallCounter:
    """``counter = CallCounter().watch(table, client)``; ``counter.calls`` is a Counter of operation names."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def watch(self, *targets: Any) -> CallCounter:
        """Count the requests of each boto3 client, resource or Table in `targets`; returns self."""
        for target in targets:
            client = target if hasattr(target, "_endpoint") else getattr(getattr(target, "meta", None), "client", None)
            if client is None:
                raise TypeError(f"expected a boto3 client, resource or Table, got {type(target).__name__}")
            client.meta.events.register("before-call.dynamodb", self._count)
        return self

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1

    @property
    def round_trips(self) -> int:
        """Every request sent."""
        return sum(self.calls.values())

    @property
    def writes(self) -> int:
        """Requests that write (a transaction counts once)."""
        return sum(n for op, n in self.calls.items() if op in WRITE_OPERATIONS)

    def reset(self) -> None:
        """Start counting from zero."""
        self.calls.clear()
