"""A sketch of issue 43's design for 06's handler, built on 06's surroundings: the checker's control for it.

Until notebook 06 teaches it, this is what the checker's catalogue (tests/wrong_handlers.py) holds a fenced design
with: the payment's progress kept on its one record -- the debit's transaction carries an Update of the record
conditioned on `#status = IN_PROGRESS AND lease_token = :mine` (a stalled attempt whose lease was taken moves no
money); a fenced lease renewal before the provider call; a refusal (no wallet 404, too little 402) saved on the
record and replayed instead of freeing the key; `expires_at` written only on completion (an unfinished record has
no TTL attribute). `unfenced=True` leaves the record out of the debit's transaction (issue 43's mistake).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from helpers import InsufficientFunds, WalletNotFound, read_item

GRACE_SECONDS = 60          # the recovery worker leaves a payment alone until its lease ended this long ago


class LeaseLost(Exception):
    """Our lease was taken over: this attempt moves no money and calls no provider from now on."""


def make_pay(nb: dict[str, Any], *, unfenced: bool = False, frees_key: bool = False, guard: str = "balance >= :a",
             read_guard: bool = False, ttl_at_claim: bool = False, frees_on_error: bool = False,
             compensates: bool = False, mark_replays: bool = False, refunds: bool = False) -> Callable[..., Any]:
    """A 06-shaped `pay` over `nb` (06's namespace before issue 43: its records, wallets, provider and helpers).

    Each option is a mistake (tests/wrong_handlers.py), but `mark_replays` (a replay carries
    `Idempotent-Replayed: true`, as 09 and Stripe mark theirs): `unfenced` debit; `frees_key` on a refusal;
    `guard`, the wallet's condition; `read_guard`, the balance read first and the write unconditioned;
    `ttl_at_claim`, an unfinished record with a TTL attribute; `frees_on_error`, the record deleted after an error;
    `compensates`, a provider error answered by refunding the debit and freeing the key; `refunds`, a recovery
    worker (`pay.recover_unfinished`) that gives the debit back instead of finishing the payment."""

    def resends(call: Callable[[], Any]) -> Any:
        return nb["with_resends"](call)

    def claim(key: str, payload: dict[str, Any], token: str) -> dict[str, Any]:
        t, t_ms = nb["now"](), nb["now_ms"]()
        item = {"pk": key, "status": "IN_PROGRESS", "lease_token": token, "started_at": t,
                "lease_expires_at": t_ms + nb["LEASE_SECONDS"] * 1000,
                "payload_fingerprint": nb["fingerprint"](payload),
                "wallet": payload["wallet"], "amount": payload["amount"]}       # for the recovery worker
        if ttl_at_claim:
            item["expires_at"] = t + nb["RETENTION_SECONDS"]
        try:
            resends(lambda: nb["records"].put_item(
                Item=item, ConditionExpression="attribute_not_exists(pk) OR (expires_at < :now AND #status = :done)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":now": t, ":done": "COMPLETED"},
                ReturnValuesOnConditionCheckFailure="ALL_OLD"))
            return item
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            record = nb["as_python"](error.response["Item"])
        if (record["status"] == "IN_PROGRESS" and record["lease_expires_at"] < t_ms
                and record["payload_fingerprint"] == nb["fingerprint"](payload)):
            return nb["take_over"](key, record, token)
        return record

    def debit(key: str, token: str, wallet_id: str, amount: int) -> None:
        """The debit and the record's progress in one transaction, fenced on our lease."""
        progress = {"Update": {
            "TableName": nb["records"].name, "Key": {"pk": key}, "UpdateExpression": "SET debited = :yes",
            "ConditionExpression": "#status = :ip AND lease_token = :mine AND attribute_not_exists(debited)",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":yes": True, ":ip": "IN_PROGRESS", ":mine": token},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}
        if read_guard:
            found = nb["wallets"].get_item(Key={"pk": wallet_id}, ConsistentRead=True).get("Item")
            if found is None:
                raise WalletNotFound(wallet_id)
            if found["balance"] < amount:
                raise InsufficientFunds(wallet_id, amount, int(found["balance"]))
        wallet = {"Update": {
            "TableName": nb["wallets"].name, "Key": {"pk": wallet_id},
            "ConditionExpression": "attribute_exists(balance)" if read_guard else guard,
            "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": amount},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}

        if unfenced:
            record = nb["records"].get_item(Key={"pk": key}, ConsistentRead=True).get("Item", {})
            if record.get("debited"):
                return
        try:
            resends(lambda: nb["wallets"].meta.client.transact_write_items(
                TransactItems=[wallet] if unfenced else [progress, wallet]))
            if unfenced:
                nb["records"].update_item(Key={"pk": key}, UpdateExpression="SET debited = :yes",
                                          ExpressionAttributeValues={":yes": True})
            return
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons, cancelled = error.response["CancellationReasons"], error
        mine, theirs = (None, reasons[0]) if unfenced else reasons
        if mine is not None and mine.get("Code") == "ConditionalCheckFailed":
            old = nb["as_python"](mine.get("Item", {}))
            if old.get("status") == "IN_PROGRESS" and old.get("lease_token") == token and old.get("debited"):
                return                                   # debited by this payment before (an answer lost)
            raise LeaseLost(key)
        if theirs.get("Code") == "ConditionalCheckFailed":
            left = theirs.get("Item", {}).get("balance", {}).get("N")
            raise InsufficientFunds(wallet_id, amount, int(left)) if left else WalletNotFound(wallet_id)
        raise cancelled

    def renew(key: str, token: str) -> None:
        try:
            resends(lambda: nb["records"].update_item(
                Key={"pk": key}, UpdateExpression="SET lease_expires_at = :until",
                ConditionExpression="#status = :ip AND lease_token = :mine",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":until": nb["now_ms"]() + nb["LEASE_SECONDS"] * 1000,
                                           ":ip": "IN_PROGRESS", ":mine": token}))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise LeaseLost(key) from None

    def answer_from(record: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        answer = nb["answer_from"](record, payload)
        if mark_replays and record["status"] == "COMPLETED" and answer["status"] != 422:
            return {**answer, "headers": {"Idempotent-Replayed": "true"}}
        return answer

    def from_record(key: str, payload: dict[str, Any]) -> dict[str, Any]:
        record = read_item(nb["records"], {"pk": key})
        return nb["IN_PROGRESS"] if record is None else answer_from(record, payload)

    def compensate(key: str, token: str, payload: dict[str, Any]) -> dict[str, Any]:
        nb["wallets"].update_item(Key={"pk": payload["wallet"]}, UpdateExpression="SET balance = balance + :a",
                                  ExpressionAttributeValues={":a": payload["amount"]})
        resends(lambda: nb["records"].delete_item(Key={"pk": key}))
        return {"status": 502, "body": json.dumps({"error": "the provider failed; nothing was charged"})}

    def refused(key: str, token: str, payload: dict[str, Any], refusal: Exception) -> dict[str, Any]:
        status = 404 if isinstance(refusal, WalletNotFound) else 402
        response = {"status": status, "body": json.dumps({"error": type(refusal).__name__})}
        if frees_key:
            resends(lambda: nb["records"].delete_item(Key={"pk": key}, ConditionExpression="lease_token = :mine",
                                                      ExpressionAttributeValues={":mine": token}))
            return response
        return response if nb["complete"](key, token, response) else from_record(key, payload)

    def work(key: str, token: str, payload: dict[str, Any], invocation: str, started: int,
             hook: Callable[[str], None]) -> dict[str, Any]:
        """Debit (once per payment), charge (once per payment), complete; fenced on our lease throughout."""
        try:
            try:
                debit(key, token, payload["wallet"], payload["amount"])
            except (WalletNotFound, InsufficientFunds) as refusal:
                return refused(key, token, payload, refusal)
            hook("debited")
            renew(key, token)
            payment = f"{key}@{started}"
            late = nb["now"]() - started >= nb["PROVIDER_WINDOW"] - nb["MARGIN"]
            provider = nb["provider"]
            try:
                charge = (late and provider.find(payment)) or provider.charge(payload["wallet"], payload["amount"],
                                                                              payment)
            except Exception:
                if compensates:
                    return compensate(key, token, payload)
                raise
            hook("charged")
            response = {"status": 201, "body": json.dumps({"charge": charge.charge_id, "amount": payload["amount"],
                                                          "served_by": invocation})}
            completed = nb["complete"](key, token, response)
        except LeaseLost:
            return from_record(key, payload)
        except Exception:
            if frees_on_error:
                resends(lambda: nb["records"].delete_item(Key={"pk": key}))
            else:
                nb["end_lease"](key, token)
            raise
        return response if completed else from_record(key, payload)

    def pay(key, payload, invocation, hook=lambda step: None, caller=nb["CALLER"]):
        key = nb["check_request"](key, payload, invocation, caller)
        payload = {"wallet": payload["wallet"], "amount": int(payload["amount"])}
        token = nb["new_lease_token"](invocation)
        record = claim(key, payload, token)
        if record["lease_token"] != token:
            return answer_from(record, payload)
        hook("claimed")
        return work(key, token, payload, invocation, int(record["started_at"]), hook)

    def recover_unfinished(grace_seconds: float = GRACE_SECONDS) -> dict[str, str]:
        """The recovery worker: every payment whose lease ended `grace_seconds` ago, finished forward under a lease
        of its own -- or, with `refunds`, its debit given back (the mistake: an attempt may have charged)."""
        cutoff = nb["now_ms"]() - grace_seconds * 1000
        found = nb["records"].scan(ConsistentRead=True)["Items"]
        done = {}
        for record in found:
            if record["status"] != "IN_PROGRESS" or record["lease_expires_at"] >= cutoff:
                continue
            token = nb["new_lease_token"]("recovery")
            taken = nb["take_over"](record["pk"], record, token)
            if taken["lease_token"] != token:
                continue
            payload = {"wallet": record["wallet"], "amount": int(record["amount"])}
            if refunds:
                if record.get("debited"):
                    nb["wallets"].update_item(Key={"pk": payload["wallet"]},
                                              UpdateExpression="SET balance = balance + :a",
                                              ExpressionAttributeValues={":a": payload["amount"]})
                nb["complete"](record["pk"], token, {"status": 502, "body": json.dumps({"error": "refunded"})})
                done[record["pk"]] = "refunded"
                continue
            try:
                done[record["pk"]] = str(work(record["pk"], token, payload, "recovery", int(record["started_at"]),
                                              lambda step: None)["status"])
            except Exception as error:  # noqa: BLE001 - left for the next run
                done[record["pk"]] = type(error).__name__
        return done

    pay.recover_unfinished = recover_unfinished
    return pay
