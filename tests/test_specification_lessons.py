"""The specification's checker (helpers/checker.py) over the other lessons' handlers: 03-05/08's debit functions,
09's endpoint over real HTTP, 10's Postgres handler with its outbox worker. What each design gives up on purpose
is named in helpers/specification.py; the rest must hold."""

from __future__ import annotations

import json
import os

import pytest
from summary_lines import summary

from helpers.checker import check_handler
from helpers.specification import BOUND, ONCE
from helpers.subjects import DebitSubject, HttpSubject, OutboxSubject
from helpers.validation import KEY_SEPARATOR

from notebook_code import lesson

BACKEND = os.environ.get("RETRY_BACKEND", "moto")
HOLDS = 200 if BACKEND == "moto" else 100       # histories for a handler that must hold every property it claims


def report(verdict):
    summary(f"the specification's checker on {BACKEND}").append(
        str(verdict) if verdict.broken is None else f"{verdict.handler} breaks {verdict.broken} (as it should)")


# --- the debit functions of 03, 05 and 08 (DebitSubject), and 10's handler on Postgres (OutboxSubject) --------

DEBITS = [  # (notebook, function, keys_reused, what the design gives up: None if it must hold every property)
    ("03_request_id_increments.ipynb", "debit_naive", False, ONCE),
    ("03_request_id_increments.ipynb", "debit_idempotent", True, BOUND),      # a request ID alone, no payload
    ("03_request_id_increments.ipynb", "debit_idempotent", False, ONCE),      # last_request_id under ABA
    ("04_where_it_stops.ipynb", "debit_guarded", False, ONCE),         # a late copy told "insufficient funds"
    ("05_remembering_every_request.ipynb", "debit_ledger", False, None),
    ("05_remembering_every_request.ipynb", "debit_ledger", True, BOUND),   # the marker keeps no payload (06 does)
    ("08_when_dynamodb_says_no.ipynb", "debit_ledger", False, None),
    ("08_when_dynamodb_says_no.ipynb", "debit_ledger", True, BOUND),
    ("08_when_dynamodb_says_no.ipynb", "debit_mistaken", False, ONCE),    # a conflict read as "already applied"
]


def refused_unless_applied(result, payload):
    """04's debit_guarded: "applied" and "already applied" are success; its overdraft answer a refusal."""
    if result in ("applied", "already applied"):
        return {"status": 201, "body": json.dumps({"debited": payload["amount"], "from": payload["wallet"]})}
    return {"status": 400, "body": json.dumps({"error": result})}


@pytest.mark.parametrize("notebook, function, keys_reused, gives_up", DEBITS,
                         ids=[f"{n[:2]}-{f}-{'keys-reused' if r else 'one-payload-per-key'}" for n, f, r, _ in DEBITS])
def test_the_debits_hold_what_they_claim_and_give_up_what_they_name(notebook, function, keys_reused, gives_up):
    nb = lesson(notebook)
    histories = HOLDS if gives_up is None else 300
    answer = refused_unless_applied if function == "debit_guarded" else None
    verdict = check_handler(DebitSubject(nb[function], name=f"{notebook[:2]} {function}", answer=answer),
                            histories=histories,
                            keys_reused=keys_reused, shrink=False)
    report(verdict)
    assert verdict.broken == gives_up, str(verdict)


@pytest.mark.skipif(BACKEND != "moto", reason="10 is Postgres: its check does not depend on the DynamoDB backend "
                                               "(it runs once, on the moto tier)")
def test_10_pay_and_its_outbox_worker_hold_every_property():
    # 100 histories, not HOLDS: on Postgres a history costs several times a DynamoDB one (10's functions open a
    # connection per call, a server process each), and every mutant of 10 this test kills, a cheaper test of 10
    # kills too (tests/mutation/report-after.md).
    nb = lesson("10_postgres_shaped.ipynb")
    verdict = check_handler(OutboxSubject(nb), histories=100)
    report(verdict)
    assert verdict.broken is None, str(verdict)


def test_09_post_payments_over_http_holds_every_property():
    nb = lesson("09_over_http.ipynb")
    try:
        verdict = check_handler(HttpSubject(nb), histories=HOLDS)
    finally:
        nb["server"].stop()
    report(verdict)
    assert verdict.broken is None, str(verdict)


@pytest.mark.parametrize("keys_reused", [False, True], ids=["one-payload-per-operation", "operation-ids-reused"])
def test_07_the_consumer_keyed_by_the_producers_operation_id(keys_reused):
    """07's consumer as a handler: each request one delivery of a message (a resend is SQS delivering it again, or
    the producer resending). Two producers (the callers) number their operations alike -- both send op k1 -- and an
    ID may come back with another payment (keys_reused): the key is the producer and its ID, and the marker keeps
    the payment, so a reused ID is refused (KeyReused), never applied or acknowledged. Every property holds."""
    nb = lesson("07_event_sources.ipynb")
    nb["new_wallet"]()                                   # the lesson's own table, from nothing

    def consume(table, wallet, amount, request_id):
        producer, operation_id = request_id.split("-", 1)    # DebitSubject's "<caller's last letter>-<key>"
        return nb["debit_by_operation"]({"producer": f"shop-{producer}", "operation_id": operation_id,
                                         "wallet": wallet, "amount": amount})

    subject = DebitSubject(consume, name="07 debit_by_operation", table=nb["wallets"], db=nb["db"])
    subject.refused_in_keys = KEY_SEPARATOR       # 07 refuses it in an operation ID, by name (BadInput)
    verdict = check_handler(subject, histories=HOLDS, keys_reused=keys_reused, shrink=False)
    report(verdict)
    assert verdict.broken is None, str(verdict)


def test_07_a_consumer_keyed_by_the_operation_id_alone_mixes_two_producers_payments():
    """The same check, the key the operation ID alone: two producers' op k1 are one payment to it (once)."""
    nb = lesson("07_event_sources.ipynb")
    nb["new_wallet"]()

    def consume(table, wallet, amount, request_id):
        producer, operation_id = request_id.split("-", 1)
        return nb["debit_once"]({"producer": f"shop-{producer}", "operation_id": operation_id, "wallet": wallet,
                                 "amount": amount}, key=operation_id)

    subject = DebitSubject(consume, name="07 keyed by the operation ID alone", table=nb["wallets"], db=nb["db"])
    subject.refused_in_keys = KEY_SEPARATOR       # 07 refuses it in an operation ID, by name (BadInput)
    verdict = check_handler(subject, histories=300, keys_reused=False, shrink=False)
    report(verdict)
    assert verdict.broken == ONCE, str(verdict)
