"""FIFO deduplication in moto's SQS, made to follow AWS's documented five-minute window.

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
"""

from __future__ import annotations

import threading
from typing import Any, Callable

_lock = threading.Lock()
_original: list[Callable[..., None]] = []
WINDOW_SECONDS = 300  # AWS's deduplication interval


def use_aws_deduplication() -> None:
    """Make every moto FIFO queue drop a duplicate sent within 5 minutes of the accepted one."""
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


def use_moto_deduplication() -> None:
    """Give moto's FIFO queues their own deduplication back (only messages still queued count)."""
    from moto.sqs.models import Queue

    with _lock:
        if _original:
            Queue.add_message = _original.pop()  # type: ignore[method-assign]
