"""Make moto answer like DynamoDB where the lessons depend on it.

moto runs inside the kernel's own process: no Java, no network. Measured on
moto 5.2.5, two of its gaps would teach the wrong lesson, so this module
closes them for every DynamoDB client the helpers hand out:

* **Atomicity.** moto handles concurrent requests concurrently, so two
  threads sending the same guarded debit can both pass the condition.
  DynamoDB applies each write atomically. Here every request is answered
  under one lock.
* **ClientRequestToken.** moto ignores it on TransactWriteItems; DynamoDB
  replays the first answer within ten minutes and rejects a changed request
  under the same token. `client_tokens.TokenLedger` does the same here, on
  the virtual clock.

It also refuses to let any request leave the machine: a request moto cannot
answer raises instead of being sent.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.core.models import botocore_stubber

from .client_tokens import TokenLedger
from .clock import VirtualClock


class LeftTheMachine(RuntimeError):
    """A request on the moto backend would have gone to the network."""


class FaithfulMoto:
    """A botocore ``before-send`` handler that answers from moto, one request at a time."""

    def __init__(self, clock: VirtualClock) -> None:
        self._lock = threading.Lock()
        self.tokens = TokenLedger(clock)

    def attach(self, client: Any) -> Any:
        """Route `client`'s requests through this handler instead of stock moto's."""
        client.meta.events.unregister("before-send", botocore_stubber)
        client.meta.events.register("before-send", self)
        return client

    def __call__(self, request: Any, event_name: str = "", **kwargs: Any) -> Any:
        with self._lock:
            if event_name.endswith(".TransactWriteItems"):
                return self.tokens.answer(request, lambda: self._moto(request, event_name))
            return self._moto(request, event_name)

    def _moto(self, request: Any, event_name: str) -> Any:
        response = botocore_stubber(event_name=event_name, request=request)
        if response is None:
            raise LeftTheMachine(
                f"refusing to send {request.method} {request.url} off this machine: "
                "the moto backend answers everything in-process"
            )
        return response
