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
A line per pattern, with how many schedules were distinct, is printed at the end of the run.
"""

from __future__ import annotations

import functools
import itertools
import os
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from summary_lines import summary_from

import helpers
from helpers import backends
from helpers.dynamodb_errors import KINDS, DynamoDBErrors

from notebook_code import lesson

EXAMPLES = int(os.environ.get("RETRY_PROPERTY_EXAMPLES", 300 if backends.backend_name() == "moto" else 60))
SEARCH_EXAMPLES = max(EXAMPLES, 200)   # a search stops at its first counterexample: a floor keeps it finding one
RUN = uuid.uuid4().hex[:8]
SUCCESS = {"applied", "already applied", "applied or replayed"}
PATTERNS = {  # pattern -> (notebook, function, sort key of its table)
    "03 debit_idempotent": ("03_request_id_increments.ipynb", "debit_idempotent", None),
    "05 debit_ledger": ("05_remembering_every_request.ipynb", "debit_ledger", "sk"),
    "05 debit_token": ("05_remembering_every_request.ipynb", "debit_token", "sk"),
}
NAIVE = ("03_request_id_increments.ipynb", "debit_naive", None)
_wallets = itertools.count()
_examples = itertools.count()
EMPTY_EVERY = 25


COUNTS: dict[str, list] = {}   # pattern -> [schedules run, set of distinct schedules]


def count(pattern: str, schedule: list[str | None]) -> None:
    entry = COUNTS.setdefault(pattern, [0, set()])
    entry[0] += 1
    entry[1].add(tuple(schedule))


summary_from(f"failure-answer schedules on {backends.backend_name()}",   # a line per pattern, at the end
             lambda: [f"{pattern}: {runs} schedules ({len(distinct)} distinct)"
                      for pattern, (runs, distinct) in COUNTS.items()])


def empty_now_and_then(*tables: Any) -> None:
    """Delete every item every `EMPTY_EVERY` examples: moto deep-copies each table a transaction touches,
    so a table that kept every example's markers would make example n cost O(n) (see test_properties.py)."""
    if next(_examples) % EMPTY_EVERY == 0:
        for table in tables:
            helpers.empty_table(table)

schedules = st.lists(st.one_of(st.none(), st.sampled_from(KINDS)), min_size=0, max_size=6)


@functools.cache
def nb(name: str) -> dict[str, Any]:
    return lesson(name)


@functools.cache
def table_for(sort_key: str | None, sdk_retries: bool) -> Any:
    db = helpers.connect()
    name = f"props-fail-{sort_key or 'pk'}-{RUN}"
    helpers.fresh_table(db, name, sort_key=sort_key)
    return db.table(name, sdk_retries=sdk_retries)


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
    errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind}).install(table)
    told = 0
    try:
        for _ in range(len(schedule) + 2):       # every injected answer is used up by then
            try:
                if code[function](table, wallet, 10, request_id) in SUCCESS:
                    told += 1
                    break
            except ClientError:
                continue                            # an error: resend the same request
    finally:
        errors.uninstall()
    balance = int(table.get_item(Key=key, ConsistentRead=True)["Item"]["balance"])
    return (1000 - balance) // 10, told


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
    found = find(schedules, lambda schedule: deliver(NAIVE, schedule, sdk_retries)[0] > 1,
                 settings=settings(max_examples=SEARCH_EXAMPLES, derandomize=True, database=None, deadline=None,
                                   suppress_health_check=list(HealthCheck)))
    assert "InternalServerError (applied)" in found


# --- fixed value (01), conditional create (02): resending is the pattern --------------------------

FIXED_EXAMPLES = max(EXAMPLES // 3, 20)   # one call per send, no transaction: fewer schedules say as much


def resend_until_told(send, schedule: list[str | None]) -> list[str]:
    """Call `send()` until it answers, resending after every error; the answers it gave."""
    answers = []
    for _ in range(len(schedule) + 2):
        try:
            answers.append(send())
            break
        except ClientError:
            continue
    return answers


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_fixed_value_01_lands_once_whatever_dynamodb_answers(sdk_retries):
    code = nb("01_fixed_value_updates.ipynb")
    table = table_for(None, sdk_retries)

    @settings(max_examples=FIXED_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"01 set_status ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        order = f"o{next(_wallets)}-{RUN}"
        table.put_item(Item={"pk": order, "status": "placed"})
        errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind}).install(table)
        try:
            answers = resend_until_told(lambda: code["set_status"](table, order, "packed"), schedule)
        finally:
            errors.uninstall()
        item = table.get_item(Key={"pk": order}, ConsistentRead=True)["Item"]
        assert answers == ["applied"], f"told {answers} under {schedule}"
        assert item["status"] == "packed", f"status {item['status']} after 'applied' under {schedule}"
    check()


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_conditional_create_02_creates_one_order_whatever_dynamodb_answers(sdk_retries):
    code = nb("02_conditional_creates.ipynb")
    table = table_for(None, sdk_retries)

    @settings(max_examples=FIXED_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"02 create_once ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        order = f"o{next(_wallets)}-{RUN}"
        errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind}).install(table)
        try:
            answers = resend_until_told(lambda: code["create_once"](table, order, "ann", 10), schedule)
        finally:
            errors.uninstall()
        item = table.get_item(Key={"pk": order}, ConsistentRead=True).get("Item")
        assert len(answers) == 1 and answers[0] in {"created", "already created"}, f"{answers} under {schedule}"
        assert item is not None and (item["customer"], item["amount"]) == ("ann", 10), schedule
    check()


