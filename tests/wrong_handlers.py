"""A catalogue of deliberately wrong handlers: the checker's own test (issue 33, step 4).

Each entry is a mistake a practitioner makes, built from the lessons' own code: one of a notebook's functions
swapped for a wrong one (`helpers.lessons.swapped`, put back when the entry's block ends), a wrapper around a
lesson's handler, or -- for the debit functions, the consumer and the record writes -- a wrong function written
in the lesson's style and handed to the subject the collection checks that shape with. No notebook is edited.

    for wrong in CATALOGUE:
        with wrong.build() as (subject, options):
            verdict = check_handler(subject, **options)    # must break: verdict.broken is not None

`CONTROLS` are the same constructions with nothing wrong in them: each must hold, or a refusal in the catalogue
could come from the construction rather than from the mistake. `lacks` names the dimension today's checker is
missing for an entry it does not refuse (tests/test_checker_score.py marks those xfail, strict).

The notebooks' namespaces are loaded once per process (`namespace`); `close()` stops 09's server.
"""

from __future__ import annotations

import contextlib
import io
import json
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from helpers.lessons import display_settings_kept, swapped
from helpers.validation import KEY_SEPARATOR

from notebook_code import lesson

SAVED, DEBIT, HTTP, POSTGRES, CONSUMER, RECORD = "saved response", "debit", "HTTP", "Postgres", "consumer", "record"
KINDS = (SAVED, DEBIT, HTTP, POSTGRES, CONSUMER, RECORD)

NB06, NB05, NB07, NB09, NB10 = ("06_saved_responses.ipynb", "05_remembering_every_request.ipynb",
                                "07_event_sources.ipynb", "09_over_http.ipynb", "10_postgres_shaped.ipynb")
NB01, NB02 = "solutions/01_fixed_value_updates_solution.ipynb", "solutions/02_conditional_creates_solution.ipynb"

Built = contextlib.AbstractContextManager[tuple[Any, dict[str, Any]]]


@dataclass(frozen=True)
class Wrong:
    """One wrong handler: `build()` is a block that yields (what check_handler takes, its options)."""

    name: str
    kind: str
    mistake: str
    build: Callable[[], Built]
    lacks: str | None = None      # the dimension today's checker lacks to refuse it: None if it must be refused
    histories: int = 100          # the budget it is refused within
    lacks_on: dict[str, str] | None = None   # backend -> the dimension it lacks there only


_LOADED: dict[str, dict[str, Any]] = {}


def namespace(notebook: str) -> dict[str, Any]:
    """`notebook`'s `imports` and `lesson` cells, run once per process (a check swaps and puts back)."""
    if notebook not in _LOADED:
        _LOADED[notebook] = lesson(notebook)
    return _LOADED[notebook]


def close() -> None:
    """Stop what a loaded lesson started: 09's HTTP server."""
    if NB09 in _LOADED:
        _LOADED.pop(NB09)["server"].stop()


class InNamespace:
    """`function` as a handler whose surroundings (`db`, `wallets`, `provider`, `RETENTION_SECONDS`...) are the
    lesson's: the checker reads them from `__globals__`, and the function itself runs as written here."""

    def __init__(self, function: Callable[..., Any], g: dict[str, Any], name: str) -> None:
        self.function, self.__globals__, self.__name__ = function, g, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def rebound(function: Callable[..., Any], g: dict[str, Any]) -> Callable[..., Any]:
    """A lesson's own function, running with the module globals `g` (a copy of its namespace, one value changed)."""
    return types.FunctionType(function.__code__, g, function.__name__, function.__defaults__, function.__closure__)


def _code(error: ClientError) -> str:
    return error.response["Error"]["Code"]


# --- 06: the saved-response handler, one of its functions swapped ------------------------------------------------

