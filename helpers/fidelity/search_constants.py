"""The checker's histories, independent of the literals in the project's own source.

Hypothesis (6.1xx) sometimes draws a number from a pool of *local constants*: the literals of every module
of this project that happens to be imported (`hypothesis.internal.conjecture.providers._get_local_constants`).
So with a fixed seed, the histories a check sends -- and every committed output drawn from them, a
notebook's counterexample, an exercise's "held over N histories" -- still changed whenever any helper gained
or lost a number, or another module was imported first. Inside `without_local_constants()` that pool is
empty (hypothesis's built-in constants stay), so a seeded check sends the same histories in a test, in a
kernel and after an unrelated edit. Named, with the pinned version, in tests/test_patched_hooks.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants

_lock = threading.Lock()
_depth = 0
_kept = providers._get_local_constants


def _no_local_constants() -> Constants:
    return Constants()


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Inside the block, hypothesis draws no constant from this project's source (nesting is fine)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            providers._get_local_constants = _no_local_constants
            providers.CONSTANTS_CACHE.cache.clear()   # pools computed with the local constants
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                providers._get_local_constants = _kept
                providers.CONSTANTS_CACHE.cache.clear()
