"""Seeded schedules: which requests a fault falls on, the same ones on every run.

`Schedule` numbers the requests it is asked about 0, 1, 2, ... in the order they come (retries
included) and picks some of them: request n is picked if n is in `at`, otherwise with probability
`p`, drawn from a generator seeded with `seed`. The injected faults are schedules, each named for
the responses it hands a picked request's caller: `helpers.faults.LostResponses` (DynamoDB's answer
lost), `helpers.http_faults.LostHttpResponses` (an HTTP answer lost) and
`helpers.dynamodb_errors.ErrorResponses` (one of DynamoDB's failure answers instead of its own).
Each says what a picked request gets by overriding `fault()`, and `restart(p=, seed=, at=)` starts
any of them over (a reader's re-run, a checker's next history).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Collection
from typing import Any, Self


class Schedule:
    """Which requests get a fault: by number (`at`), or by seeded chance (`p`).

    `at` is a collection of request numbers (a set, or a dict keyed by them). `sent` counts the
    requests decided so far; `picked` lists the numbers of those that got a fault.

    >>> Schedule(at={0, 2}).decide_many(4)
    [True, False, True, False]
    >>> Schedule(p=0.5, seed=1).decide_many(6)       # seeded: the same on every run
    [True, False, False, True, True, True]
    """

    no_fault: Any = False              # what a request that is not picked gets
    must_get_through = "a response"    # named in the error for p >= 1

    def __init__(self, *, p: float = 0.0, seed: int = 0, at: Collection[int] = ()) -> None:
        self._lock = threading.Lock()
        self.restart(p=p, seed=seed, at=at)

    def restart(self, *, p: float = 0.0, seed: int = 0, at: Collection[int] = ()) -> Self:
        """Start the schedule over: counts back to zero, a fresh generator; returns self."""
        self.check_probability(p)
        with self._lock:
            self._start(p, seed, at)
        return self

    def check_probability(self, p: float) -> None:
        if not 0.0 <= p < 1.0:
            raise ValueError(
                f"p is a probability below 1 ({self.must_get_through} must get through eventually), got {p!r}")

    def _start(self, p: float, seed: int, at: Collection[int]) -> None:
        """`restart`'s work, with the lock held (a subclass resets its own counts in the same step)."""
        self.p = p
        self.at = at
        self._rng = random.Random(seed)
        self.sent = 0                   # requests decided so far
        self.picked: list[int] = []     # which of them got a fault

    def fault(self, n: int) -> Any:
        """What picked request `n` gets (called with the lock held, so a further draw keeps its order)."""
        return True

    def decide(self) -> Any:
        """Decide for the next request: `fault(n)` if it is picked, else `no_fault`."""
        with self._lock:
            n = self._number_next()
            return self.no_fault if n is None else self.fault(n)

    def _number_next(self) -> int | None:
        """With the lock held: number the next request; its number if it is picked (and note it), else None."""
        n = self.sent
        self.sent += 1
        if n not in self.at and not (self.p > 0 and self._rng.random() < self.p):
            return None
        self.picked.append(n)
        return n

    def decide_many(self, n: int) -> list[Any]:
        """The next `n` decisions (handy for showing a schedule)."""
        return [self.decide() for _ in range(n)]