# --- the SQS consumers (07): an error keeps the message; it is delivered again ---------------------

@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_consumer_07_debits_each_operation_once_whatever_dynamodb_answers(sdk_retries):
    """07's consumer: every raise leaves the message on the queue, so it is handled again, as SQS would."""
    code = lesson("07_event_sources.ipynb")
    code["wallets"] = wallets = table_for(None, sdk_retries)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedule=schedules)
    def check(schedule):
        count(f"07 debit_by_operation ({'botocore' if sdk_retries else 'app'} retries)", schedule)
        empty_now_and_then(wallets)
        wallet = f"w{next(_wallets)}-{RUN}"
        wallets.put_item(Item={"pk": wallet, "balance": 1000})
        body = {"operation_id": f"op-{wallet}", "wallet": wallet, "amount": 10}
        errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind}).install(wallets)
        try:
            answers = resend_until_told(lambda: code["debit_by_operation"](body), schedule)
        finally:
            errors.uninstall()
        balance = int(wallets.get_item(Key={"pk": wallet}, ConsistentRead=True)["Item"]["balance"])
        assert len(answers) == 1 and answers[0] in SUCCESS, f"message deleted after {answers} under {schedule}"
        assert balance == 990, f"balance {balance} after {answers} under {schedule}"
    check()


def test_naive_consumer_07_is_caught_charging_twice():
    code = lesson("07_event_sources.ipynb")
    code["wallets"] = wallets = table_for(None, True)

    def charged_twice(schedule):
        wallet = f"w{next(_wallets)}-{RUN}"
        wallets.put_item(Item={"pk": wallet, "balance": 1000})
        errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind}).install(wallets)
        try:
            resend_until_told(lambda: code["debit_naive"]({"wallet": wallet, "amount": 10}), schedule)
        finally:
            errors.uninstall()
        return int(wallets.get_item(Key={"pk": wallet}, ConsistentRead=True)["Item"]["balance"]) < 990

    found = find(schedules, charged_twice, settings=settings(
        max_examples=SEARCH_EXAMPLES, derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck)))
    assert "InternalServerError (applied)" in found


# --- the saved-response handler and Powertools (06): one debit, one charge, one response ----------

HANDLERS_06 = ["pay", "pay_powertools", "pay_powertools_outside_lambda"]


@functools.cache
def lesson_06() -> dict[str, Any]:
    return lesson("06_saved_responses.ipynb")


def pay_until_201(code: dict[str, Any], handler: str, schedule: list[str | None]) -> dict[str, Any]:
    """One caller pays once, resending with the same key after every error or 409, as a client would.

    A 409 means an earlier attempt's record is still IN_PROGRESS: the caller waits past the lease
    (virtual time) and resends. Returns what the caller saw and what the tables and provider hold.
    """
    empty_now_and_then(code["wallets"], code["records"], code["powertools_table"])
    wallet = f"w{next(_wallets)}-{RUN}"
    code["open_wallet"](code["wallets"], wallet, 1000)
    payload, key = {"wallet": wallet, "amount": 10}, f"key-{wallet}"
    errors = DynamoDBErrors(at={n: kind for n, kind in enumerate(schedule) if kind})
    for client in (code["wallets"], code["records"], code["powertools_client"]):
        errors.install(client)                       # one schedule: every write the handler sends, in order
    seen: list[Any] = []
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
    errors.uninstall()
    replay = code[handler](key, payload, "inv-replay") if 201 in seen else None
    charges = [c for c in code["provider"].made if c.wallet_id == wallet]
    return {"seen": seen, "first": response if 201 in seen else None, "replay": replay,
            "debits": (1000 - code["read_balance"](code["wallets"], wallet)) // 10, "charges": len(charges)}


@pytest.mark.parametrize("handler", HANDLERS_06)
def test_saved_response_handlers_06_charge_once_and_never_claim_success_falsely(handler):
    code = lesson_06()

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
    code = lesson_06()

    def blocked(schedule):
        return pay_until_201(code, "pay_powertools_outside_lambda", schedule)["first"] is None

    found = find(schedules, blocked, settings=settings(
        max_examples=SEARCH_EXAMPLES, derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck)))
    assert "InternalServerError (applied)" in found