@contextlib.contextmanager
def _06(name: str, **swaps: Callable[[dict[str, Any]], Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """06's `pay` with each function in `swaps` replaced by `make(nb)`, for the block."""
    nb = namespace(NB06)
    with swapped(nb, **{function: make(nb) for function, make in swaps.items()}):
        yield nb["pay"], {"name": name}


@contextlib.contextmanager
def _06_wrapped(name: str, make: Callable[[dict[str, Any]], Callable[..., Any]]) -> Iterator[tuple[Any, dict]]:
    """A handler around 06's (or instead of it), with 06's surroundings."""
    nb = namespace(NB06)
    yield InNamespace(make(nb), nb, name), {"name": name}


def claim_with(nb: dict[str, Any], condition: str, values: Callable[[int, int, str], dict[str, Any]],
               retention: int | None = None) -> Callable[..., Any]:
    """06's claim with another condition (and `retention` seconds for the record's expiry, if given)."""
    def claim(key, payload, lease_token):
        t, t_ms, fp = nb["now"](), nb["now_ms"](), nb["fingerprint"](payload)
        kept = nb["RETENTION_SECONDS"] if retention is None else retention
        names = {"ExpressionAttributeNames": {"#status": "status"}} if "#status" in condition else {}
        try:
            item = {"pk": key, "status": "IN_PROGRESS", "lease_token": lease_token, "started_at": t,
                    "lease_expires_at": t_ms + nb["LEASE_SECONDS"] * 1000, "expires_at": t + kept,
                    "payload_fingerprint": fp}
            nb["with_resends"](lambda: nb["records"].put_item(
                Item=item, ConditionExpression=condition, ExpressionAttributeValues=values(t, t_ms, fp),
                ReturnValuesOnConditionCheckFailure="ALL_OLD", **names))
            return item                           # the record ours: pay compares its lease token with its own
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            return nb["as_python"](error.response["Item"])
    return claim


def _claim_read_then_put(nb):
    """06's claim as check-then-act: the record read, and if none is there, put with no condition."""
    def claim(key, payload, lease_token):
        found = nb["records"].get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if found is not None and not (found["status"] == "COMPLETED" and found["expires_at"] < nb["now"]()):
            if (found["status"] == "IN_PROGRESS" and found["lease_expires_at"] < nb["now_ms"]()
                    and found["payload_fingerprint"] == nb["fingerprint"](payload)):
                return nb["take_over"](key, found, lease_token)    # as 06 does: finish its payment
            return found
        t, t_ms = nb["now"](), nb["now_ms"]()
        item = {"pk": key, "status": "IN_PROGRESS", "lease_token": lease_token, "started_at": t,
                "lease_expires_at": t_ms + nb["LEASE_SECONDS"] * 1000, "expires_at": t + nb["RETENTION_SECONDS"],
                "payload_fingerprint": nb["fingerprint"](payload)}
        nb["with_resends"](lambda: nb["records"].put_item(Item=item))
        return item
    return claim


def _claim_any_payload(nb):
    return claim_with(nb, "attribute_not_exists(pk) OR expires_at < :now OR "
                          "(#status = :in_progress AND lease_expires_at < :now_ms)",
                      lambda t, t_ms, fp: {":now": t, ":now_ms": t_ms, ":in_progress": "IN_PROGRESS"})


def _claim_no_takeover(nb):
    return claim_with(nb, "attribute_not_exists(pk) OR expires_at < :now", lambda t, t_ms, fp: {":now": t})


def _complete_unfenced(nb):
    def complete(key, lease_token, response):
        nb["with_resends"](lambda: nb["records"].update_item(
            Key={"pk": key}, UpdateExpression="SET #status = :completed, #response = :response "
                                              "REMOVE lease_expires_at",
            ExpressionAttributeNames={"#status": "status", "#response": "response"},
            ExpressionAttributeValues={":completed": "COMPLETED", ":response": json.dumps(response)}))
        return True
    return complete


def _complete_hiding_errors(nb):
    original = nb["complete"]

    def complete(key, lease_token, response):
        try:
            original(key, lease_token, response)
        except Exception:   # noqa: BLE001 - the mistake: a failed save reported as saved
            pass
        return True
    return complete


def _answer_from_any_payload(nb):
    def answer_from(record, payload):
        if record["status"] == "COMPLETED":
            return json.loads(record["response"])
        return nb["IN_PROGRESS"]
    return answer_from


def _answer_from_rerendered(nb):
    original = nb["answer_from"]

    def answer_from(record, payload):
        answer = original(record, payload)
        if record["status"] == "COMPLETED" and 200 <= answer["status"] < 300:   # rebuilt, not the bytes saved
            return {"status": answer["status"], "body": json.dumps(json.loads(answer["body"]), separators=(",", ":"))}
        return answer
    return answer_from


def _debit_every_cancellation(nb):
    original = nb["debit"]

    def debit(key, lease_token, wallet_id, amount):
        try:
            return original(key, lease_token, wallet_id, amount)
        except ClientError as error:
            if _code(error) == "TransactionCanceledException":
                return False                  # the mistake: a conflict read as "already debited"
            raise
    return debit


def _debit_two_writes(nb):
    def debit(key, lease_token, wallet_id, amount):
        try:
            nb["with_resends"](lambda: nb["records"].update_item(    # the progress first, fenced on the lease
                Key={"pk": key}, UpdateExpression="SET debited = :yes",
                ConditionExpression="lease_token = :mine AND attribute_not_exists(debited)",
                ExpressionAttributeValues={":yes": True, ":mine": lease_token}))
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            return False
        nb["with_resends"](lambda: nb["wallets"].update_item(      # the debit: a second write, not in a transaction
            Key={"pk": wallet_id}, UpdateExpression="SET balance = balance - :amount",
            ConditionExpression="attribute_exists(balance)", ExpressionAttributeValues={":amount": amount}))
        return True
    return debit


def _end_lease_deleting(nb):
    def end_lease(key, lease_token):
        try:
            nb["records"].delete_item(Key={"pk": key}, ConditionExpression="lease_token = :mine",
                                      ExpressionAttributeValues={":mine": lease_token})
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
    return end_lease


def _do_work(nb, *, debit: bool = True, provider_key: Callable[[str, str], str] | None = None,
             pending: bool = False):
    """06's do_work, with its debit left out, another provider key, or a 201 when the charge failed."""
    def do_work(key, payload, invocation, lease_token, hook, started_at):
        if debit:
            try:
                nb["debit"](key, lease_token, payload["wallet"], payload["amount"])
            except (nb["WalletNotFound"], nb["InsufficientFunds"]) as error:
                return {"status": 404 if isinstance(error, nb["WalletNotFound"]) else 402,
                        "body": json.dumps({"error": str(error)})}
        hook("debited")
        if not nb["set_lease"](key, lease_token, nb["now_ms"]() + nb["LEASE_SECONDS"] * 1000):
            raise nb["LeaseLost"](key)
        try:
            charge_id = nb["provider"].charge(payload["wallet"], payload["amount"],
                                              idempotency_key=(provider_key or (lambda k, i: f"{k}@{started_at}"))(
                                                  key, invocation)).charge_id
        except ConnectionError:
            if not pending:
                raise
            charge_id = "pending"         # the mistake: "we will charge later" -- and nothing ever does
        hook("charged")
        body = {"charge": charge_id, "amount": payload["amount"], "served_by": invocation}
        return {"status": 201, "body": json.dumps(body)}
    return do_work


def _refuse_everything(nb):
    def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
        return {"status": 400, "body": json.dumps({"error": "payments are not accepted"})}
    return pay


def _refuse_over_5(nb):
    def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
        if payload["amount"] > 5:           # a limit the design never declares (no MAX_AMOUNT)
            return {"status": 400, "body": json.dumps({"error": "amount too large"})}
        return nb["pay"](key, payload, invocation, hook=hook, caller=caller)
    return pay


def _always_500(nb):
    def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
        nb["pay"](key, payload, invocation, hook=hook, caller=caller)
        return {"status": 500, "body": json.dumps({"error": "internal error"})}
    return pay


def _wallet_first(nb):
    def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
        item = nb["wallets"].get_item(Key={"pk": payload["wallet"]}, ConsistentRead=True).get("Item", {})
        if "balance" not in item:                 # checked before the saved answer is looked up
            raise nb["WalletNotFound"](payload["wallet"])
        return nb["pay"](key, payload, invocation, hook=hook, caller=caller)
    return pay


def _wrong_reason(nb):
    def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
        item = nb["wallets"].get_item(Key={"pk": payload["wallet"]}, ConsistentRead=True).get("Item", {})
        if item.get("balance", 0) < payload["amount"]:
            raise nb["WalletNotFound"](payload["wallet"])    # too little money, answered "no such wallet"
        return nb["pay"](key, payload, invocation, hook=hook, caller=caller)
    return pay


def _unscoped(nb):
    def check_request(key, payload, invocation, caller):
        nb["check_payment"](key, payload, invocation, caller)
        return key                                 # the mistake: every caller's key in one space
    return check_request


@contextlib.contextmanager
def _06_retention(name: str, seconds: int) -> Iterator[tuple[Any, dict[str, Any]]]:
    """06's claim and completion keeping keys `seconds`, while the module still declares its 24 h: the checker
    reads RETENTION_SECONDS from the module when the subject is made, and finds 24 h there."""
    nb = namespace(NB06)
    short = {**nb, "RETENTION_SECONDS": seconds}
    swaps = {"claim": rebound(nb["claim"], short), "complete": rebound(nb["complete"], short)}
    with swapped(nb, **swaps):
        assert nb["RETENTION_SECONDS"] == 24 * 3600
        yield nb["pay"], {"name": name}


SAVED_RESPONSE = [
    Wrong("06 claim without the fingerprint", SAVED, "The takeover of an expired lease does not check that the "
          "request carries the same payload, so a crashed payment's key can be taken over for another one.",
          lambda: _06("06 claim without the fingerprint", claim=_claim_any_payload), histories=200),
    Wrong("06 claim never taken over", SAVED, "The claim's condition leaves out the expired lease, so a crashed "
          "attempt blocks its key until the retention window ends.",
          lambda: _06("06 claim never taken over", claim=_claim_no_takeover)),
    Wrong("06 complete not fenced", SAVED, "The response is saved with no condition on the lease token, so a "
          "stalled attempt overwrites the answer of the one that took its key over.",
          lambda: _06("06 complete not fenced", complete=_complete_unfenced), histories=200),
    Wrong("06 complete hiding errors", SAVED, "A failed save of the response is reported as saved.",
          lambda: _06("06 complete hiding errors", complete=_complete_hiding_errors), histories=200),
    Wrong("06 answer_from without the fingerprint", SAVED, "A saved response is replayed to any request under "
          "the key, whatever its payload.",
          lambda: _06("06 answer_from without the fingerprint", answer_from=_answer_from_any_payload)),
    Wrong("06 replay re-rendered", SAVED, "The replay is rebuilt from the saved response instead of sent as its "
          "saved bytes, so it differs from the first answer.",
          lambda: _06("06 replay re-rendered", answer_from=_answer_from_rerendered)),
    Wrong("06 claim read, then put", SAVED, "The claim reads the record and, finding none, puts its own with no "
          "condition: a copy that arrives between the read and the put claims the key too, and both pay (only an "
          "interleaving at a DynamoDB call finds it).",
          lambda: _06("06 claim read, then put", claim=_claim_read_then_put)),
    Wrong("06 every cancellation already debited", SAVED, "Any cancelled debit transaction -- a conflict, "
          "throttling -- is read as 'already debited', so a debit that never happened is answered paid.",
          lambda: _06("06 every cancellation already debited", debit=_debit_every_cancellation),
          histories=300),     # a fault that lasts through with_resends' attempts, on the debit's transaction
    Wrong("06 progress and debit in two writes", SAVED, "The record's 'debited' is written, then the balance, in two "
          "writes: a failure between them leaves a payment marked debited with no debit, which the resend takes as "
          "done.", lambda: _06("06 progress and debit in two writes", debit=_debit_two_writes)),
    Wrong("06 end_lease deleting the record", SAVED, "After an error the record is deleted, fingerprint and all, "
          "so the key is free for another payload while the first one's debit stands.",
          lambda: _06("06 end_lease deleting the record", end_lease=_end_lease_deleting), histories=200),
    Wrong("06 201 before the charge", SAVED, "When the provider is down the handler answers 201 with the charge "
          "'pending', meaning to charge later -- and nothing ever does.",
          lambda: _06("06 201 before the charge", do_work=lambda nb: _do_work(nb, pending=True))),
    Wrong("06 success without a debit", SAVED, "The work charges the card and answers 201, but never debits the "
          "wallet.", lambda: _06("06 success without a debit", do_work=lambda nb: _do_work(nb, debit=False))),
    Wrong("06 invocation as the provider key", SAVED, "The provider's idempotency key is the invocation ID, which "
          "two payments can share and a retry does not.",
          lambda: _06("06 invocation as the provider key",
                      do_work=lambda nb: _do_work(nb, provider_key=lambda key, invocation: invocation))),
    Wrong("06 a fresh provider key per attempt", SAVED, "Each attempt charges with a new provider key, so a retry "
          "after a crash past the charge charges the card again.",
          lambda: _06("06 a fresh provider key per attempt",
                      do_work=lambda nb: _do_work(nb, provider_key=lambda key, inv: f"{key}#{uuid.uuid4().hex}")),
          histories=200),
    Wrong("06 keys not scoped to the caller", SAVED, "The record's key is the caller's key alone, so two callers "
          "using the same key share one record.",
          lambda: _06("06 keys not scoped to the caller", check_request=_unscoped)),
    Wrong("06 refuses everything", SAVED, "A handler that answers 400 to every request: it never pays, so it never "
          "pays twice.", lambda: _06_wrapped("06 refuses everything", _refuse_everything)),
    Wrong("06 refuses amounts above 5", SAVED, "A limit nobody declared: every valid payment above 5 is refused.",
          lambda: _06_wrapped("06 refuses amounts above 5", _refuse_over_5)),
    Wrong("06 debits and answers 500", SAVED, "The payment goes through, and every answer is a 500.",
          lambda: _06_wrapped("06 debits and answers 500", _always_500)),
    Wrong("06 wallet checked before the record", SAVED, "The wallet is looked up before the saved answer, so a "
          "retry after the wallet was closed is told WalletNotFound ('nothing written') for a payment that went "
          "through.", lambda: _06_wrapped("06 wallet checked before the record", _wallet_first), histories=500),
    Wrong("06 WalletNotFound for too little money", SAVED, "A wallet that cannot pay is answered 'no such wallet': "
          "a refusal, but not for its reason.", lambda: _06_wrapped("06 WalletNotFound for too little money",
                                                                     _wrong_reason)),
    Wrong("06 record kept 60 s, 24 h declared", SAVED, "The record expires 60 s after its answer while the module "
          "declares RETENTION_SECONDS = 24 h.",
          lambda: _06_retention("06 record kept 60 s, 24 h declared", 60)),
    Wrong("06 record kept 1 h, 24 h declared", SAVED, "The saved response expires after an hour while the module "
          "declares 24 h.", lambda: _06_retention("06 record kept 1 h, 24 h declared", 3600), histories=300),
]


# --- 03-05/08's debit functions (DebitSubject): a wallet item (pk, sk="wallet"), markers beside it -------------

@contextlib.contextmanager
def _debit(debit: Callable[[dict[str, Any]], Callable[..., Any]], name: str) -> Iterator[tuple[Any, dict]]:
    """`debit(nb)` on notebook 05's table, as a DebitSubject; one payload per request ID (the design's promise:
    05's marker keeps no payload, and gives *bound* up on purpose)."""
    from helpers.subjects import DebitSubject

    nb = namespace(NB05)
    subject = DebitSubject(debit(nb), name=name, table=nb["table"], db=nb["db"],
                           key=lambda wallet: {"pk": wallet, "sk": "wallet"})
    yield subject, {"keys_reused": False}


def _wallet_key(wallet_id: str) -> dict[str, str]:
    return {"pk": wallet_id, "sk": "wallet"}


def _debit_last_id_unconditional(nb):
    def debit(table, wallet_id, amount, request_id):
        nb["check_debit"](wallet_id, amount, request_id)
        table.update_item(Key=_wallet_key(wallet_id),
                          UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
                          ExpressionAttributeValues={":amount": amount, ":rid": request_id})   # stamped, not checked
        return "applied"
    return debit


def _ledger(nb, *, marker_condition: str = "attribute_not_exists(sk)", together: bool = True,
            swallow: bool = False, any_cancellation_missing: bool = False, lifetime: int | None = None):
    """05's debit_ledger with one thing changed: the marker's condition, the marker outside the transaction, every
    ClientError answered 'already applied', every cancellation answered WalletNotFound, or a marker lifetime."""
    def debit(table, wallet_id, amount, request_id):
        nb["check_debit"](wallet_id, amount, request_id)
        now = int(nb["db"].clock.now())
        expires = now + (nb["MARKER_LIFETIME"] if lifetime is None else lifetime)
        values = {":now": now} if ":now" in marker_condition else {}
        update = {"TableName": table.name, "Key": _wallet_key(wallet_id),
                  "UpdateExpression": "SET balance = balance - :amount",
                  "ConditionExpression": "attribute_exists(balance)", "ExpressionAttributeValues": {":amount": amount}}
        put = {"TableName": table.name, "Item": {"pk": wallet_id, "sk": "req#" + request_id, "amount": amount,
                                                 "expires_at": expires},
               "ConditionExpression": marker_condition, **({"ExpressionAttributeValues": values} if values else {})}
        try:
            if not together:                      # the debit, then the marker: two writes
                table.meta.client.update_item(**update)
                table.meta.client.put_item(**put)
                return "applied"
            table.meta.client.transact_write_items(TransactItems=[{"Update": update}, {"Put": put}])
            return "applied"
        except ClientError as error:
            if swallow:
                return "already applied"           # the mistake: any error read as a duplicate
            if _code(error) == "ConditionalCheckFailedException":
                return "already applied"
            if _code(error) != "TransactionCanceledException":
                raise
            reasons = [reason["Code"] for reason in error.response["CancellationReasons"]]
            if any_cancellation_missing:
                raise nb["WalletNotFound"](wallet_id) from None    # a conflict answered "no such wallet"
            if reasons == ["None", "ConditionalCheckFailed"]:
                return "already applied"
            if reasons[0] == "ConditionalCheckFailed":
                raise nb["WalletNotFound"](wallet_id) from None
            raise
    return debit


def _check_then_act(nb):
    def debit(table, wallet_id, amount, request_id):
        nb["check_debit"](wallet_id, amount, request_id)
        marker = {"pk": wallet_id, "sk": "req#" + request_id}
        if "Item" in table.get_item(Key=marker, ConsistentRead=True):
            return "already applied"
        table.update_item(Key=_wallet_key(wallet_id), UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance)",
                          ExpressionAttributeValues={":amount": amount})
        table.put_item(Item={**marker, "amount": amount})
        return "applied"
    return debit


def _read_then_transact(nb):
    """The marker read, then the debit and the marker written in one transaction -- with no condition on the
    marker: a resend after a lost answer finds it, but a copy that runs between the read and the write does not."""
    def debit(table, wallet_id, amount, request_id):
        nb["check_debit"](wallet_id, amount, request_id)
        marker = {"pk": wallet_id, "sk": "req#" + request_id}
        if "Item" in table.get_item(Key=marker, ConsistentRead=True):
            return "already applied"
        table.meta.client.transact_write_items(TransactItems=[
            {"Update": {"TableName": table.name, "Key": _wallet_key(wallet_id),
                        "UpdateExpression": "SET balance = balance - :amount",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":amount": amount}}},
            {"Put": {"TableName": table.name, "Item": {**marker, "amount": amount}}}])
        return "applied"
    return debit


