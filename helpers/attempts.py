"""Kept for notebook 00; the home is `helpers.wire` (`watch_attempts`, `Attempt`: every request on the wire)."""

from __future__ import annotations

from .wire import Attempt, AttemptWatcher, watch_attempts

__all__ = ["Attempt", "AttemptWatcher", "watch_attempts"]
