"""DynamoDB's failure answers, injected: shaped as DynamoDB sends them, applied only where they say,
and classified by botocore's standard retry mode as it classifies AWS's (on the backend under test)."""

from __future__ import annotations

import doctest

import pytest
from botocore.exceptions import ClientError

import helpers
from helpers import dynamodb_errors
from helpers.dynamodb_errors import (
    CONFLICT,
    ERROR_500_APPLIED,
    ERROR_500_NOT_APPLIED,
    IN_PROGRESS,
    IN_PROGRESS_APPLIED,
    KINDS,
    THROTTLED,
    THROTTLING,
    ErrorResponses,
    kinds_for,
)

ALL_KINDS = dynamodb_errors.ALL_KINDS

# kind -> (error code, HTTP status, applied?, does botocore's standard mode resend it by itself?)
EXPECTED = {
    CONFLICT: ("TransactionCanceledException", 400, False, False),
    THROTTLED: ("ProvisionedThroughputExceededException", 400, False, True),
    THROTTLING: ("ThrottlingException", 400, False, True),
    IN_PROGRESS: ("TransactionInProgressException", 400, False, True),
    IN_PROGRESS_APPLIED: ("TransactionInProgressException", 400, True, True),
    ERROR_500_NOT_APPLIED: ("InternalServerError", 500, False, True),
    ERROR_500_APPLIED: ("InternalServerError", 500, True, True),
}


