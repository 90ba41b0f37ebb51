"""Every debit pattern under generated schedules of DynamoDB's own failure answers — the notebooks' own code.

A schedule is the answer each send of ONE logical debit gets, in order: DynamoDB's own (None), or an injected
conflict, throttle, TransactionInProgress, or 500 (applied or not). The caller resends the same request (same
request ID) after every error, as a retry loop would, until it is told success; botocore's own retries are on
or off. Invariants: the caller is told success only once the debit is applied (**truth**), and the idempotent
patterns apply it exactly once (**once**). The naive debit is *searched*: hypothesis must find a schedule that
charges it twice (a 500 after the write landed), the proof that the property can fail.

Every pattern the collection teaches is here: 01's fixed value and 02's conditional create (resending is the
pattern), 03's `last_request_id`, 05's ledger and client token, 06's saved-response handler and both Powertools
set-ups (one debit, one charge, the replay byte-identical; told success only when it happened), and 07's
consumer (an error keeps the message, which is delivered again). Searched and found: the naive debit and the
naive consumer charging twice, and Powertools outside Lambda blocking a key after a 500 (no in-progress expiry).
A line per pattern, with how many schedules were distinct, is printed at the end of the run. The schedules,
the injected answers and the resending caller are tests/harness/'s; this file holds the patterns and invariants.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from harness.delivery import SUCCESS, failure_answers
from harness.resends import resend_until_told
from harness.rigs import NB01, NB02, NB03, NB05, NB07, NB11, RUN, EmptyNowAndThen, notebooks, table_for
from harness.schedules import Counts, examples, smallest
from harness.schedules import failure_answers as schedules
from hypothesis import HealthCheck, given, settings

from helpers import backends

from notebook_code import lesson

EXAMPLES = examples(moto=300, elsewhere=60)
SEARCH_EXAMPLES = max(EXAMPLES, 200)   # a search stops at its first counterexample: a floor keeps it finding one
PATTERNS = {  # pattern -> (notebook, function, sort key of its table)
    "03 debit_idempotent": (NB03, "debit_idempotent", None),
    "05 debit_ledger": (NB05, "debit_ledger", "sk"),
    "05 debit_token": (NB05, "debit_token", "sk"),
}
NAIVE = (NB03, "debit_naive", None)
nb = notebooks()   # this module's own run of each notebook's code
COUNTS = Counts(f"failure-answer schedules on {backends.backend_name()}")   # a line per pattern, at the end
count = COUNTS.count
empty_now_and_then = EmptyNowAndThen(every=25)   # moto copies a table per transaction: keep them small
_wallets = itertools.count()


def deliver(pattern: tuple[str, str, str | None], schedule: list[str | None], sdk_retries: bool) -> tuple[int, int]:
    """Send one debit of 10 until told success; return (times applied, times told success)."""
    notebook, function, sort_key = pattern
    code = nb(notebook)
    table = table_for(sort_key, sdk_retries)
    empty_now_and_then(table)
    wallet = f"w{next(_wallets)}-{RUN}"
    key = {"pk": wallet, "sk": "wallet"} if sort_key else {"pk": wallet}
    table.put_item(Item={**key, "balance": 1000})
    request_id = str(uuid.uuid4())
    with failure_answers(schedule, table):     # an error: resend the same request
        answers = resend_until_told(lambda: code[function](table, wallet, 10, request_id), schedule,
                                    accept=SUCCESS.__contains__)
    balance = int(table.get_item(Key=key, ConsistentRead=True)["Item"]["balance"])
    return (1000 - balance) // 10, sum(answer in SUCCESS for answer in answers)


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_idempotent_patterns_apply_once_and_tell_the_truth_under_every_failure_answer(pattern, sdk_retries):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"{pattern} ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        applied, told = deliver(PATTERNS[pattern], schedule, sdk_retries)
        assert told == 1, f"{pattern}: the caller was never told success under {schedule}"
        assert applied == 1, f"{pattern}: applied {applied} times under {schedule}"
    check()


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_the_naive_debit_is_caught_charging_twice(sdk_retries):
    found = smallest(schedules, lambda schedule: deliver(NAIVE, schedule, sdk_retries)[0] > 1, SEARCH_EXAMPLES)
    assert found is not None and "InternalServerError (applied)" in found


# --- fixed value (01), conditional create (02): resending is the pattern --------------------------

FIXED_EXAMPLES = max(EXAMPLES // 3, 20)   # one call per send, no transaction: fewer schedules say as much
RESENT = {  # pattern -> (notebook, the item before, the call, what the caller may be told, the item after)
    "01 set_status": (NB01, {"status": "placed"}, lambda code, table, order: code["set_status"](table, order, "packed"),
                      {"applied"}, {"status": "packed"}),
    "02 create_once": (NB02, None, lambda code, table, order: code["create_once"](table, order, "ann", 10),
                       {"created", "already created"}, {"customer": "ann", "amount": 10}),
}


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
@pytest.mark.parametrize("pattern", RESENT)
def test_resending_01_02_writes_once_whatever_dynamodb_answers(pattern, sdk_retries):
    notebook, before, send, told, after = RESENT[pattern]
    code, table = nb(notebook), table_for(None, sdk_retries)

    @settings(max_examples=FIXED_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"{pattern} ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        order = f"o{next(_wallets)}-{RUN}"
        if before is not None:
            table.put_item(Item={"pk": order, **before})
        with failure_answers(schedule, table):
            answers = resend_until_told(lambda: send(code, table, order), schedule)
        item = table.get_item(Key={"pk": order}, ConsistentRead=True).get("Item")
        assert len(answers) == 1 and answers[0] in told, f"told {answers} under {schedule}"
        assert item is not None and {k: item[k] for k in after} == after, f"{item} after {answers} under {schedule}"
    check()


# --- the SQS consumers (07): an error keeps the message; it is delivered again ---------------------

@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_consumer_07_debits_each_operation_once_whatever_dynamodb_answers(sdk_retries):
    """07's consumer: every raise leaves the message on the queue, so it is handled again, as SQS would."""
    code = lesson(NB07)
    code["wallets"] = wallets = table_for(None, sdk_retries)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"07 debit_by_operation ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        empty_now_and_then(wallets)
        wallet = f"w{next(_wallets)}-{RUN}"
        wallets.put_item(Item={"pk": wallet, "balance": 1000})
        body = {"producer": "shop", "operation_id": f"op-{wallet}", "wallet": wallet, "amount": 10}
        with failure_answers(schedule, wallets):
            answers = resend_until_told(lambda: code["debit_by_operation"](body), schedule)
        balance = int(wallets.get_item(Key={"pk": wallet}, ConsistentRead=True)["Item"]["balance"])
        assert len(answers) == 1 and answers[0] in SUCCESS, f"message deleted after {answers} under {schedule}"
        assert balance == 990, f"balance {balance} after {answers} under {schedule}"
    check()


