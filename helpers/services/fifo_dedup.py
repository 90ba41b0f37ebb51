"""Kept for notebook 07; the home is `helpers.fidelity.fifo_dedup`."""

from __future__ import annotations

from ..fidelity.fifo_dedup import WINDOW_SECONDS, use_aws_deduplication, use_moto_deduplication

__all__ = ["WINDOW_SECONDS", "use_aws_deduplication", "use_moto_deduplication"]
