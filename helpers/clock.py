"""A virtual clock: time that moves only when the code says so.

Nothing in this collection sleeps. Timeouts, backoffs, leases, TTLs and
visibility timeouts are all measured on a `VirtualClock`, so a notebook that
"waits ten minutes" finishes instantly and prints the same output every run.
"""

from __future__ import annotations

import threading

# 2030-03-17, deliberately in the future. DynamoDB Local really deletes items whose TTL
# attribute is in the past (how soon: README's fidelity table, `make fidelity`); moto never does. Starting
# virtual time after the wall clock keeps `expires_at = now + window` in the future on
# every backend, so no backend deletes an item the lesson still reads. Expiry that a
# lesson depends on is checked in code, against this clock.
START = 1_900_000_000.0


class VirtualClock:
    """Seconds since an arbitrary epoch, advanced explicitly.

    >>> clock = VirtualClock(start=1_000)
    >>> clock.advance(29.5)
    1029.5
    >>> clock.now()
    1029.5
    """

    def __init__(self, start: float = START) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        """The current virtual time, in seconds."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move time forward by `seconds` (never backwards) and return the new time."""
        if not seconds >= 0:
            raise ValueError(f"a clock only moves forward; cannot advance by {seconds!r} seconds")
        with self._lock:
            self._now += seconds
            return self._now

    def __repr__(self) -> str:
        return f"VirtualClock(now={self.now()})"
