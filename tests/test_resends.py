"""helpers/resends.py: notebook 06's `with_resends` sends a write again while DynamoDB wrote nothing (or cannot say),
and raises everything else at once. Against the table, with DynamoDB's failure answers injected
(helpers/dynamodb_errors.py)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

import helpers
from helpers.dynamodb_errors import CONFLICT, ERROR_500_APPLIED, THROTTLING, ErrorResponses
from helpers.resends import resender


def put(table, name="a"):
    return lambda: table.put_item(Item={"pk": name}, ConditionExpression="attribute_not_exists(pk)")


@pytest.mark.parametrize("kind", [CONFLICT, THROTTLING, ERROR_500_APPLIED])
def test_a_refusal_or_an_unknown_answer_is_sent_again_after_a_backoff(table, db, kind):
    errors = ErrorResponses(at={0: kind}).install(table)
    try:
        before = db.clock.now()
        write = put(table, f"r-{kind}") if kind != ERROR_500_APPLIED else (lambda: table.put_item(Item={"pk": "x"}))
        resender(db.clock, 3)(write)
    finally:
        errors.uninstall()
    assert [n for n, _, _ in errors.answered] == [0]
    assert db.clock.now() - before == pytest.approx(0.025, abs=1e-6)   # botocore's 25 ms base, no jitter


def test_a_failed_condition_is_raised_at_once_and_the_attempts_are_bounded(table, db):
    with_resends = resender(db.clock, 3)
    with_resends(put(table))
    calls = []
    def counted():
        calls.append(1)
        return put(table)()
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        with_resends(counted)
    assert len(calls) == 1
    errors = ErrorResponses(at={n: CONFLICT for n in range(10)}).install(table)
    try:
        with pytest.raises(ClientError, match="TransactionConflict"):
            with_resends(put(table, "b"))
    finally:
        errors.uninstall()
    assert len(errors.answered) == 3 and helpers.read_item(table, {"pk": "b"}) is None


@pytest.mark.parametrize("attempts", [0, -1, 1.5, True, "3"])
def test_attempts_must_be_a_whole_number_of_at_least_one(db, attempts):
    with pytest.raises(helpers.BadInput, match="attempts"):
        resender(db.clock, attempts)
