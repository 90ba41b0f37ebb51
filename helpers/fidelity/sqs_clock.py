"""Run moto's SQS on the virtual clock: visibility timeouts pass without sleeping.

moto's SQS reads the wall clock through two functions it imports by name from
``moto.core.utils``: ``unix_time()`` and ``unix_time_millis()`` (checked on
moto 5.2.5, ``moto/sqs/models.py``). A message's ``visible_at``,
``delayed_until``, ``SentTimestamp``, the FIFO deduplication window and the
message retention period are all computed from them.

`use_virtual_time(clock)` (the collection's one verb for "run this on the virtual clock";
fidelity/powertools_clock.py has the same) replaces exactly those two names **in moto's SQS
module only**, so SQS reads `clock`; DynamoDB, moto's other services and the
rest of the process keep the wall clock. After ``clock.advance(31)`` a message
received with a 30-second visibility timeout is visible again.

Use short polling (``WaitTimeSeconds=0``, the default): a long poll waits for
virtual time that never moves on its own.
"""

from __future__ import annotations

import datetime
import importlib
import threading
from collections.abc import Callable

from ..clock import VirtualClock
from ..validation import BadInput

SQS_MODULE = "moto.sqs.models"
_lock = threading.Lock()
_original: dict[str, Callable[..., float]] = {}


def use_virtual_time(clock: VirtualClock) -> None:
    """From now on, moto's SQS reads `clock` (calling it again switches to another clock)."""
    if not isinstance(clock, VirtualClock):
        raise BadInput(f"use_virtual_time needs a VirtualClock, got {type(clock).__name__}")
    module = importlib.import_module(SQS_MODULE)
    with _lock:
        if not _original:
            for name in ("unix_time", "unix_time_millis"):
                if not callable(getattr(module, name, None)):
                    raise RuntimeError(f"{SQS_MODULE} no longer imports {name}; re-check the patch")
                _original[name] = getattr(module, name)
        original_unix_time = _original["unix_time"]

        def unix_time(dt: datetime.datetime | None = None) -> float:
            return clock.now() if dt is None else original_unix_time(dt)

        def unix_time_millis(dt: datetime.datetime | None = None) -> float:
            return unix_time(dt) * 1000.0

        module.unix_time = unix_time  # type: ignore[attr-defined]
        module.unix_time_millis = unix_time_millis  # type: ignore[attr-defined]


def use_wall_clock() -> None:
    """Give moto's SQS its own wall-clock functions back."""
    module = importlib.import_module(SQS_MODULE)
    with _lock:
        for name, function in _original.items():
            setattr(module, name, function)
        _original.clear()
