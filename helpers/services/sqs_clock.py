"""Kept for notebooks 00 and 07 (and helpers/exercises/lesson_07.py); the home is `helpers.fidelity.sqs_clock`."""

from __future__ import annotations

from ..fidelity.sqs_clock import use_virtual_time, use_wall_clock

__all__ = ["use_virtual_time", "use_wall_clock"]
