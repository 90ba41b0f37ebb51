"""An event log: one row per thing that happened, as a pandas DataFrame."""

from __future__ import annotations

from typing import Any

import pandas as pd


class EventLog:
    """Collects rows (dicts) and shows them as a table.

    >>> log = EventLog()
    >>> log.record(payment=1, attempt=1, caller_saw="timeout")
    >>> log.frame().shape
    (1, 3)
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, **fields: Any) -> None:
        """Add one row."""
        self.rows.append(fields)

    def frame(self) -> pd.DataFrame:
        """All rows so far, in order."""
        return pd.DataFrame(self.rows)

    def __len__(self) -> int:
        return len(self.rows)
