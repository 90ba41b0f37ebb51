"""Orders of requests delivered to a wallet of their own: 04's and 05's lessons, through their own debit functions.

A request is a letter (A, B, C, D) with an amount of its own; an *order* is the sequence in which copies of
them reach the table (duplicates and late retries included), and a schedule pairs an order with the positions
whose responses are lost (the write commits, the caller times out). The lessons' tests share one table per
module (sort key `sk`, made by `shared_table`; `module_fixtures` makes the module's `nb` and `name` fixtures) and
give every example a wallet of its own (`new_wallet`).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from hypothesis import strategies as st

import helpers
from helpers import LostResponses

from .schedules import has_aba
from notebook_code import lesson

REQUESTS = {"A": 10, "B": 20, "C": 40, "D": 80}
START = 10_000
_wallets = itertools.count()

orders = st.lists(st.sampled_from(sorted(REQUESTS)), min_size=1, max_size=8)
schedules = orders.flatmap(lambda order: st.tuples(
    st.just(order), st.sets(st.integers(0, len(order) - 1), max_size=len(order))))


def module_fixtures(notebook: str, prefix: str) -> tuple[Any, Any]:
    """A lesson test module's two fixtures: ``nb, name = module_fixtures(NB, "test-04")`` -- `nb`, the notebook's
    own code (its `imports` and `lesson` cells, run once), and `name`, the module's shared table (`shared_table`)."""

    @pytest.fixture(scope="module")
    def nb() -> dict[str, Any]:
        return lesson(notebook)

    @pytest.fixture(scope="module")
    def name(db: Any) -> str:
        return shared_table(db, prefix)

    return nb, name


def shared_table(db: Any, prefix: str) -> str:
    """One table for a test module (sort key sk), named for this run; every example uses wallets of its own."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    helpers.fresh_table(db, name, sort_key="sk")
    return name


def new_wallet(code: dict[str, Any], table: Any, balance: int = START) -> str:
    """A wallet of its own, opened with `balance` by the notebook's own `open_wallet`."""
    wallet_id = f"w{next(_wallets)}-{uuid.uuid4().hex[:8]}"
    code["open_wallet"](table, wallet_id, balance)
    return wallet_id


def deliver(code: dict[str, Any], db: Any, name: str, debit: Callable[..., Any], order: list[str],
            lost: Any = (), sdk_retries: bool = False) -> tuple[int, list[Any]]:
    """Deliver `order` to a new wallet; the responses at positions `lost` are lost (the writes commit).

    Returns the wallet's balance afterwards and what each delivery's caller saw ("timeout" for a lost response).
    """
    table = db.table(name, sdk_retries=sdk_retries)
    wallet_id = new_wallet(code, table)
    LostResponses(at=lost).install(table)
    seen = []
    for request in order:
        try:
            seen.append(debit(table, wallet_id, REQUESTS[request], f"{wallet_id}-{request}"))
        except ReadTimeoutError:
            seen.append("timeout")
    return code["read_balance"](table, wallet_id), seen


def truth(order: list[str]) -> int:
    """The balance after each distinct request of `order` applied exactly once."""
    return START - sum(REQUESTS[r] for r in set(order))


def last_request_id_model(order: list[str]) -> int:
    """What the last_request_id debit takes: every delivery unlike the one just before it."""
    return sum(REQUESTS[r] for n, r in enumerate(order) if n == 0 or order[n - 1] != r)


def check_last_request_id(code: dict[str, Any], db: Any, name: str, schedule: tuple[list[str], set[int]]) -> None:
    """The notebook's last_request_id debit takes exactly what the model says, lost responses or not, and so
    misses the truth exactly when the order has the ABA shape."""
    order, lost = schedule
    balance, _ = deliver(code, db, name, code["debit_idempotent"], order, sorted(lost))
    assert balance == START - last_request_id_model(order)       # lost responses change nothing stored
    assert (balance != truth(order)) == has_aba(order)
