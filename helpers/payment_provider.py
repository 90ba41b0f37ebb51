"""A small fake payment provider that honours an idempotency key, as Stripe's API does.

It stands for a side effect *outside* DynamoDB: a card charge that no
DynamoDB condition can undo or deduplicate. Like Stripe, it remembers each
idempotency key for `KEY_WINDOW_SECONDS` of virtual time:

* the first call with a key charges and remembers the answer;
* a later call with the same key and the same charge returns that answer
  again and charges nothing;
* the same key with a different charge is refused (`ProviderKeyReused`);
* after the window a key is forgotten: the same call charges again.

`calls` counts every request it received, `charges` every charge it made.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .clock import VirtualClock
from .validation import BadInput, check_amount, check_request_id, check_wallet_id

KEY_WINDOW_SECONDS = 24 * 3600.0


class ProviderKeyReused(ValueError):
    """The provider saw this idempotency key before, with a different charge."""


@dataclass(frozen=True)
class Charge:
    """One charge the provider made."""

    charge_id: str
    wallet_id: str
    amount: int
    idempotency_key: str
    charged_at: float


class PaymentProvider:
    """An in-memory provider: `charge(...)` is at-least-once safe when given the same key."""

    def __init__(self, clock: VirtualClock, *, key_window_seconds: float = KEY_WINDOW_SECONDS) -> None:
        if not key_window_seconds > 0:
            raise BadInput(f"key_window_seconds must be positive, got {key_window_seconds!r}")
        self.clock = clock
        self.key_window_seconds = key_window_seconds
        self.calls = 0
        self.made: list[Charge] = []
        self._keys: dict[str, Charge] = {}
        self._lock = threading.Lock()

    @property
    def charges(self) -> int:
        """How many charges were really made (not replayed)."""
        return len(self.made)

    def charge(self, wallet_id: str, amount: int, idempotency_key: str) -> Charge:
        """Charge `amount` to `wallet_id` once per `idempotency_key` (within the key window)."""
        check_wallet_id(wallet_id)
        check_amount(amount)
        check_request_id(idempotency_key)
        with self._lock:
            self.calls += 1
            now = self.clock.now()
            seen = self._keys.get(idempotency_key)
            if seen is not None and now - seen.charged_at < self.key_window_seconds:
                if (seen.wallet_id, seen.amount) != (wallet_id, amount):
                    raise ProviderKeyReused(
                        f"idempotency key {idempotency_key!r} was used for a different charge"
                    )
                return seen
            made = Charge(f"ch_{len(self.made) + 1:04d}", wallet_id, amount, idempotency_key, now)
            self.made.append(made)
            self._keys[idempotency_key] = made
            return made
