"""One invocation of a handler by a simulated AWS service: what it got, and what came of it.

Both services that invoke a reader's handler record an `Invocation`:

* `gateway.invoke` / `gateway.Gateway` (a caller with a deadline): the virtual
  times it started, finished and was answered, whether the deadline passed
  first, and the handler's answer;
* `lambda_sqs.LambdaPoller` (Lambda's SQS poller): the batch it was invoked
  with, what was deleted and what went back to the queue, and the error if the
  function raised.

The fields one service does not use keep their defaults (no times for the
poller, no messages for the gateway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Invocation:
    """One invocation of a handler, as the service that invoked it saw it."""

    number: int = 1                  # 1 for the service's first invocation, 2 for the next...
    body: Any = None                 # the handler's answer (returned to nobody if timed_out)
    error: str | None = None         # "TypeName: message" if the handler raised (or answered invalidly)
    # A caller with a deadline (gateway.invoke):
    timed_out: bool = False          # the deadline passed before the handler answered
    started_at: float | None = None  # virtual time of the invocation
    finished_at: float | None = None  # when the handler finished (may be after the deadline)
    answered_at: float | None = None  # when the caller stopped waiting: the answer, or the deadline
    # A batch from a queue (lambda_sqs.LambdaPoller):
    message_ids: list[str] = field(default_factory=list)
    receive_counts: list[int] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    returned_to_queue: list[str] = field(default_factory=list)
    deleted_after_failure: list[str] = field(default_factory=list)  # FIFO: order broken


def reported_failures(response: Any, identifiers: list[str]) -> list[str] | None:
    """The `batchItemFailures` a batch handler reported, in the batch's order; None if its answer is invalid.

    Lambda's SQS and stream pollers both read this shape: ``{"batchItemFailures": [{"itemIdentifier": id}]}``,
    where an id is one of the batch's (a message ID, a sequence number). No answer (None) reports none.
    """
    if response is None:
        return []
    if not isinstance(response, dict):
        return None
    failed = [f.get("itemIdentifier") if isinstance(f, dict) else None
              for f in response.get("batchItemFailures") or []]
    if any(not i or i not in identifiers for i in failed):
        return None
    return sorted(failed, key=identifiers.index)
