"""What a pattern runs against: the notebooks' own code, one table per pattern, emptied now and then.

A pattern's examples share one table (made once, with its `Faults`); each example uses request IDs and
keys of its own, under this run's `RUN` prefix (DynamoDB Local outlives a run).
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import Callable
from typing import Any

import helpers

from .delivery import Faults
from notebook_code import lesson

RUN = uuid.uuid4().hex[:8]           # request IDs never meet an earlier run's (DynamoDB Local outlives a run)

NB01, NB02, NB03 = "01_fixed_value_updates.ipynb", "02_conditional_creates.ipynb", "03_request_id_increments.ipynb"
NB04, NB05, NB06 = "04_where_it_stops.ipynb", "05_remembering_every_request.ipynb", "06_saved_responses.ipynb"
NB07 = "07_event_sources.ipynb"
NB11 = "11_saved_responses_in_depth.ipynb"   # 06's own cells, and the Powertools handlers beside them


def notebooks() -> Callable[[str], dict[str, Any]]:
    """``nb = notebooks()``: `nb(name)` runs a notebook's `imports` and `lesson` cells once, then returns them.

    Each test module makes its own: what one module sets in a notebook's namespace (a provider, a table)
    never reaches another module's tests.
    """
    return functools.cache(lesson)


@functools.cache
def rig(pattern: str, sort_key: str | None) -> tuple[Any, Faults]:
    """The one table (and its faults) a pattern's examples share; each example resets its own items."""
    table = helpers.fresh_table(helpers.connect(), f"props-{pattern}-{RUN}", sort_key=sort_key)
    return table, Faults(table)


@functools.cache
def table_for(sort_key: str | None, sdk_retries: bool) -> Any:
    """The failure-answer tests' table (`pk`, and `sort_key`), through a client with botocore's retries on or off."""
    db = helpers.connect()
    name = f"props-fail-{sort_key or 'pk'}-{RUN}"
    helpers.fresh_table(db, name, sort_key=sort_key)
    return db.table(name, sdk_retries=sdk_retries)


class EmptyNowAndThen:
    """Called once per example: delete every item of the tables given, every `every` calls (the first included).

    The examples do not need it -- each uses request IDs and keys of its own and resets its wallet -- but a
    table that kept every example's items (markers, records, orders) made example n cost more and more, and
    1,000 examples of the ledger pattern grew to minutes and gigabytes.
    """

    def __init__(self, every: int) -> None:
        self.every = every
        self._calls = itertools.count()

    def __call__(self, *tables: Any) -> None:
        if next(self._calls) % self.every:
            return
        for table in tables:
            helpers.empty_table(table)
