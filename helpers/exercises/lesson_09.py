"""Notebook 09's exercise: an HTTP client that pays once, however its responses are lost.

The reader writes `pay(url, payment, api_key)` for notebook 09's endpoint: it POSTs
`payment` to ``url + "/payments"`` with an `Idempotency-Key` (a quoted String:
``Idempotency-Key: "<key>"``), resends after a timeout,
a 409 or a 503, raises on any other 4xx, and returns the 201's JSON body. The checker
runs it against the notebook's own server (its `LostHttpResponses` schedule, its wallets
table and its payment provider):

1. seeded schedules that lose the first response and, with probability 0.5, later ones
   (the server commits, then closes the connection without an answer, so nothing waits):
   exactly one debit and one charge, and the charge's body returned;
2. DynamoDB cancelling the first debit (`TransactionConflict`: the server answers 503):
   the client resends and the payment is made once;
3. a payment the server refuses (400): the client raises after one request;
4. the specification (`helpers/specification.py`), when those pass: the client is the subject
   (`ClientSubject`), and `helpers/checker.py` sends it generated histories of payments, each call of
   `pay` a payment of its own (the client makes its key, so the checker cannot resend one: a call that
   ends without a final answer breaks *live*), against the notebook's server with one fault per call:
   a response lost (the server committed), DynamoDB answering the server's write with a conflict,
   throttling, a 500 or a transaction in progress (503), the provider down (503). Per wallet, the money
   debited, the money charged and the payments whose body the client returned must agree: a returned
   body means applied. A refusal (a 4xx raised as `requests.HTTPError`) is a final answer.
   Duplicates in flight (the 409s) are not generated: the server runs each request to its end, and a
   client's own copies never overlap; 09's scenarios and tests cover them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from ..dynamodb_errors import CONFLICT, ErrorResponses
from ..history import LOST, Fault
from ..http_faults import LostHttpResponses
from ..tables import read_balance
from .specified import Specification
from .verdict import Counterexample, Verdict, answer, counted, verdict

Pay = Callable[[str, dict, str], Any]

WALLET, AMOUNT, OPENED_WITH, API_KEY, OWNER = "exercise-09", 10, 1000, "sk_test_alice", "acct_alice"
HISTORIES = 20               # generated histories of payments through the reader's client
INJECTED = "lost responses, DynamoDB's failure answers and the provider down"


def open_wallet(wallets: Any, wallet_id: str, balance: int) -> None:
    """The exercise's wallet, owned by the account behind API_KEY (09 refuses a wallet that is not the caller's)."""
    wallets.put_item(Item={"pk": wallet_id, "balance": balance, "owner": OWNER})


def check_retrying_client(pay: Pay, *, url: str, faults: LostHttpResponses, wallets: Any, provider: Any,
                          schedules: int = 4, histories: int = HISTORIES) -> Verdict:
    """Does `pay(url, payment, api_key)` pay once under lost responses and 503s, and stop on a 400? A `Verdict`."""

    def payment() -> dict[str, Any]:
        return {"wallet": WALLET, "amount": AMOUNT}

    def debits() -> int:
        return (OPENED_WITH - read_balance(wallets, WALLET)) // AMOUNT

    def described(result: Any, charges_before: int) -> str:
        """What the client answered, the same on every run (a charge's body by its place, not its id)."""
        refused = getattr(result, "response", None)
        if isinstance(result, Exception) and getattr(refused, "status_code", None) is not None:
            try:
                body = refused.json()
            except ValueError:
                body = {}
            why = f"{body.get('error')}: {body.get('detail')}" if isinstance(body, dict) and body.get("error") else ""
            return (f"{type(result).__name__}, the server's {refused.status_code}"
                    + (f" ({textwrap.shorten(why, 90, placeholder=' ...')})" if why else ""))
        if isinstance(result, Exception):
            return f"{type(result).__name__}"
        made = [c.charge_id for c in provider.made[charges_before:]]
        if isinstance(result, dict) and result.get("id") in made:
            return f"the body of charge {made.index(result['id']) + 1} of the {len(made)} it made"
        if isinstance(result, dict) and result.get("id") in [c.charge_id for c in provider.made[:charges_before]]:
            return ("the body of an earlier payment's charge: the server replayed the answer saved under that key "
                    "-- each payment needs a key of its own, made once (the same payment content is not the same "
                    "payment)")
        return textwrap.shorten(repr(result), 80, placeholder=" ...")

    def paid_once(result: Any, charges_before: int) -> bool:
        charges = provider.charges - charges_before
        return (debits() == 1 and charges == 1 and isinstance(result, dict)
                and result.get("id") == provider.made[-1].charge_id)

    def paid_once_under(arm: Callable[[], Any], story: Callable[[], str]) -> None:
        """One payment with `arm()`'s faults on (it returns what takes them off): made once, or `story()` tells."""
        open_wallet(wallets, WALLET, OPENED_WITH)
        before = provider.charges
        disarm = arm()
        try:
            result = answer(lambda: pay(url, payment(), API_KEY))
            told = story()                                   # before the faults are off: it may read them
        finally:
            disarm()
        if not paid_once(result, before):
            said = described(result, before)
            hint = (" A 400 says the request itself is wrong: look at its Idempotency-Key header (one per payment, "
                    'sent as a quoted String: Idempotency-Key: "<key>").' if "server's 400" in said else "")
            raise Counterexample(
                f"{told}: the wallet was debited {counted(debits(), 'time')} and the provider charged "
                f"{counted(provider.charges - before, 'time')}, your client answered {said}; expected one debit, one "
                f"charge and the 201's body.{hint}")

    def lost_responses() -> None:
        for seed in range(schedules):
            def lose(seed: int = seed) -> Callable[[], None]:
                faults.restart(p=0.5, seed=seed, at=[0], how="close")
                return faults.restart

            def story(seed: int = seed) -> str:
                return (f"one payment of {AMOUNT}, responses of requests {list(faults.lost)} lost "
                        f"(seed {seed}; {counted(faults.sent, 'request')} sent)")

            paid_once_under(lose, story)

    def conflict() -> None:
        faults.restart()                                      # no response lost
        paid_once_under(lambda: ErrorResponses(at={0: CONFLICT}).install(wallets).uninstall,
                        lambda: "DynamoDB cancelled the first debit (TransactionConflict), the server answered 503 "
                                f"with Retry-After, and your client sent {counted(faults.sent, 'request')}")

    def refused() -> None:
        open_wallet(wallets, WALLET, OPENED_WITH)
        before = provider.charges
        faults.restart()
        result = answer(lambda: pay(url, {"wallet": WALLET, "amount": 0}, API_KEY))
        if not isinstance(result, Exception) or faults.sent != 1 or provider.charges != before:
            raise Counterexample(
                "a payment of 0 is refused with a 400 (nothing to retry): your client sent "
                f"{counted(faults.sent, 'request')} "
                f"and answered {described(result, before)}; expected one request and an exception.")

    held = Specification(lambda: client_held(pay, histories=histories), injected=INJECTED,
                         within=("a key of its own per payment",))
    return verdict(
        [lost_responses, conflict, refused, held],
        passed=lambda: f"{schedules} lost-response schedules, a 503 from a cancelled debit and a refused payment all "
                       f"handled: each payment made once. {held.passed()}",
    )


# --- issue 23: the client as the subject, held to the specification ---------------------------------------------

def client_held(pay: Pay, *, histories: int = HISTORIES) -> Any:
    """`pay(url, payment, api_key)` against notebook 09's server (read from its module globals: `server`, `lost`,
    `wallets`, `records`, `open_account_wallet`, `db`, `provider`), held to the specification over `histories`
    generated histories: a `helpers.checker.Verdict`."""
    from ..checker import check_handler

    return check_handler(ClientSubject(pay), histories=histories, steps=4, name="your client", keys_reused=False)


def ClientSubject(pay: Pay) -> Any:  # noqa: N802 - made like a class, on first use (the checker brings hypothesis)
    """A `helpers.subjects.Subject` whose requests are calls of the reader's client (see the module's docstring)."""
    import json

    import requests

    from ..subjects import HttpSubject

    class _ClientSubject(HttpSubject):
        faults = ("lost", "answer", "in progress", "provider down")
        interleaves, one_call_per_key = False, True

        def __init__(self, namespace: dict[str, Any]) -> None:
            missing = [n for n in ("server", "lost", "wallets", "records", "open_account_wallet", "db", "provider",
                                   "LEASE_SECONDS", "RETENTION_SECONDS") if n not in namespace]
            if missing:
                raise ValueError(f"the client's module has no {', '.join(missing)}: run notebook 09's cells first")
            super().__init__(namespace, name="your client")
            self.handler = pay

        def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Any, caller: str) -> Any:
            try:
                body = pay(self.ns["server"].url, dict(payload), self.CALLERS[caller])
            except requests.HTTPError as error:                 # the server's answer, raised: final if a 4xx
                return {"status": error.response.status_code, "body": error.response.text}
            return {"status": 201, "body": json.dumps(body, sort_keys=True)}

        def fired(self, fault: Fault | None) -> bool:
            return fault is not None and fault.family == LOST or super().fired(fault)   # an HTTP answer lost

        def arm(self, fault: Fault | None) -> None:
            lost_http = fault is not None and fault.family == LOST
            super().arm(None if lost_http else fault)          # DynamoDB's answers and the provider, on the server
            if lost_http:
                self.ns["lost"].restart(at=[fault.n], how="close")   # the server commits, the connection closes
            else:
                self.ns["lost"].restart()

    return _ClientSubject(getattr(pay, "__globals__", {}))
