"""Lambda's SQS event source mapping, as AWS documents it, driving a handler in this process.

Lambda polls the queue, gathers up to `batch_size` messages and invokes the
function once with the event ``{"Records": [...]}``. ``BatchSize`` is 10 by
default; a standard queue allows up to 10,000 (above 10 only with a batching
window, ``MaximumBatchingWindowInSeconds`` >= 1), a FIFO queue at most 10 and
no batching window (AWS Lambda Developer Guide, "Lambda parameters for Amazon
SQS event source mappings"). ReceiveMessage returns at most 10 messages a call,
so the poller gathers a larger batch from several calls (virtual time does not
move while it does: the batching window is not simulated beyond that).

What Lambda does next depends on how the function ended:

* it **raised**: the whole batch failed. Nothing is deleted; every message in it
  comes back after the visibility timeout, the ones that were handled included.
* it **returned**, and the mapping reports batch item failures
  (``FunctionResponseTypes=["ReportBatchItemFailures"]``): the messages listed in
  ``batchItemFailures`` come back, the others are deleted. An empty or missing
  list means all succeeded; an ``itemIdentifier`` that is empty or not in the
  batch makes the whole batch fail.
* it **returned**, without that setting: every message is deleted, whatever the
  response says.

For a FIFO queue AWS adds a rule for the *function*: stop processing at the
first failure and report it and every message after it, so that order holds.
Lambda itself does not enforce it -- it deletes whatever is not reported. The
poller does the same, and records in ``Invocation.deleted_after_failure`` the
messages it deleted although an earlier message of the same group in the batch
failed: the order the rule exists to keep, broken.

Only the poller is simulated; the queue, the receipts and the deletes are moto's
SQS (on the virtual clock, see `sqs_clock.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .invocation import Invocation, reported_failures

MAX_BATCH_STANDARD = 10_000
MAX_BATCH_FIFO = 10
MAX_WITHOUT_WINDOW = 10
MAX_WINDOW_SECONDS = 300


class LambdaPoller:
    """Receive a batch, invoke `handler(event, context)`, delete what the answer says succeeded."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handler: Callable[[dict[str, Any], Any], Any],
        *,
        batch_size: int = 10,
        batching_window: int = 0,
        report_batch_item_failures: bool = False,
    ) -> None:
        self.fifo = queue_url.endswith(".fifo")
        if isinstance(batching_window, bool) or not isinstance(batching_window, int) \
                or not 0 <= batching_window <= MAX_WINDOW_SECONDS:
            raise ValueError(f"batching_window must be whole seconds from 0 to {MAX_WINDOW_SECONDS}, "
                             f"got {batching_window!r}")
        if self.fifo and batching_window:
            raise ValueError("a FIFO queue's event source mapping takes no batching window")
        largest = MAX_BATCH_FIFO if self.fifo else (MAX_BATCH_STANDARD if batching_window else MAX_WITHOUT_WINDOW)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= largest:
            why = ("a FIFO queue allows at most 10" if self.fifo else
                   "a standard queue allows 10,000 with a batching window" if batching_window else
                   "above 10 needs a batching window of at least 1 s")
            raise ValueError(f"batch_size must be a whole number from 1 to {largest} ({why}), got {batch_size!r}")
        if not callable(handler):
            raise TypeError(f"handler must be callable, got {type(handler).__name__}")
        self.sqs, self.queue_url, self.handler = sqs, queue_url, handler
        self.batch_size = batch_size
        self.report_batch_item_failures = report_batch_item_failures
        self.invocations: list[Invocation] = []

    def _gather(self) -> list[dict[str, Any]]:
        """Up to batch_size visible messages, from as many ReceiveMessage calls as it takes."""
        messages: list[dict[str, Any]] = []
        while len(messages) < self.batch_size:
            got = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=min(10, self.batch_size - len(messages)),
                WaitTimeSeconds=0, AttributeNames=["ApproximateReceiveCount", "MessageGroupId"],
            ).get("Messages", [])
            if not got:
                break
            messages += got
        return messages

    def poll(self) -> Invocation | None:
        """One poll: None if no message is visible, else the invocation it made."""
        messages = self._gather()
        if not messages:
            return None
        event = {"Records": [_record(m) for m in messages]}
        ids = [m["MessageId"] for m in messages]
        invocation = Invocation(number=len(self.invocations) + 1, message_ids=ids,
                                receive_counts=[int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages])
        self.invocations.append(invocation)
        try:
            response = self.handler(event, None)
        except Exception as error:  # the function failed: the whole batch comes back
            invocation.error = f"{type(error).__name__}: {error}"
            invocation.returned_to_queue = ids
            return invocation
        invocation.body = response
        failed = reported_failures(response, ids) if self.report_batch_item_failures else []
        if failed is None:  # an invalid response fails the whole batch
            invocation.error = "invalid batchItemFailures"
            invocation.returned_to_queue = ids
            return invocation
        failed_groups: set[str | None] = set()
        for message in messages:
            group = message["Attributes"].get("MessageGroupId")
            if message["MessageId"] in failed:
                failed_groups.add(group)
                continue
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
            invocation.deleted.append(message["MessageId"])
            if self.fifo and group in failed_groups:
                invocation.deleted_after_failure.append(message["MessageId"])
        invocation.returned_to_queue = [i for i in ids if i in failed]
        return invocation


def _record(message: dict[str, Any]) -> dict[str, Any]:
    """An SQS message as Lambda's event record shows it."""
    attributes = {"ApproximateReceiveCount": message["Attributes"]["ApproximateReceiveCount"]}
    if "MessageGroupId" in message["Attributes"]:
        attributes["MessageGroupId"] = message["Attributes"]["MessageGroupId"]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "eventSource": "aws:sqs",
    }
