"""A small fake payment provider that honours an idempotency key, as Stripe's API does.

It stands for a side effect *outside* DynamoDB: a card charge that no
DynamoDB condition can undo or deduplicate. Like Stripe, it remembers each
idempotency key for `KEY_WINDOW_SECONDS` of virtual time:

* the first call with a key charges and remembers the answer;
* a later call with the same key and the same charge returns that answer
  again and charges nothing;
* the same key with a different charge is refused (`ProviderKeyReused`);
* after the window a key is forgotten: the same call charges again.

A key is any non-empty string of up to 255 characters (Stripe's limit for
its idempotency keys). `fail_next(n)` makes the next `n` requests fail with
`ProviderUnavailable`, charging nothing (the provider is down). Inside
``with watch_charges(callback):`` every answered request is also reported as
``callback(charge, new)`` (notebook 06 draws its swimlanes from that).

`calls` counts every request it received, `charges` every charge it made; `asked` lists every charge request
as (idempotency key, when), so a check can hold a caller to a window rule (never ask again with a key whose first
charge is older than the window less a margin: issue 35).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..clock import VirtualClock
from ..validation import BadInput, check_amount, check_wallet_id

KEY_WINDOW_SECONDS = 24 * 3600.0
MAX_KEY_LENGTH = 255  # Stripe: "Idempotency keys are up to 255 characters long"


class ProviderKeyReused(ValueError):
    """The provider saw this idempotency key before, with a different charge."""


class ProviderUnavailable(ConnectionError):
    """The provider did not take the request (it is down); nothing was charged."""


@dataclass(frozen=True)
class Charge:
    """One charge the provider made."""

    charge_id: str
    wallet_id: str
    amount: int
    idempotency_key: str
    charged_at: float


Watcher = Callable[["Charge", bool], None]
_watchers: list[Watcher] = []


@contextmanager
def watch_charges(callback: Watcher) -> Iterator[None]:
    """Inside the block, `callback(charge, new)` hears every charge any provider answers."""
    if not callable(callback):
        raise BadInput(f"watch_charges needs a callable, got {type(callback).__name__}")
    _watchers.append(callback)
    try:
        yield
    finally:
        _watchers.remove(callback)


def check_key(key: object) -> str:
    """Return `key` if it is a non-empty string of at most 255 characters."""
    if not isinstance(key, str):
        raise BadInput(f"idempotency_key must be a string, got {type(key).__name__} {key!r}")
    if not key.strip():
        raise BadInput("idempotency_key must not be empty")
    if len(key) > MAX_KEY_LENGTH:
        raise BadInput(f"idempotency_key is {len(key)} characters; at most {MAX_KEY_LENGTH} allowed")
    return key


class PaymentProvider:
    """An in-memory provider: `charge(...)` is at-least-once safe when given the same key."""

    def __init__(self, clock: VirtualClock, *, key_window_seconds: float = KEY_WINDOW_SECONDS) -> None:
        if not key_window_seconds > 0:
            raise BadInput(f"key_window_seconds must be positive, got {key_window_seconds!r}")
        self.clock = clock
        self.key_window_seconds = key_window_seconds
        self.calls = 0
        self.asked: list[tuple[str, float]] = []
        self.made: list[Charge] = []
        self._keys: dict[str, Charge] = {}
        self._failures = 0
        self._lock = threading.Lock()

    @property
    def charges(self) -> int:
        """How many charges were really made (not replayed)."""
        return len(self.made)

    def fail_next(self, n: int = 1) -> None:
        """The next `n` charge requests fail with `ProviderUnavailable` and charge nothing."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BadInput(f"n must be a whole number >= 0, got {n!r}")
        with self._lock:
            self._failures = n

    def find(self, idempotency_key: str) -> Charge | None:
        """The charge made with `idempotency_key`, however long ago, or None: a lookup, not a request (it
        charges nothing and never fails). A key's *deduplication* ends with its window, the charge does not:
        Stripe keeps every charge, and its Search API finds one by the metadata it was made with."""
        check_key(idempotency_key)
        with self._lock:
            return next((c for c in self.made if c.idempotency_key == idempotency_key), None)

    def charge(self, wallet_id: str, amount: int, idempotency_key: str) -> Charge:
        """Charge `amount` to `wallet_id` once per `idempotency_key` (within the key window)."""
        check_wallet_id(wallet_id)
        check_amount(amount)
        check_key(idempotency_key)
        with self._lock:
            self.calls += 1
            self.asked.append((idempotency_key, self.clock.now()))
            if self._failures:
                self._failures -= 1
                raise ProviderUnavailable("the payment provider is unavailable; nothing was charged")
            now = self.clock.now()
            seen = self._keys.get(idempotency_key)
            if seen is not None and now - seen.charged_at < self.key_window_seconds:
                if (seen.wallet_id, seen.amount) != (wallet_id, amount):
                    raise ProviderKeyReused(
                        f"idempotency key {idempotency_key!r} was used for a different charge"
                    )
                answer, new = seen, False
            else:
                answer, new = Charge(f"ch_{len(self.made) + 1:04d}", wallet_id, amount, idempotency_key, now), True
                self.made.append(answer)
                self._keys[idempotency_key] = answer
        for watcher in list(_watchers):
            watcher(answer, new)
        return answer
