"""Seeded request IDs: uuid-shaped, but the same on every run.

A real client would call `uuid.uuid4()`. Here the IDs come from a seeded
generator so that committed notebook outputs are byte-stable.
"""

from __future__ import annotations

import random
import threading
import uuid


class RequestIds:
    """A reproducible stream of version-4 UUID strings.

    >>> ids = RequestIds(seed=1)
    >>> a, b = ids.next(), ids.next()
    >>> a != b and RequestIds(seed=1).next() == a
    True
    """

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def next(self) -> str:
        """The next request ID, e.g. ``'cd613e30-d8f1-4adf-91b7-584a2265b1f5'``."""
        with self._lock:
            return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    __call__ = next
