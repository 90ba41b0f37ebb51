"""Count what a piece of code sends to DynamoDB: round trips, writes, reported capacity.

Both counters sit on a boto3 client (botocore's events), so a notebook measures
its own, unchanged functions, on every backend alike:

    counter = CallCounter().watch(table)         # requests, by operation
    debit(table, "alice", 10, "req-1")
    counter.round_trips, counter.writes          # 1, 1

    meter = CapacityMeter().install(table)       # requests, and the capacity DynamoDB reports
    debit(table, "alice", 10, "req-2")
    meter.round_trips, meter.capacity_units      # 1, 1.0

`CallCounter` counts every request a client sends (botocore's ``before-call``
event), by operation name: cost as round trips and writes.

`CapacityMeter` adds ``ReturnConsumedCapacity="TOTAL"`` to every call that
accepts it (unless the call set its own) and adds up the ``CapacityUnits``
DynamoDB returns. A call that fails (a failed condition, a cancelled
transaction, a timeout) counts as a round trip; DynamoDB reports no capacity
for it, so it adds 0 units here, although AWS bills a failed conditional write
too. (On moto the figures are DynamoDB Local's: see `fidelity/capacity.py`.)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
_REPORTS_CAPACITY = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems",
    "BatchWriteItem", "BatchGetItem", "Query", "Scan",
})


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


@dataclass
class Call:
    """One request sent: its operation, and the units DynamoDB reported (0.0 if none)."""

    operation: str
    capacity_units: float


@dataclass
class CapacityMeter:
    """Counts requests and reported capacity units on the clients it is installed on."""

    calls: list[Call] = field(default_factory=list)

    def install(self, target: Any) -> CapacityMeter:
        """Meter `target` (a boto3 client, resource or Table) from now on; returns self."""
        client = target if hasattr(target, "_endpoint") else target.meta.client
        client.meta.events.register("before-parameter-build.dynamodb", self._ask)
        client.meta.events.register("after-call.dynamodb", self._answered)
        client.meta.events.register("after-call-error.dynamodb", self._no_answer)
        return self

    def reset(self) -> None:
        """Forget the calls counted so far."""
        self.calls.clear()

    @property
    def round_trips(self) -> int:
        """Requests sent (each one a round trip to DynamoDB)."""
        return len(self.calls)

    @property
    def capacity_units(self) -> float:
        """Capacity units DynamoDB reported, summed over all calls and tables."""
        return sum(call.capacity_units for call in self.calls)

    def _ask(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in _REPORTS_CAPACITY:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _answered(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        reported = parsed.get("ConsumedCapacity") or []
        if isinstance(reported, dict):
            reported = [reported]
        self.calls.append(Call(model.name, float(sum(entry.get("CapacityUnits", 0.0) for entry in reported))))

    def _no_answer(self, event_name: str = "", **_: Any) -> None:  # e.g. a timeout: no answer at all
        self.calls.append(Call(event_name.rsplit(".", 1)[-1], 0.0))
