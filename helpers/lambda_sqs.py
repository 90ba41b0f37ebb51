"""Lambda's SQS event source mapping, as AWS documents it, driving a handler in this process.

Lambda polls the queue, receives up to `batch_size` messages and invokes the
function once with the event ``{"Records": [...]}``. What it does next depends
on how the function ended:

* it **raised**: the whole batch failed. Nothing is deleted; every message in it
  comes back after the visibility timeout, the ones that were handled included.
* it **returned**, and the mapping reports batch item failures
  (``FunctionResponseTypes=["ReportBatchItemFailures"]``): the messages listed in
  ``batchItemFailures`` come back, the others are deleted. An empty or missing
  list means all succeeded; an ``itemIdentifier`` that is empty or not in the
  batch makes the whole batch fail.
* it **returned**, without that setting: every message is deleted, whatever the
  response says.

Only the poller is simulated; the queue, the receipts and the deletes are moto's
SQS (on the virtual clock, see `sqs_clock.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Invocation:
    """One invocation of the function with one batch."""

    number: int
    message_ids: list[str]
    receive_counts: list[int]
    deleted: list[str] = field(default_factory=list)
    returned_to_queue: list[str] = field(default_factory=list)
    error: str | None = None


class LambdaPoller:
    """Receive a batch, invoke `handler(event, context)`, delete what the answer says succeeded."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handler: Callable[[dict[str, Any], Any], Any],
        *,
        batch_size: int = 10,
        report_batch_item_failures: bool = False,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 10:
            raise ValueError(f"batch_size must be a whole number from 1 to 10, got {batch_size!r}")
        if not callable(handler):
            raise TypeError(f"handler must be callable, got {type(handler).__name__}")
        self.sqs, self.queue_url, self.handler = sqs, queue_url, handler
        self.batch_size = batch_size
        self.report_batch_item_failures = report_batch_item_failures
        self.invocations: list[Invocation] = []

    def poll(self) -> Invocation | None:
        """One poll: None if no message is visible, else the invocation it made."""
        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=self.batch_size, WaitTimeSeconds=0,
            AttributeNames=["ApproximateReceiveCount"],
        ).get("Messages", [])
        if not messages:
            return None
        event = {"Records": [_record(m) for m in messages]}
        ids = [m["MessageId"] for m in messages]
        invocation = Invocation(len(self.invocations) + 1, ids,
                                [int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages])
        self.invocations.append(invocation)
        try:
            response = self.handler(event, None)
        except Exception as error:  # the function failed: the whole batch comes back
            invocation.error = f"{type(error).__name__}: {error}"
            invocation.returned_to_queue = ids
            return invocation
        failed = self._failed_ids(response, ids) if self.report_batch_item_failures else []
        if failed is None:  # an invalid response fails the whole batch
            invocation.error = "invalid batchItemFailures"
            invocation.returned_to_queue = ids
            return invocation
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
                invocation.deleted.append(message["MessageId"])
        invocation.returned_to_queue = [i for i in ids if i in failed]
        return invocation

    @staticmethod
    def _failed_ids(response: Any, ids: list[str]) -> list[str] | None:
        """The message IDs the response reports as failed; None if the response is invalid."""
        if response is None:
            return []
        if not isinstance(response, dict):
            return None
        failed = [f.get("itemIdentifier") if isinstance(f, dict) else None
                  for f in response.get("batchItemFailures") or []]
        return None if any(not i or i not in ids for i in failed) else failed


def _record(message: dict[str, Any]) -> dict[str, Any]:
    """An SQS message as Lambda's event record shows it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": message["Attributes"]["ApproximateReceiveCount"]},
        "eventSource": "aws:sqs",
    }