DEBITS = [
    Wrong("05 debit_naive", DEBIT, "Every call debits again: a resend after a lost answer is a second payment.",
          lambda: _debit(lambda nb: nb["debit_naive"], "05 debit_naive")),
    Wrong("last_request_id stamped, not checked", DEBIT, "The request ID is written with the debit, but no "
          "condition compares it: a resend debits again.",
          lambda: _debit(_debit_last_id_unconditional, "last_request_id stamped, not checked")),
    Wrong("ledger marker outside the transaction", DEBIT, "The debit and its marker are two writes: a resend after "
          "the debit's lost answer debits again.",
          lambda: _debit(lambda nb: _ledger(nb, together=False), "ledger marker outside the transaction")),
    Wrong("ledger marker attribute_exists", DEBIT, "The marker's condition is attribute_exists instead of "
          "attribute_not_exists: every new request is cancelled and read as 'already applied'.",
          lambda: _debit(lambda nb: _ledger(nb, marker_condition="attribute_exists(sk)"),
                         "ledger marker attribute_exists")),
    Wrong("ledger swallowing every ClientError", DEBIT, "Any ClientError -- throttling, a conflict, a 500 -- is "
          "answered 'already applied'.",
          lambda: _debit(lambda nb: _ledger(nb, swallow=True), "ledger swallowing every ClientError")),
    Wrong("ledger cancellations as WalletNotFound", DEBIT, "Every cancelled transaction is answered 'no such "
          "wallet', a refusal, for a wallet that exists and a request that can be paid.",
          lambda: _debit(lambda nb: _ledger(nb, any_cancellation_missing=True),
                         "ledger cancellations as WalletNotFound")),
    Wrong("ledger marker kept 60 s", DEBIT, "The marker may be replaced once it is 60 s old: a resend after a minute "
          "debits again.", lambda: _debit(lambda nb: _ledger(nb, lifetime=60,
                                                             marker_condition="attribute_not_exists(sk) OR "
                                                                              "expires_at < :now"),
                                          "ledger marker kept 60 s")),
    Wrong("marker read, then debit", DEBIT, "The marker is read, then the debit and the marker written: check, then "
          "act, so a resend after the debit's lost answer finds no marker.",
          lambda: _debit(_check_then_act, "marker read, then debit")),
    Wrong("marker read, then one unconditioned transaction", DEBIT, "The marker is read first, then the debit and "
          "the marker are written together with no condition on the marker: a copy that arrives between the read "
          "and the write debits again (only an interleaving at a DynamoDB call finds it).",
          lambda: _debit(_read_then_transact, "marker read, then one unconditioned transaction")),
    Wrong("05 debit_token", DEBIT, "A ClientRequestToken as the only memory: DynamoDB keeps it ten minutes, a resend "
          "after that debits again.", lambda: _debit(lambda nb: nb["debit_token"], "05 debit_token"),
          lacks_on={"dynamodb-local": "a wait at the ClientRequestToken's 10-minute edge: on DynamoDB Local (which "
                                      "keeps tokens, on the wall clock) every resend falls inside the window; moto "
                                      "ignores tokens, so there any resend debits again"}),
]


