"""Count what a piece of code sends to DynamoDB: round trips, writes, reported capacity.

Both counters are watchers on a boto3 client's wire (`helpers.wire`), so a notebook measures
its own, unchanged functions, on every backend alike:

    counter = CallCounter().install(table)       # requests, by operation
    debit(table, "alice", 10, "req-1")
    counter.round_trips, counter.writes          # 1, 1

    meter = CapacityMeter().install(table)       # requests, and the capacity DynamoDB reports
    debit(table, "alice", 10, "req-2")
    meter.round_trips, meter.capacity_units      # 1, 1.0

`CallCounter` counts every request a client puts on the wire, by operation name
(botocore's own resends included: each is a round trip): cost as round trips and writes.

`CapacityMeter` adds ``ReturnConsumedCapacity="TOTAL"`` to every call that
accepts it (unless the call set its own, through botocore's public
``before-parameter-build`` event) and adds up the ``CapacityUnits``
DynamoDB returns. A call that fails (a failed condition, a cancelled
transaction, a timeout) counts as a round trip; DynamoDB reports no capacity
for it, so it adds 0 units here, although AWS bills a failed conditional write
too. (On moto the figures are DynamoDB Local's: see `fidelity/capacity.py`.)

Both undo with `uninstall()`, and `reset()` starts the count from zero.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .wire import WRITES, Layer, Result, client_of
from .wire import Call as OnWire

_REPORTS_CAPACITY = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems",
    "BatchWriteItem", "BatchGetItem", "Query", "Scan",
})


class CallCounter(Layer):
    """``counter = CallCounter().install(table, client)``; ``counter.calls`` is a Counter of operation names."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def install(self, *targets: Any) -> CallCounter:
        """Count the requests of each boto3 client, resource or Table in `targets`; returns self."""
        for target in targets:
            super().install(target)
        return self

    def on_wire(self, call: OnWire) -> Result:
        self.calls[call.operation] += 1
        return call.send()

    @property
    def round_trips(self) -> int:
        """Every request sent."""
        return sum(self.calls.values())

    @property
    def writes(self) -> int:
        """Requests that write (a transaction counts once)."""
        return sum(n for op, n in self.calls.items() if op in WRITES)

    def reset(self) -> None:
        """Start counting from zero."""
        self.calls.clear()


@dataclass
class Call:
    """One request sent: its operation, and the units DynamoDB reported (0.0 if none)."""

    operation: str
    capacity_units: float


@dataclass
class CapacityMeter(Layer):
    """Counts requests and reported capacity units on the clients it is installed on."""

    calls: list[Call] = field(default_factory=list)

    def install(self, target: Any) -> CapacityMeter:
        """Meter `target` (a boto3 client, resource or Table) from now on; returns self."""
        client = client_of(target)
        client.meta.events.register("before-parameter-build.dynamodb", self._ask)
        self.__dict__.setdefault("_asking", []).append(client)
        return super().install(client)

    def uninstall(self) -> None:
        """Stop metering every client it was installed on."""
        for client in self.__dict__.pop("_asking", []):
            client.meta.events.unregister("before-parameter-build.dynamodb", self._ask)
        super().uninstall()

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

    def on_wire(self, call: OnWire) -> Result:
        result = call.send()
        response, error = result
        reported = [] if error is not None else (response[1].get("ConsumedCapacity") or [])  # none for no answer
        if isinstance(reported, dict):
            reported = [reported]
        self.calls.append(Call(call.operation, float(sum(entry.get("CapacityUnits", 0.0) for entry in reported))))
        return result
