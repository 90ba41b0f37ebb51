"""Every debit pattern under generated schedules of DynamoDB's own failure answers — the notebooks' own code.

A schedule is the answer each send of ONE logical debit gets, in order: DynamoDB's own (None), or an injected
conflict, throttle, TransactionInProgress, or 500 (applied or not). The caller resends the same request (same
request ID) after every error, as a retry loop would, until it is told success; botocore's own retries are on
or off. Invariants: the caller is told success only once the debit is applied (**truth**), and the idempotent
patterns apply it exactly once (**once**). The naive debit is *searched*: hypothesis must find a schedule that
charges it twice (a 500 after the write landed), the proof that the property can fail.
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

import helpers
from helpers import backends
from helpers.dynamodb_errors import KINDS, DynamoDBErrors
from notebook_code import lesson

EXAMPLES = int(os.environ.get("RETRY_PROPERTY_EXAMPLES", 300 if backends.backend_name() == "moto" else 60))
RUN = uuid.uuid4().hex[:8]
SUCCESS = {"applied", "already applied", "applied or replayed"}
PATTERNS = {  # pattern -> (notebook, function, sort key of its table)
    "03 debit_idempotent": ("03_request_id_increments.ipynb", "debit_idempotent", None),
    "05 debit_ledger": ("05_remembering_every_request.ipynb", "debit_ledger", "sk"),
    "05 debit_token": ("05_remembering_every_request.ipynb", "debit_token", "sk"),
}
NAIVE = ("03_request_id_increments.ipynb", "debit_naive", None)
_wallets = itertools.count()

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
        applied, told = deliver(PATTERNS[pattern], schedule, sdk_retries)
        assert told == 1, f"{pattern}: the caller was never told success under {schedule}"
        assert applied == 1, f"{pattern}: applied {applied} times under {schedule}"
    check()


@pytest.mark.parametrize("sdk_retries", [False, True], ids=["app retries", "botocore retries"])
def test_the_naive_debit_is_caught_charging_twice(sdk_retries):
    found = find(schedules, lambda schedule: deliver(NAIVE, schedule, sdk_retries)[0] > 1,
                 settings=settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                                   suppress_health_check=list(HealthCheck)))
    assert "InternalServerError (applied)" in found
