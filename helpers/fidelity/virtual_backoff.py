"""botocore's retry backoff, on the virtual clock.

botocore's standard retry mode sleeps a random `rand(0, 1) * min(0.025 * 2**i, 20)`
seconds before each DynamoDB retry. Here the jitter is fixed at its upper bound
and the sleep moves the virtual clock instead of the wall clock: the same
retries happen, in no time and the same way every run.
"""

from __future__ import annotations

from typing import Any

from ..clock import VirtualClock


def use_virtual_backoff(client: Any, clock: VirtualClock) -> None:
    """Make `client`'s retries advance `clock` instead of sleeping."""
    event = f"needs-retry.{client.meta.service_model.service_id.hyphenize()}"
    unique_id = f"retry-config-{client.meta.service_model.service_id.hyphenize()}"
    handlers = client.meta.events._emitter._unique_id_handlers  # botocore keeps no public lookup
    retry_handler = handlers[unique_id]["handler"].__self__
    retry_handler._retry_policy._retry_backoff._random = lambda: 1.0

    def needs_retry(**kwargs: Any) -> float | None:
        delay = retry_handler.needs_retry(**kwargs)
        if delay is None:
            return None
        clock.advance(delay)
        return 0  # botocore then sleeps 0 seconds

    client.meta.events.unregister(event, unique_id=unique_id)
    client.meta.events.register(event, needs_retry, unique_id=unique_id)
