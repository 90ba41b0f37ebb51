"""Kept for notebook 06; the home is `helpers.fidelity.powertools_clock`."""

from __future__ import annotations

from ..fidelity.powertools_clock import POWERTOOLS_MODULES, LambdaContext, use_virtual_time, virtual_time

__all__ = ["POWERTOOLS_MODULES", "LambdaContext", "use_virtual_time", "virtual_time"]