def test_naive_consumer_07_is_caught_charging_twice():
    code = lesson(NB07)
    code["wallets"] = wallets = table_for(None, True)

    def charged_twice(schedule):
        wallet = f"w{next(_wallets)}-{RUN}"
        wallets.put_item(Item={"pk": wallet, "balance": 1000})
        with failure_answers(schedule, wallets):
            resend_until_told(lambda: code["debit_naive"]({"wallet": wallet, "amount": 10}), schedule)
        return int(wallets.get_item(Key={"pk": wallet}, ConsistentRead=True)["Item"]["balance"]) < 990

    found = smallest(schedules, charged_twice, SEARCH_EXAMPLES)
    assert found is not None and "InternalServerError (applied)" in found


# --- the saved-response handler and Powertools (06): one debit, one charge, one response ----------

HANDLERS_06 = ["pay", "pay_powertools", "pay_powertools_outside_lambda"]


def pay_until_201(code: dict[str, Any], handler: str, schedule: list[str | None]) -> dict[str, Any]:
    """One caller pays once, resending with the same key after every error or 409, as a client would.

    A 409 means an earlier attempt's record is still IN_PROGRESS: the caller waits past the lease
    (virtual time) and resends. Returns what the caller saw and what the tables and provider hold.
    """
    empty_now_and_then(code["wallets"], code["records"], code["powertools_table"])
    wallet = f"w{next(_wallets)}-{RUN}"
    code["open_wallet"](code["wallets"], wallet, 1000)
    payload, key = {"wallet": wallet, "amount": 10}, f"key-{wallet}"
    seen: list[Any] = []
    # one schedule: every write the handler sends, in order
    with failure_answers(schedule, code["wallets"], code["records"], code["powertools_client"]):
        for attempt in range(2 * len(schedule) + 3):
            try:
                response = code[handler](key, payload, f"inv-{attempt}")
            except Exception as error:  # a ClientError, or Powertools' wrapper of one: nothing to show the caller
                seen.append(type(error).__name__)
                continue
            seen.append(response["status"])
            if response["status"] == 201:
                break
            code["db"].clock.advance(code["LEASE_SECONDS"] + 1)    # 409: wait past the lease, then resend
    replay = code[handler](key, payload, "inv-replay") if 201 in seen else None
    charges = [c for c in code["provider"].made if c.wallet_id == wallet]
    return {"seen": seen, "first": response if 201 in seen else None, "replay": replay,
            "debits": (1000 - code["read_balance"](code["wallets"], wallet)) // 10, "charges": len(charges)}


@pytest.mark.parametrize("handler", HANDLERS_06)
def test_saved_response_handlers_06_charge_once_and_never_claim_success_falsely(handler):
    code = nb(NB11)

    @settings(max_examples=max(EXAMPLES // 3, 20), deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"06 {handler}", schedule)
        run = pay_until_201(code, handler, schedule)
        assert run["debits"] <= 1 and run["charges"] <= 1, f"{handler} under {schedule}: {run}"
        assert run["debits"] == run["charges"], f"{handler}: a debit without its charge under {schedule}: {run}"
        if run["first"] is not None:   # told success: it happened, once, and the replay is the same bytes
            assert (run["debits"], run["charges"]) == (1, 1), f"{handler} under {schedule}: {run}"
            assert run["replay"] == run["first"], f"{handler}: the replay differs under {schedule}: {run}"
        elif handler != "pay_powertools_outside_lambda":   # with a lease, a caller that keeps resending gets there
            pytest.fail(f"{handler}: never told success under {schedule}: {run['seen']}")
    check()


def test_powertools_outside_lambda_06_is_caught_blocking_a_key_after_a_500():
    """Without a Lambda context there is no in-progress expiry: a 500 after the claim landed blocks the key."""
    code = nb(NB11)

    def blocked(schedule):
        return pay_until_201(code, "pay_powertools_outside_lambda", schedule)["first"] is None

    found = smallest(schedules, blocked, SEARCH_EXAMPLES)
    assert found is not None and "InternalServerError (applied)" in found
