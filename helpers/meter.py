"""A meter on a boto3 client: round trips, and the capacity DynamoDB reports for them.

    meter = CapacityMeter().install(table)
    debit(table, "alice", 10, "req-1")
    meter.round_trips, meter.capacity_units      # 1, 1.0

It adds ``ReturnConsumedCapacity="TOTAL"`` to every call that accepts it (unless
the call set its own) and adds up the ``CapacityUnits`` DynamoDB returns, so a
notebook can measure its own, unchanged functions. A call that fails (a failed
condition, a cancelled transaction, a timeout) counts as a round trip; DynamoDB
reports no capacity for it, so it adds 0 units here, although AWS bills a
failed conditional write too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_REPORTS_CAPACITY = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems",
    "BatchWriteItem", "BatchGetItem", "Query", "Scan",
})


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
