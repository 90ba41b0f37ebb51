"""The caller's side on the virtual clock: an outage on the wire, many callers at once, load over time.

Notebook 12 runs many callers against one table in virtual time. Three pieces of plumbing, none of them
the lesson (the callers' retry loops are in the notebook):

- `Outage(clock, start, end)`: from `start` to `end` on the virtual clock every write request is answered
  with one of DynamoDB's failure answers (a 500 that wrote nothing, by default) instead of the table's own;
  outside the window the table answers. A layer on the client's wire (`helpers.wire`), like `ErrorResponses`,
  whose answers it sends.
- `run_together(callers, clock)`: runs callers written as generators side by side. A caller sleeps with
  ``yield seconds``: it is put aside until the virtual clock reaches its wake-up time, and the caller due
  first runs next (ties in the order given), so a run is the same every time and nothing really waits.
  Returns what each caller returned, or the exception it raised.
- `load(answers, start, end, bucket)`: the requests the table was sent, counted per `bucket` seconds of
  virtual time, from a `helpers.wire.watch_answers` log.

>>> from helpers.clock import VirtualClock
>>> clock = VirtualClock(start=0)
>>> def caller(name, wait):
...     yield wait
...     return f"{name} woke at {clock.now()}"
>>> run_together([caller("a", 2.0), caller("b", 0.5)], clock)
['a woke at 2.0', 'b woke at 0.5']
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator, Iterable, Sequence
from typing import Any

import pandas as pd

from .clock import VirtualClock
from .dynamodb_errors import ERROR_500_NOT_APPLIED, ErrorResponses
from .validation import BadInput

Caller = Generator[float, None, Any]


class Outage(ErrorResponses):
    """Every write request sent while `start <= clock.now() < end` gets `kind` (default: a 500, not applied)."""

    def __init__(self, clock: VirtualClock, start: float, end: float, kind: str = ERROR_500_NOT_APPLIED) -> None:
        if not end >= start:
            raise BadInput(f"an outage ends after it starts, got start {start!r} and end {end!r}")
        super().__init__(at={}, kinds=(kind,))
        self.clock, self.start, self.end, self.kind = clock, start, end, kind

    def decide(self, operation: str | None = None) -> str | None:
        """`kind` while the outage lasts, else None (the table's own answer)."""
        with self._lock:
            self.sent += 1
            if self.start <= self.clock.now() < self.end:
                self.picked.append(self.sent - 1)
                return self.kind
            return None


def run_together(callers: Iterable[Caller], clock: VirtualClock) -> list[Any]:
    """Run generator `callers` side by side on `clock`; each ``yield seconds`` sleeps. Their results, in order."""
    callers = list(callers)
    for caller in callers:
        if not hasattr(caller, "send"):
            raise BadInput(f"a caller is a generator (a function that sleeps with `yield seconds`), "
                           f"got {type(caller).__name__}")
    results: list[Any] = [None] * len(callers)
    due = [(clock.now(), i) for i in range(len(callers))]
    heapq.heapify(due)
    while due:
        wake, i = heapq.heappop(due)
        if wake > clock.now():
            clock.advance(wake - clock.now())
        try:
            wait = next(callers[i])
        except StopIteration as done:
            results[i] = done.value
            continue
        except Exception as error:  # a caller's own error is its result
            results[i] = error
            continue
        if not isinstance(wait, (int, float)) or isinstance(wait, bool) or not math.isfinite(wait) or wait < 0:
            results[i] = BadInput(f"a caller sleeps with `yield seconds` (a number, 0 or more), yielded {wait!r}")
            callers[i].close()
            continue
        heapq.heappush(due, (clock.now() + wait, i))
    return results


def load(answers: Sequence[Any], start: float, end: float, bucket: float) -> pd.Series:
    """Requests sent to the table per `bucket` seconds from `start` to `end`, indexed by the bucket's start."""
    buckets = max(1, round((end - start) / bucket))
    counts = [0] * buckets
    for answer in answers:
        n = math.floor(round((answer.t - start) / bucket, 4))   # the clock's float error, rounded off
        if 0 <= n < buckets:
            counts[n] += 1
    return pd.Series(counts, index=pd.Index([round(n * bucket, 6) for n in range(buckets)], name="virtual s"))