# --- 07's consumer (ConsumerSubject: each request one delivery; the key the producer's operation ID) ------------

@contextlib.contextmanager
def _consumer(consume: Callable[[dict[str, Any], dict[str, Any]], Any], name: str) -> Iterator[tuple]:
    """`consume(nb, body)` -- one delivery of a message whose body carries the producer's operation ID (the caller's
    key), the wallet and the amount -- on 07's table, as test_specification_lessons.py checks 07's own consumer."""
    from helpers.subjects import DebitSubject

    nb = namespace(NB07)
    nb["new_wallet"]()                          # 07's table, from nothing

    def delivered(table, wallet, amount, operation_id):
        return consume(nb, {"producer": "shop", "operation_id": operation_id, "wallet": wallet, "amount": amount})

    subject = DebitSubject(delivered, name=name, table=nb["wallets"], db=nb["db"])
    subject.refused_in_keys = KEY_SEPARATOR     # 07 refuses it in an operation ID, by name (BadInput)
    yield subject, {"keys_reused": False}       # an operation ID carries one payment (07's marker: no payload)


def _every_cancellation_applied(nb, body):
    try:
        return nb["debit_by_operation"](body)
    except ClientError as error:
        if _code(error) == "TransactionCanceledException":
            return "already applied"            # the mistake: a conflict read as a duplicate
        raise


