"""The caller's side on the virtual clock: an outage on the wire, many callers at once, load over time.

Notebook 12 runs many callers against one table in virtual time. The plumbing, none of it the lesson (the
callers' retry loops are in the notebook):

- `Outage(clock, start, end)`: from `start` to `end` on the virtual clock every write request is answered
  with one of DynamoDB's failure answers (a 500 that wrote nothing, by default) instead of the table's own;
  outside the window the table answers. A layer on the client's wire (`helpers.wire`), like `ErrorResponses`,
  whose answers it sends.
- `Capacity(clock, per_interval, interval)`: a table that takes `per_interval` writes in each `interval` seconds
  of virtual time (windows counted from when it is made) and answers the rest as DynamoDB answers a request over
  its throughput, `ProvisionedThroughputExceededException` by default (`kind=THROTTLING`: `ThrottlingException`).
  A throttled write never reaches the table. The decision is the layer's, so both backends throttle the same
  requests.
- `Backlog(clock, per_second, timeout, paused=(start, end))`: a server in front of the table with a queue: it
  serves `per_second` writes a second in the order they come, and none while `paused` (a stall: a restart, a
  long pause, a partition moving). A write whose turn comes within `timeout` is answered (at once: latency
  under the timeout is not drawn); a later one is still done when its turn comes -- the table applies it -- but its
  caller has stopped waiting and gets a timeout (`ReadTimeoutError`, a lost answer). The work done for callers who
  left is what can keep an overload going after its cause is gone.
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
from botocore.exceptions import ReadTimeoutError

from .clock import VirtualClock
from .dynamodb_errors import ERROR_500_NOT_APPLIED, THROTTLED, ErrorResponses
from .validation import BadInput
from .wire import LOST_RESPONSE, WRITES, Call, Layer, Result

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


class Capacity(ErrorResponses):
    """A table that accepts `per_interval` writes in each `interval` seconds and throttles the rest (`kind`).

    >>> from helpers.clock import VirtualClock
    >>> clock = VirtualClock(start=0)
    >>> table = Capacity(clock, per_interval=2, interval=0.1)
    >>> table.decide_many(3)
    [None, None, 'ProvisionedThroughputExceeded']
    >>> _ = clock.advance(0.1); table.decide()
    """

    def __init__(self, clock: VirtualClock, per_interval: int, interval: float = 0.1, kind: str = THROTTLED) -> None:
        if not (isinstance(per_interval, int) and per_interval >= 0 and interval > 0):
            raise BadInput(f"a capacity is a whole number of writes (0 or more) per interval of more than 0 s, got "
                           f"{per_interval!r} per {interval!r} s")
        super().__init__(at={}, kinds=(kind,))
        self.clock, self.per_interval, self.interval, self.kind = clock, per_interval, interval, kind
        self.origin, self.window, self.taken = clock.now(), -1, 0
        self.throttled = 0

    def decide(self, operation: str | None = None) -> str | None:
        """None (the table answers) while this interval has room, else `kind`."""
        with self._lock:
            self.sent += 1
            window = math.floor(round((self.clock.now() - self.origin) / self.interval, 4))   # the clock's float error
            if window != self.window:
                self.window, self.taken = window, 0
            if self.taken < self.per_interval:
                self.taken += 1
                return None
            self.throttled += 1
            self.picked.append(self.sent - 1)
            return self.kind

    def decide_many(self, n: int) -> list[str | None]:
        return [self.decide() for _ in range(n)]


class Backlog(Layer):
    """A queue in front of the table: `per_second` writes served a second, in order; an answer later than `timeout`
    after the request is lost (the write is applied when its turn comes; the caller has left).

    >>> from helpers.clock import VirtualClock
    >>> queue = Backlog(VirtualClock(start=0), per_second=10, timeout=0.25)
    >>> [queue.answered_in_time() for _ in range(4)]       # answers at 0.1, 0.2, 0.3, 0.4 s
    [True, True, False, False]
    """

    rank = LOST_RESPONSE

    def __init__(self, clock: VirtualClock, per_second: float, timeout: float,
                 paused: tuple[float, float] | None = None) -> None:
        if not (per_second > 0 and timeout > 0):
            raise BadInput(f"a backlog serves more than 0 writes a second with a timeout of more than 0 s, got "
                           f"{per_second!r} a second and {timeout!r} s")
        if paused is not None and not paused[1] >= paused[0]:
            raise BadInput(f"a pause ends after it starts, got {paused!r}")
        self.clock, self.per_second, self.timeout, self.paused = clock, per_second, timeout, paused
        self.operations = WRITES
        self.free_at, self.late = clock.now(), 0

    def answered_in_time(self) -> bool:
        """Queue one write now; whether its answer comes within the timeout."""
        now = self.clock.now()
        begins = max(self.free_at, now)
        if self.paused is not None and self.paused[0] <= begins < self.paused[1]:
            begins = self.paused[1]                 # nothing is served during the pause
        self.free_at = begins + 1 / self.per_second
        if round(self.free_at - now, 4) <= self.timeout:        # the clock's float error, rounded off
            return True
        self.late += 1
        return False

    def queued(self) -> float:
        """Seconds of work waiting now."""
        return max(0.0, self.free_at - self.clock.now())

    def on_wire(self, call: Call) -> Result:
        if call.operation not in self.operations:
            return call.send()
        in_time = self.answered_in_time()
        result = call.send()                         # the table does the work either way
        if not in_time and result[1] is None:
            return (None, ReadTimeoutError(endpoint_url=call.request.url))
        return result


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