def ledger_debit(table, marker):
    """A two-action transaction: a marker put and a wallet debit (as notebook 05's ledger)."""
    table.meta.client.transact_write_items(TransactItems=[
        {"Put": {"TableName": table.name, "Item": {"pk": marker},
                 "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": table.name, "Key": {"pk": "w"},
                    "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 10}}},
    ])


def naive_debit(table):
    table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": 10})


def test_the_doctests_hold():
    assert doctest.testmod(dynamodb_errors).failed == 0


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_each_answer_is_shaped_as_dynamodb_sends_it_and_applied_only_when_it_says(fresh, kind):
    table = fresh()
    helpers.open_wallet(table, "w", 100)
    code, status, applied, _ = EXPECTED[kind]
    errors = ErrorResponses(at={0: kind}).install(table)
    with pytest.raises(ClientError) as caught:
        ledger_debit(table, "m1")
    errors.uninstall()
    response = caught.value.response
    assert response["Error"]["Code"] == code
    assert response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert errors.answered == [(0, "TransactWriteItems", kind)]
    assert helpers.read_balance(table, "w") == (90 if applied else 100)
    assert (helpers.read_item(table, {"pk": "m1"}) is not None) == applied
    if kind == CONFLICT:  # one reason per action, the conflict on the wallet (the last), the others None
        assert [r["Code"] for r in response["CancellationReasons"]] == ["None", "TransactionConflict"]


def test_a_conflict_can_name_any_action(table):
    helpers.open_wallet(table, "w", 100)
    ErrorResponses(at={0: CONFLICT}, conflict_item=0).install(table)
    with pytest.raises(ClientError) as caught:
        ledger_debit(table, "m1")
    assert [r["Code"] for r in caught.value.response["CancellationReasons"]] == ["TransactionConflict", "None"]


def test_a_single_item_write_in_conflict_gets_transaction_conflict_exception(table):
    helpers.open_wallet(table, "w", 100)
    ErrorResponses(at={0: CONFLICT}).install(table)
    with pytest.raises(ClientError) as caught:
        naive_debit(table)
    assert caught.value.response["Error"]["Code"] == "TransactionConflictException"
    assert helpers.read_balance(table, "w") == 100


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_botocore_retries_exactly_the_answers_it_retries_for_aws(fresh, kind):
    table = fresh(sdk_retries=True)
    helpers.open_wallet(table, "w", 100)
    code, _, _, retried = EXPECTED[kind]
    errors = ErrorResponses(at={0: kind}).install(table)
    try:
        if kind in dynamodb_errors.TRANSACTION_ONLY:
            ledger_debit(table, "m1")     # only a transaction can be told TransactionInProgressException
        else:
            naive_debit(table)
        outcome = "succeeded on a resend"
    except ClientError as error:
        outcome = error.response["Error"]["Code"]
    assert errors.sent == (2 if retried else 1)
    if kind == CONFLICT:
        assert outcome == "TransactionConflictException"
    else:
        assert outcome == "succeeded on a resend"


def test_a_500_after_the_write_landed_makes_botocore_charge_a_naive_debit_twice(fresh):
    table = fresh(sdk_retries=True)
    helpers.open_wallet(table, "w", 100)
    ErrorResponses(at={0: ERROR_500_APPLIED}).install(table)
    naive_debit(table)  # no error reaches the application ...
    assert helpers.read_balance(table, "w") == 80  # ... and the wallet was debited twice


def test_botocore_replays_its_own_client_token_so_a_retried_transaction_applies_once(fresh):
    table = fresh(sdk_retries=True)
    helpers.open_wallet(table, "w", 100)
    ErrorResponses(at={0: ERROR_500_APPLIED}).install(table)
    ledger_debit(table, "m1")
    assert helpers.read_balance(table, "w") == 90


def test_reads_pass_through_and_uninstall_restores(table):
    helpers.open_wallet(table, "w", 100)
    errors = ErrorResponses(p=0.9, seed=1, kinds=(THROTTLING,)).install(table)
    assert helpers.read_balance(table, "w") == 100  # GetItem is not a write: never answered
    errors.uninstall()
    naive_debit(table)
    assert errors.sent == 0 and helpers.read_balance(table, "w") == 90


def test_a_seeded_schedule_is_the_same_every_run():
    def run():
        return ErrorResponses(p=0.3, seed=7).decide_many(50)
    assert run() == run() and any(run())


@pytest.mark.parametrize("bad", [{"at": {0: "Boom"}}, {"kinds": ("nope",)}, {"p": 1.0}, {"p": -0.1}])
def test_bad_schedules_are_refused_by_name(bad):
    with pytest.raises(ValueError):
        ErrorResponses(**bad)


# --- TransactionInProgressException: only for a transaction, and its original may commit ---------------------

def naive_transaction(table, **token):
    """The wallet's debit alone in a transaction: not idempotent by itself, only by its ClientRequestToken."""
    table.meta.client.transact_write_items(**token, TransactItems=[
        {"Update": {"TableName": table.name, "Key": {"pk": "w"},
                    "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 10}}}])


@pytest.mark.parametrize("kind", [IN_PROGRESS, IN_PROGRESS_APPLIED])
def test_in_progress_is_refused_on_a_write_that_is_not_a_transaction(table, kind):
    """DynamoDB answers TransactionInProgressException only to a TransactWriteItems whose ClientRequestToken is in
    progress: an UpdateItem never gets it. Before this, the injector answered it to an UpdateItem."""
    helpers.open_wallet(table, "w", 100)
    ErrorResponses(at={0: kind}).install(table)
    with pytest.raises(ValueError, match="only to TransactWriteItems"):
        naive_debit(table)
    assert helpers.read_balance(table, "w") == 100
    with pytest.raises(ValueError, match="only TransactWriteItems"):
        ErrorResponses(at={0: kind}, operations=["UpdateItem"])


def test_a_seeded_draw_never_gives_an_update_a_transaction_only_answer(table):
    helpers.open_wallet(table, "w", 100)
    errors = ErrorResponses(p=0.9, seed=2, kinds=(IN_PROGRESS, IN_PROGRESS_APPLIED, THROTTLING)).install(table)
    for _ in range(20):
        try:
            naive_debit(table)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ThrottlingException"
    assert {kind for _, _, kind in errors.answered} == {THROTTLING}
    assert kinds_for("UpdateItem", KINDS) == tuple(k for k in KINDS if k != IN_PROGRESS)


def test_in_progress_means_the_original_may_commit_a_resend_is_safe_only_with_the_same_token(fresh):
    """The same TransactionInProgressException, with the in-flight original committing: a resend with the same
    ClientRequestToken is answered success and applies nothing more; a new call (a new token) debits again."""
    table = fresh()
    helpers.open_wallet(table, "w", 100)
    errors = ErrorResponses(at={0: IN_PROGRESS_APPLIED, 2: IN_PROGRESS_APPLIED}).install(table)
    balances = []
    for token in ({"ClientRequestToken": "payment-1"}, {}):   # the same token on the resend; a new one per call
        with pytest.raises(ClientError) as caught:
            naive_transaction(table, **token)
        assert caught.value.response["Error"]["Code"] == "TransactionInProgressException"
        balances.append(helpers.read_balance(table, "w"))      # the original committed
        naive_transaction(table, **token)                       # resent
        balances.append(helpers.read_balance(table, "w"))
    assert balances == [90, 90, 80, 70]
    assert [kind for _, _, kind in errors.answered] == [IN_PROGRESS_APPLIED] * 2


def test_botocore_resends_in_progress_with_its_own_token_so_the_original_applies_once(fresh):
    table = fresh(sdk_retries=True)
    helpers.open_wallet(table, "w", 100)
    errors = ErrorResponses(at={0: IN_PROGRESS_APPLIED}).install(table)
    naive_transaction(table)
    assert errors.sent == 2 and helpers.read_balance(table, "w") == 90


def test_a_generated_schedule_can_skip_an_answer_the_operation_can_never_get(table):
    """impossible="skip": a TransactionInProgress kind named for an UpdateItem leaves it DynamoDB's own answer."""
    helpers.open_wallet(table, "w", 100)
    errors = ErrorResponses(at={0: IN_PROGRESS, 1: THROTTLING}, impossible="skip").install(table)
    naive_debit(table)                                    # request 0: DynamoDB's own answer, applied
    with pytest.raises(ClientError):
        naive_debit(table)                                # request 1: throttled
    assert [kind for _, _, kind in errors.answered] == [THROTTLING] and helpers.read_balance(table, "w") == 90
    with pytest.raises(ValueError, match="impossible"):
        ErrorResponses(impossible="maybe")