def _acknowledge_anyway(nb, body):
    try:
        return nb["debit_by_operation"](body)
    except Exception:   # noqa: BLE001 - the mistake: the message is deleted whatever happened
        return "failed, deleted"


CONSUMERS = [
    Wrong("07 debit_naive as the consumer", CONSUMER, "Every delivery debits again.",
          lambda: _consumer(lambda nb, body: nb["debit_naive"](body), "07 debit_naive")),
    Wrong("07 keyed by the MessageId", CONSUMER, "The marker's key is the delivery's own ID (SQS's MessageId), which "
          "a redelivery after a lost DeleteMessage or the producer's resend does not share.",
          lambda: _consumer(lambda nb, body: nb["debit_once"](body, key=uuid.uuid4().hex),
                            "07 keyed by the MessageId")),
    Wrong("07 every cancellation already applied", CONSUMER, "Any cancelled transaction is read as 'already "
          "applied', and the message deleted with no debit.",
          lambda: _consumer(_every_cancellation_applied, "07 every cancellation already applied"), histories=400),
    Wrong("07 message deleted on any error", CONSUMER, "The consumer catches every error and returns, so the message "
          "is deleted and the payment never made.",
          lambda: _consumer(_acknowledge_anyway, "07 message deleted on any error")),
]


# --- 09's endpoint over HTTP (HttpSubject), one of its functions swapped ----------------------------------------

