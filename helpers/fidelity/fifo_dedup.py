"""FIFO queues in moto's SQS, made to follow AWS: the five-minute deduplication window, and group order.

AWS (SQS Developer Guide, "Using the message deduplication ID"): when a message
with a deduplication ID is sent successfully, any message sent with the same ID
during the next **5 minutes** is accepted but not delivered -- whether the first
copy is still in the queue, being processed, or already deleted.

moto 5.2.5 compares a new message only with the messages *still in the queue*
(``Queue.add_message`` in ``moto/sqs/models.py``). Once the first copy is
received and deleted, a duplicate sent a second later is delivered again. A
lesson on FIFO deduplication would teach the wrong thing.

`use_aws_deduplication()` closes that gap: each FIFO queue remembers every
deduplication ID with the time of the send that was accepted, and drops a
message whose ID was accepted less than 5 minutes earlier (on whatever clock
moto's SQS reads: see `sqs_clock.py`). `Backend.sqs()` turns it on;
`use_moto_deduplication()` gives moto its own behaviour back, for the test that
shows the difference.

A second gap, closed by the same call: a FIFO queue delivers a message group in
order (SQS Developer Guide, "FIFO queue delivery logic"). When several received
messages of one group time out together, moto 5.2.5 frees the group only when it
reaches the *last* of them, so it redelivers that one first (received 7, 8, 9,
10 and not deleted: it redelivers 10). `use_aws_deduplication()` also frees every
timed-out message of a FIFO queue before a receive, so the group comes back in
order (7 first); `use_moto_deduplication()` removes that too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_original: list[Callable[..., None]] = []
_original_receive: list[Callable[..., Any]] = []
WINDOW_SECONDS = 300  # AWS's deduplication interval


def use_aws_deduplication() -> None:
    """Make every moto FIFO queue drop a duplicate sent within 5 minutes, and redeliver a group in order."""
    from moto.sqs.models import Queue

    with _lock:
        if _original:
            return
        original = Queue.add_message
        _original.append(original)

        def add_message(self: Any, message: Any) -> None:
            dedup_id = getattr(message, "deduplication_id", None)
            if self.fifo_queue and dedup_id is not None:
                accepted = self.__dict__.setdefault("_dedup_accepted_at", {})
                first = accepted.get(dedup_id)
                if first is not None and (message.sent_timestamp - first) / 1000 < WINDOW_SECONDS:
                    return  # accepted by SendMessage, never delivered
                accepted[dedup_id] = message.sent_timestamp
            original(self, message)

        Queue.add_message = add_message  # type: ignore[method-assign]
        _use_aws_group_order()


def _use_aws_group_order() -> None:
    """Before each receive, free the timed-out messages of a FIFO queue, so its groups come back in order."""
    from moto.sqs.models import SQSBackend

    original = SQSBackend.receive_message
    _original_receive.append(original)

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        if queue.fifo_queue:
            for message in [m for m in queue.pending_messages if m.visible]:
                queue.pending_messages.discard(message)  # its visibility timeout ran out
        return original(self, queue_name, *args, **kwargs)

    SQSBackend.receive_message = receive_message  # type: ignore[method-assign]


def use_moto_deduplication() -> None:
    """Give moto's FIFO queues their own deduplication (only messages still queued count) and order back."""
    from moto.sqs.models import Queue

    with _lock:
        if _original:
            Queue.add_message = _original.pop()  # type: ignore[method-assign]
        if _original_receive:
            from moto.sqs.models import SQSBackend

            SQSBackend.receive_message = _original_receive.pop()  # type: ignore[method-assign]
