"""An SQS consumer that can crash between doing the work and deleting the message.

SQS delivers *at least once*. A consumer receives a message, which makes it
invisible for the queue's visibility timeout; it does the work; then it deletes
the message. If it dies after the work but before `DeleteMessage` (a Lambda
timeout, a crash, a lost connection), the message becomes visible again when the
timeout runs out and is delivered again, with ``ApproximateReceiveCount`` one higher.

`Consumer.poll()` is that loop body, once. `crash_before_delete` says which of
the consumer's deliveries (1 = its first) die just before the delete. A handler
that *raises* is treated as a real consumer loop treats it: the error is
recorded on the delivery, the message is not deleted, and SQS delivers it again
after the visibility timeout. That is how a consumer says "nothing was written,
try again" -- e.g. when DynamoDB cancelled its transaction for a conflict. A body
that is not JSON is refused the same way, as `BadInput`, before the handler runs.

SQS always comes from moto here. Put moto's SQS on the virtual clock first
(`helpers.fidelity.sqs_clock.use_virtual_time(db.clock)`), so a visibility timeout passes
with `clock.advance(...)` instead of a sleep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..validation import BadInput


@dataclass(frozen=True)
class Delivery:
    """One message the consumer received."""

    number: int            # the consumer's own count: 1 for its first delivery
    receive_count: int     # SQS's ApproximateReceiveCount for this message
    body: Any              # the message body, parsed from JSON (its text if it is not JSON)
    outcome: Any           # what the handler returned (None if it raised)
    deleted: bool          # False when the consumer crashed before DeleteMessage, or the handler raised
    error: BaseException | None = None   # what the handler raised, if it did


def fresh_queue(sqs: Any, name: str, *, visibility_timeout: int = 30, **attributes: str) -> str:
    """An empty queue called `name` with the given visibility timeout; returns its URL.

    Other queue attributes go in as keywords, e.g. ``FifoQueue="true"`` (the name must then
    end in ``.fifo``) or ``RedrivePolicy=json.dumps({...})``. A queue of that name from an
    earlier run is deleted first, so re-running a notebook cell starts from an empty queue.
    """
    if (isinstance(visibility_timeout, bool) or not isinstance(visibility_timeout, int)
            or not 0 <= visibility_timeout <= 43_200):
        raise BadInput("visibility_timeout must be a whole number of seconds from 0 to 43200, "
                       f"got {visibility_timeout!r}")
    if (attributes.get("FifoQueue") == "true") != name.endswith(".fifo"):
        raise BadInput("a FIFO queue's name must end in '.fifo' and only a FIFO queue's may: "
                       f"{name!r}, FifoQueue={attributes.get('FifoQueue')!r}")
    try:
        sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"])
    except sqs.exceptions.QueueDoesNotExist:
        pass
    attributes = {"VisibilityTimeout": str(visibility_timeout), **attributes}
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def queue_arn(sqs: Any, queue_url: str) -> str:
    """The queue's ARN (a redrive policy names its dead-letter queue by ARN)."""
    return sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _parsed(text: str) -> Any:
    """A message body parsed from JSON; `BadInput`, naming it, if it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        raise BadInput(f"the message body is not JSON: {text[:60]!r}") from None


class Consumer:
    """Receive one message at a time, hand its body to `handle`, then delete it (unless told to crash)."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handle: Callable[[Any], Any],
        *,
        crash_before_delete: Iterable[int] = (),
        timeline: Any = None,
    ) -> None:
        if not callable(handle):
            raise TypeError(f"handle must be callable, got {type(handle).__name__}")
        crashes = set(crash_before_delete)
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in crashes):
            raise BadInput("crash_before_delete lists deliveries by number, 1 or more, "
                           f"got {sorted(crashes, key=str)!r}")
        self.sqs, self.queue_url, self.handle = sqs, queue_url, handle
        self.crash_before_delete = frozenset(crashes)
        self.timeline = timeline
        self.deliveries: list[Delivery] = []

    def _note(self, lane: str, event: str, to: str | None = None) -> None:
        if self.timeline is not None:
            self.timeline.record(lane, event, to=to)

    def poll(self) -> Delivery | None:
        """One short poll: None if no message is visible, else the delivery it handled."""
        answer = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=0,
            AttributeNames=["ApproximateReceiveCount"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            self._note("consumer", "polls: nothing visible")
            return None
        message = messages[0]
        number = len(self.deliveries) + 1
        receive_count = int(message["Attributes"]["ApproximateReceiveCount"])
        self._note("queue", f"delivers (receive count {receive_count})", to="consumer")
        outcome, error, body = None, None, message["Body"]
        try:
            body = _parsed(body)
            outcome = self.handle(body)
        except Exception as raised:  # the handler failed (or the body is not JSON): the message stays
            error = raised
        deleted = error is None and number not in self.crash_before_delete
        if deleted:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
            self._note("consumer", "DeleteMessage", to="queue")
        elif error is not None:
            self._note("consumer", f"handler raised {type(error).__name__}: no DeleteMessage")
        else:
            self._note("consumer", "crashes before DeleteMessage")
        delivery = Delivery(number, receive_count, body, outcome, deleted, error)
        self.deliveries.append(delivery)
        return delivery
