"""Notebook 09's endpoint, served as the notebook serves it, for the tests that drive it over HTTP.

`served(notebook)` runs the notebook's `imports` and `lesson` cells (uvicorn on 127.0.0.1) and stops the server
when the module's tests are done; `reset` gives each test a new payment provider, no lost response and the
named wallets at `balance`; `tables` reads both tables back, so a test sees what a request wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from helpers.services.payment_provider import PaymentProvider

from notebook_code import lesson


def served(notebook: str) -> Iterator[dict[str, Any]]:
    """The notebook's namespace with its server running; stopped afterwards (a module fixture's body)."""
    namespace = lesson(notebook)
    yield namespace
    namespace["server"].stop()


def reset(nb: dict[str, Any], wallets: dict[str, str], balance: int) -> dict[str, Any]:
    """A new provider, no response lost, and each wallet (name -> owner account) opened at `balance`."""
    nb["provider"] = PaymentProvider(nb["db"].clock)
    nb["lost"].restart()
    for wallet, owner in wallets.items():
        nb["open_account_wallet"](nb["wallets"], wallet, balance, owner=owner)
    return nb


def tables(nb: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every item of both tables, read back (strongly consistent): what a request wrote shows up here."""
    return {name: sorted(nb[name].scan(ConsistentRead=True)["Items"], key=lambda item: item["pk"])
            for name in ("records", "wallets")}
