"""Concurrent duplicates: many threads send at the same instant."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def race(send: Callable[[int], Any], threads: int) -> list[Any]:
    """Call `send(i)` for i in range(threads), all released together; return results in order.

    A result is whatever `send` returned, or the exception it raised.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    start = threading.Barrier(threads)

    def run(i: int) -> Any:
        start.wait()
        try:
            return send(i)
        except Exception as error:  # reported, not swallowed: the caller inspects it
            return error

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(run, range(threads)))
