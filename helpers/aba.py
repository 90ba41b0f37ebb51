"""Notebook 04's harnesses: the ABA history, run against a debit and logged for a swimlane; and the
property-based search that finds it without being told (`smallest_failing_order`).

    events, rows = late_retry_after_another(debit_idempotent, globals())    # in 04
    swimlanes(events, lanes=["client", "phone", "table"], title=...)

Payment **A** (10) is sent from the client and applied, but its answer is lost (`LostResponses`): the client sees
`ReadTimeoutError`. Payment **B** (20) is applied from the phone. Then A is resent with A's own request ID. Each
send is a row (what DynamoDB did, read back from the table, and what the caller saw) and a few events on the
timeline (client, phone, table), two virtual seconds apart.

`lesson` is notebook 04's namespace (`globals()` there): `db`, `table`, `WALLET`, and 04's own `open_wallet` and
`read_balance` (its wallet item has a sort key). The wallet is reset to 100 first, so a run can be repeated.
This is the harness, not the lesson: the debit and its condition are in the notebook.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, MutableMapping
from typing import Any

import pandas as pd
from botocore.exceptions import ReadTimeoutError
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from .faults import LostResponses
from .swimlanes import Timeline

Debit = Callable[[Any, str, int, str], str]


# Every phase but `explain`: it reports which parts of a failing example mattered, and to find out it traces every
# line the example runs (sys.settrace) while shrinking -- moto's lines too. `find` prints no report; the example it
# returns is the same.
_PHASES = [phase for phase in Phase if phase is not Phase.explain]

def send_one(debit: Debit, handle: Any, lane: str, name: str, amount: int, request_id: str, timeline: Timeline,
             lesson: MutableMapping[str, Any]) -> dict[str, str]:
    """`lane` sends debit `name` through `handle`, drawn on `timeline`. The row: what DynamoDB did, who saw what."""
    table, wallet, clock, read_balance = lesson["table"], lesson["WALLET"], lesson["db"].clock, lesson["read_balance"]
    before = read_balance(table, wallet)
    timeline.record(lane, f"sends {name}: {amount} as {request_id}", to="table")
    try:
        saw = debit(handle, wallet, amount, request_id)
    except ReadTimeoutError:
        saw = "ReadTimeoutError"
    after = read_balance(table, wallet)
    did = f"debited {before} → {after}" if after != before else "wrote nothing"
    timeline.record("table", did)
    if saw == "ReadTimeoutError":
        clock.advance(2)
        timeline.record(lane, "no answer after 2 s: ReadTimeoutError")
    else:
        timeline.record("table", f"answers {saw}", to=lane)
    clock.advance(2)
    return {"send": name, "request ID": request_id, "DynamoDB": did, "the caller saw": saw}


def late_retry_after_another(debit: Debit, lesson: MutableMapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A (its response lost), then B from the phone, then A resent: the timeline's events, and who saw what."""
    db, table = lesson["db"], lesson["table"]
    lesson["open_wallet"](table, lesson["WALLET"], 100)
    client = db.resource().Table(table.name)             # the paying client's handle on the same table
    LostResponses(at=[0]).install(client)                # the answer to A's first send is lost
    timeline = Timeline(db.clock)
    rows = [send_one(debit, client, "client", "A", 10, "req-A", timeline, lesson),
            send_one(debit, table, "phone", "B", 20, "req-B", timeline, lesson),
            send_one(debit, client, "client", "A again", 10, "req-A", timeline, lesson)]
    return timeline.frame(), pd.DataFrame(rows)


def smallest_failing_order(debit: Debit, table: Any, requests: dict[str, int], *, open_wallet: Callable[..., Any],
                           read_balance: Callable[[Any, str], int], start: int = 1000,
                           examples: int = 50) -> list[str] | None:
    """Notebook 04's property-based search: the smallest delivery order of `requests` (request ID -> amount; any
    order, duplicates included, one to six deliveries) after which the balance read back is not `start` less the
    **distinct** requests' amounts -- or None if the search finds none.

    hypothesis's `find` draws the orders, runs each against `table` on a new wallet (opened with 04's own
    `open_wallet`, read back with its `read_balance`), and shrinks the first failing one. The search is
    derandomized and keeps no database of past failures, so its answer is the same on every run.
    """
    orders = st.lists(st.sampled_from(sorted(requests)), min_size=1, max_size=6)
    search = settings(derandomize=True, database=None, max_examples=examples, deadline=None, phases=_PHASES,
                      suppress_health_check=list(HealthCheck))
    run, numbers = uuid.uuid4().hex[:8], itertools.count(1)   # a re-run never meets an earlier run's wallets

    def balance_is_wrong(order: list[str]) -> bool:
        wallet_id = f"{run}-{next(numbers)}"
        open_wallet(table, wallet_id, start)
        for request_id in order:
            debit(table, wallet_id, requests[request_id], "req-" + request_id)
        return read_balance(table, wallet_id) != start - sum(requests[r] for r in set(order))

    try:
        return find(orders, balance_is_wrong, settings=search)
    except NoSuchExample:
        return None