@contextlib.contextmanager
def _09(name: str, **swaps: Callable[[dict[str, Any]], Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    from helpers.subjects import HttpSubject

    nb = namespace(NB09)
    with swapped(nb, **{function: make(nb) for function, make in swaps.items()}):
        yield HttpSubject(nb, name=name), {}


def _09_answer_from_any_request(nb):
    def answer_from(record, request):
        if record["status"] == "COMPLETED":
            return nb["replay"](record)
        return nb["problem"](409, "request_in_progress", "in progress", headers={"retry-after": "1"})
    return answer_from


def _09_fresh_provider_key(nb):
    def provider_key(record_key):
        return uuid.uuid4().hex                 # the mistake: a new provider key for every attempt
    return provider_key


def _09_rerendered(nb):
    def replay(record):
        body = json.loads(record["response_body"].value)
        return nb["json_response"](int(record["response_status"]), {**body, "replayed": True})
    return replay


def _09_unfinished_as_400(nb):
    def unfinished(error):
        return nb["problem"](400, "invalid_payment", f"{type(error).__name__}: the request was refused")
    return unfinished


ENDPOINTS = [
    Wrong("09 answer_from without the fingerprint", HTTP, "The saved response is replayed to any request under the "
          "key, whatever its body.", lambda: _09("09 answer_from without the fingerprint",
                                                 answer_from=_09_answer_from_any_request)),
    Wrong("09 a fresh provider key per attempt", HTTP, "The provider's key is made anew for every attempt, so a resend "
          "after a failure past the charge charges the card again.",
          lambda: _09("09 a fresh provider key per attempt", provider_key=_09_fresh_provider_key)),
    # (held over 200 random histories after 09's redesign, issue 43; found by the exhaustive phase, issue 44: the
    # attempt stalls past its lease before its debit, a copy takes over and charges, the first one wakes and charges
    # again under a key of its own)
    Wrong("09 replay re-rendered", HTTP, "The replay is rebuilt from the saved body (a field added), not sent as the "
          "saved bytes.", lambda: _09("09 replay re-rendered", replay=_09_rerendered)),
    Wrong("09 an unfinished payment answered 400", HTTP, "An error after the claim -- the debit may have been made -- "
          "is answered 400, which tells the client nothing was written and not to resend.",
          lambda: _09("09 an unfinished payment answered 400", unfinished=_09_unfinished_as_400)),
]


# --- 10's handler on Postgres and its outbox worker (OutboxSubject), one function swapped ------------------------

@contextlib.contextmanager
def _10(name: str, **swaps: Callable[[dict[str, Any]], Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    from helpers.subjects import OutboxSubject

    nb = namespace(NB10)
    with swapped(nb, **{function: make(nb) for function, make in swaps.items()}):
        yield OutboxSubject(nb, name=name), {}


def _10_outbox_outside(nb):
    def debit_and_enqueue(conn, user_id, key, payload, hook):
        with nb["pg"].admin() as other:       # the mistake: the outbox row committed on its own connection
            other.execute("INSERT INTO outbox (user_id, idempotency_key, wallet_id, amount) VALUES (%s, %s, %s, %s)",
                          (user_id, key, payload["wallet"], payload["amount"]))
        debited = conn.execute("UPDATE wallets SET balance = balance - %s WHERE wallet_id = %s",
                               (payload["amount"], payload["wallet"])).rowcount
        if not debited:
            raise nb["WalletNotFound"](payload["wallet"])
        hook("debited")
    return debit_and_enqueue


def _10_any_payload(nb):
    def answer_from(saved, payload):
        _, status, headers, body = saved
        return {"status": status, "headers": headers, "body": bytes(body)}
    return answer_from


def _10_fresh_worker_key(nb):
    def deliver_one(hook=lambda step: None):
        with nb["connect"]() as conn:
            conn.execute("BEGIN")
            row = nb["next_due"](conn)
            if row is None:
                conn.execute("COMMIT")
                return None
            outbox_id, wallet_id, amount, attempts = row
            try:
                charge = nb["provider"].charge(wallet_id, amount, idempotency_key=uuid.uuid4().hex)
            except Exception as error:   # noqa: BLE001 - as 10's worker: recorded, not raised
                outcome = nb["record_failure"](conn, outbox_id, attempts + 1, error)
            else:
                hook("charged")
                outcome = nb["record_delivery"](conn, outbox_id, charge)
            conn.execute("COMMIT")
            return outcome
    return deliver_one


def _10_claim_forgetting(nb):
    def claim(conn, user_id, key, payload, t):
        conn.execute("DELETE FROM idempotency WHERE user_id = %s AND idempotency_key = %s AND "
                     "response_status_code IS NOT NULL", (user_id, key))   # the mistake: a finished key forgotten
        conn.execute(
            "INSERT INTO idempotency (user_id, idempotency_key, payload_fingerprint, created_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (user_id, key, nb["fingerprint"](payload), t, t + nb["RETENTION_SECONDS"]))
    return claim


OUTBOXES = [
    Wrong("10 outbox row outside the transaction", POSTGRES, "The charge is enqueued on another connection, "
          "committed at once: a crash before the payment's COMMIT leaves a charge with no debit.",
          lambda: _10("10 outbox row outside the transaction", debit_and_enqueue=_10_outbox_outside)),
    Wrong("10 answer_from without the fingerprint", POSTGRES, "The saved response is replayed to any payload under "
          "the key.", lambda: _10("10 answer_from without the fingerprint", answer_from=_10_any_payload)),
    Wrong("10 a finished key forgotten", POSTGRES, "The claim deletes a key's row once it has a response, inside "
          "the retention window, so a resend pays again.",
          lambda: _10("10 a finished key forgotten", claim=_10_claim_forgetting)),
    Wrong("10 worker charging with a fresh key", POSTGRES, "The outbox worker charges with a new provider key for "
          "every attempt, so an attempt whose charge went through and whose record did not charges again.",
          lambda: _10("10 worker charging with a fresh key", deliver_one=_10_fresh_worker_key), histories=50),
    # refused since issue 44: the provider charging and its answer lost, on the worker's calls (catalogue:
    # "provider lost", drawn for OutboxSubject as a fault of the worker's)
]


# --- 01's status update and 02's sign-up (RecordSubject): writes that move no money ------------------------------

@contextlib.contextmanager
def _record(notebook: str, write: Callable[[dict[str, Any]], Callable[..., Any]], name: str) -> Iterator[tuple]:
    from helpers import fresh_table
    from helpers.exercises.lesson_01 import _Updates
    from helpers.exercises.lesson_02 import _SignUps

    nb = namespace(notebook)
    made = _Updates if notebook == NB01 else _SignUps
    yield made(write(nb), fresh_table(nb["db"], f"wrong-{made.__name__.lower()[1:]}"), name=name), {}


def _status_swallowing(nb):
    def update(table, order_id, status, seq):
        try:
            return nb["my_set_status"](table, order_id, status, seq)
        except Exception:   # noqa: BLE001 - the mistake: any error answered "applied"
            return "applied"
    return update


def _status_last_writer_wins(nb):
    def update(table, order_id, status, seq):
        table.update_item(Key={"pk": order_id}, UpdateExpression="SET #status = :status, seq = :seq",
                          ExpressionAttributeNames={"#status": "status"},
                          ExpressionAttributeValues={":status": status, ":seq": seq})
        return "applied"
    return update


def _status_own_retry_stale(nb):
    def update(table, order_id, status, seq):
        try:
            table.update_item(Key={"pk": order_id}, UpdateExpression="SET #status = :status, seq = :seq",
                              ConditionExpression="seq < :seq", ExpressionAttributeNames={"#status": "status"},
                              ExpressionAttributeValues={":status": status, ":seq": seq})
            return "applied"
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            raise nb["StaleUpdate"](f"refusing seq {seq}") from None   # its own retry too: "nothing written"
    return update


def _sign_up_overwriting(nb):
    def sign_up(table, username, email):
        table.put_item(Item={"pk": username, "email": email})
        return "created"
    return sign_up


def _sign_up_any_row_ours(nb):
    def sign_up(table, username, email):
        try:
            table.put_item(Item={"pk": username, "email": email}, ConditionExpression="attribute_not_exists(pk)")
            return "created"
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            return "already created"             # the mistake: someone else's row taken for our own retry
    return sign_up


RECORDS = [
    Wrong("01 status update swallowing errors", RECORD, "Any error of the update is answered 'applied'.",
          lambda: _record(NB01, _status_swallowing, "01 status update swallowing errors")),
    Wrong("01 status update, last writer wins", RECORD, "The update has no condition on seq, so a late retry of an "
          "older status overwrites a newer one.",
          lambda: _record(NB01, _status_last_writer_wins, "01 status update, last writer wins"),
          lacks="a model for record writes: RecordSubject holds each answer to the item read back at once "
                "(truthful, live), not to what the sequence of updates should leave"),
    Wrong("01 own retry refused as stale", RECORD, "A resend of an update that went through is refused as stale, "
          "'nothing written', though its own first attempt wrote it.",
          lambda: _record(NB01, _status_own_retry_stale, "01 own retry refused as stale"),
          lacks="refusals judged per operation: a record write's 'nothing written' is compared with the item "
                "before that one call, not with the operation's earlier attempts"),
    Wrong("02 sign-up overwriting", RECORD, "The sign-up puts the item unconditionally: someone else's username is "
          "overwritten and answered 'created'.",
          lambda: _record(NB02, _sign_up_overwriting, "02 sign-up overwriting"),
          lacks="a model for record writes: whose row it is (once, bound) is not tried for a RecordSubject; each "
                "'created' finds its own write when read back at once"),
    Wrong("02 sign-up taking any row as its own", RECORD, "A username already taken is answered 'already created', "
          "whoever's email the row holds.",
          lambda: _record(NB02, _sign_up_any_row_ours, "02 sign-up taking any row as its own")),
]


# --- issue 44: what the explorer finds at the reader's default budget --------------------------------------------
# Built on 06 as it was before issue 43 (tests/lessons_before/06_before_issue_43.json, its lesson cells), and on a
# sketch of issue 43's fenced design over it (tests/fenced_06.py): both stay as they are when 06 changes.

BEFORE_43 = NB06.replace(".ipynb", "") + " before issue 43"


def namespace_before_43() -> dict[str, Any]:
    """06's `imports` and `lesson` cells as they were at 16cb699 (its tables renamed), run once per process."""
    if BEFORE_43 not in _LOADED:
        from pathlib import Path

        saved = json.loads((Path(__file__).parent / "lessons_before" / "06_before_issue_43.json").read_text())
        ns: dict[str, Any] = {"__name__": f"lesson:{BEFORE_43}"}
        with contextlib.redirect_stdout(io.StringIO()), display_settings_kept():
            for cell in saved["cells"]:
                exec(compile(cell["source"], f"{BEFORE_43}[{cell['tag']}]", "exec"), ns)
        _LOADED[BEFORE_43] = ns
    return _LOADED[BEFORE_43]


@contextlib.contextmanager
def _before_43(name: str, **swaps: Callable[[dict[str, Any]], Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    nb = namespace_before_43()
    with swapped(nb, **{function: make(nb) for function, make in swaps.items()}):
        yield nb["pay"], {"name": name}


@contextlib.contextmanager
def _fenced(name: str, swaps: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
            **options: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The sketch of issue 43's design (tests/fenced_06.py) with `options`, and 06's functions in `swaps` replaced."""
    from fenced_06 import GRACE_SECONDS, make_pay

    nb = namespace_before_43()
    pay = make_pay(nb, **options)
    nb.update(recover_unfinished=pay.recover_unfinished, RECOVERY_GRACE_SECONDS=GRACE_SECONDS)
    try:
        with swapped(nb, **{function: make(nb) for function, make in (swaps or {}).items()}):
            yield InNamespace(pay, nb, name), {"name": name}
    finally:
        del nb["recover_unfinished"], nb["RECOVERY_GRACE_SECONDS"]


def _check_request_with(refuse: Callable[[dict[str, Any], str, dict[str, Any]], bool], limit: bool = True):
    from helpers import BadInput
    from helpers.payment_requests import check_payment

    def make(nb):
        def check_request(key, payload, invocation, caller):
            if isinstance(payload, dict) and refuse(nb, key, payload):
                raise BadInput(f"refused: {key!r} {payload!r}")
            return check_payment(key, payload, invocation, caller, max_amount=nb["MAX_AMOUNT"] if limit else None)
        return check_request
    return make


EXPLORED = [
    Wrong("06 before issue 43", SAVED, "A refused takeover frees the key while the stalled first attempt may still "
          "act: the caller resends once the wallet is open again and is paid, then the first attempt wakes and charges "
          "again.", lambda: _before_43("06 before issue 43")),
    Wrong("06 key freed after an error", SAVED, "After an error (the provider's answer lost after it charged) the "
          "record is deleted: the resend is a new payment, debited and charged again.",
          lambda: _fenced("06 key freed after an error", frees_on_error=True)),
    Wrong("06 overdraft guard read, then written", SAVED, "The balance is read and compared, then the debit written "
          "with no condition on it: two payments whose sum crosses the balance both pass.",
          lambda: _fenced("06 overdraft guard read, then written", read_guard=True)),
    Wrong("06 balance > :a", SAVED, "The guard refuses a payment of exactly the balance.",
          lambda: _fenced("06 balance > :a", guard="balance > :a")),
    Wrong("06 refuses exactly MAX_AMOUNT", SAVED, "The declared largest amount is itself refused.",
          lambda: _fenced("06 refuses exactly MAX_AMOUNT", {"check_request": _check_request_with(
              lambda nb, key, payload: payload.get("amount") == nb["MAX_AMOUNT"])})),
    Wrong("06 takes any amount", SAVED, "MAX_AMOUNT is declared but never checked: a payment over it goes through.",
          lambda: _fenced("06 takes any amount", {"check_request": _check_request_with(lambda nb, k, p: False,
                                                                                      limit=False)})),
    Wrong("06 refuses keys with separators", SAVED, "A key containing '#' or '@' (the separators the record's and the "
          "provider's keys are built with) is refused, though nothing makes it ambiguous.",
          lambda: _fenced("06 refuses keys with separators", {"check_request": _check_request_with(
              lambda nb, key, payload: "#" in str(key) or "@" in str(key))})),
    Wrong("06 debit not fenced on the lease", SAVED, "The record's progress is written after the debit, not in its "
          "transaction: a stalled attempt whose lease was taken still debits.",
          lambda: _fenced("06 debit not fenced on the lease", unfenced=True)),
    Wrong("06 unfinished record with a TTL", SAVED, "The record carries its TTL from the claim: TTL deletes an "
          "unfinished payment's record, and a resend pays again.",
          lambda: _fenced("06 unfinished record with a TTL", ttl_at_claim=True)),
    Wrong("06 recovery worker refunding", SAVED, "The recovery worker gives a stalled payment's debit back instead "
          "of finishing it, while the stalled attempt may already have charged.",
          lambda: _fenced("06 recovery worker refunding", refunds=True)),
    Wrong("06 refuses the least amount", SAVED, "An off-by-one minimum: an amount of 1 is refused as bad input.",
          lambda: _fenced("06 refuses the least amount", {"check_request": _check_request_with(
              lambda nb, key, payload: payload.get("amount") == 1)})),
    Wrong("06 compensating on a provider error", SAVED, "A provider error is answered by refunding the debit and "
          "freeing the key, but the provider may have charged before its answer was lost.",
          lambda: _fenced("06 compensating on a provider error", compensates=True)),
]


def _09_replay_without_headers(nb):
    def replay(record):
        headers = {"idempotent-replayed": "true"}      # the mistake: the saved headers left out
        return nb["Response"](record["response_body"].value, status_code=int(record["response_status"]),
                              headers=headers)
    return replay


ENDPOINTS.append(
    Wrong("09 replay without its headers", HTTP, "The replay sends the saved status and body, but not the saved "
          "headers: content-type and location are lost.",
          lambda: _09("09 replay without its headers", replay=_09_replay_without_headers)))


CATALOGUE = [*SAVED_RESPONSE, *DEBITS, *CONSUMERS, *ENDPOINTS, *OUTBOXES, *RECORDS, *EXPLORED]


# --- the same constructions with nothing wrong: each must hold (the refusals above are the mistakes') -----------

def _status_as_taught(nb):
    return nb["my_set_status"]


def _sign_up_as_taught(nb):
    return nb["my_sign_up"]


CONTROLS = [
    Wrong("06 pay", SAVED, "", lambda: _06("06 pay")),
    Wrong("06 fenced, a sketch of issue 43's design", SAVED, "", lambda: _fenced("06 fenced")),
    Wrong("06 fenced, replays marked Idempotent-Replayed", SAVED, "",
          lambda: _fenced("06 fenced, replays marked", mark_replays=True)),
    Wrong("05 debit_ledger", DEBIT, "", lambda: _debit(lambda nb: nb["debit_ledger"], "05 debit_ledger")),
    Wrong("05 debit_ledger as rewritten here", DEBIT, "", lambda: _debit(_ledger, "05 debit_ledger, rewritten")),
    Wrong("07 debit_by_operation", CONSUMER, "",
          lambda: _consumer(lambda nb, body: nb["debit_by_operation"](body), "07 debit_by_operation")),
    Wrong("09 POST /payments", HTTP, "", lambda: _09("09 POST /payments")),
    Wrong("10 pay", POSTGRES, "", lambda: _10("10 pay")),
    Wrong("01 my_set_status", RECORD, "", lambda: _record(NB01, _status_as_taught, "01 my_set_status")),
    Wrong("02 my_sign_up", RECORD, "", lambda: _record(NB02, _sign_up_as_taught, "02 my_sign_up")),
]
