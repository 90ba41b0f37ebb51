"""Notebook 01's late retry, run against an update and logged; and the log as swimlane events.

    naive_log = late_retry(set_status, globals())      # in 01: the log, one row per step
    swimlanes(as_events(naive_log), lanes=["packer", "courier", "table"], title=...)

The packer sends *packed*: the write commits but its response is lost (`LostResponses`), and the packer's retry
waits in a backoff. Two seconds later the courier sends *shipped*; three seconds after that the packer's retry
arrives. Each step is logged on the virtual clock with what its sender was told and the status read back.

`lesson` is notebook 01's namespace (`globals()` there): `db` and `ORDER`. The order table `orders-01` is made
fresh and the order placed first, so a run can be repeated. This is the harness, not the lesson: the update and
its condition are in the notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from botocore.exceptions import ReadTimeoutError

from .events import EventLog
from .faults import LostResponses
from .tables import fresh_table, read_item


def late_retry(update: Callable[[Any, str, str], Any], lesson: Mapping[str, Any]) -> pd.DataFrame:
    """packed (response lost), shipped, then packed's retry arrives late. Returns the log."""
    db, order = lesson["db"], lesson["ORDER"]
    table = fresh_table(db, "orders-01")
    table.put_item(Item={"pk": order, "status": "placed"})
    LostResponses(at=[0]).install(table)
    log, start = EventLog(), db.clock.now()

    def step(who: str, status: str) -> None:
        try:
            outcome = update(table, order, status)
        except ReadTimeoutError:
            outcome = "timeout"
        except Exception as error:                       # a refusal: show which one
            outcome = type(error).__name__
        log.record(t=db.clock.now() - start, who=who, sends=status, caller_saw=outcome,
                   status_now=read_item(table, {"pk": order})["status"])

    step("packer", "packed")                             # committed; the response is lost
    db.clock.advance(2)
    step("courier", "shipped")
    db.clock.advance(3)
    step("packer (retry)", "packed")                     # the same fixed value, sent again, late
    return log.frame()


def as_events(log: pd.DataFrame) -> pd.DataFrame:
    """The late-retry log as swimlane events: each write sent, the status it left, what its sender saw."""
    rows = []
    for step in log.itertuples():
        lane = step.who.split(" ")[0]                    # "packer (retry)" is the packer's own lane
        rows += [{"t": step.t, "lane": lane, "event": f"sends {step.sends}; sees {step.caller_saw}", "to": "table"},
                 {"t": step.t, "lane": "table", "event": f"status now {step.status_now}", "to": ""}]
    return pd.DataFrame(rows)
