"""Notebook 08's own functions under every answer DynamoDB can give a write (injected where no backend gives it).

Only the request's own failed condition means "already applied"; every other cancellation wrote nothing; a 500
and a lost response are unknown. The idempotent debits (last_request_id, ledger) apply each request once under
every answer and a resend; the naive one is charged twice by a 500 after the write landed; the handler that
reads a conflict as a duplicate loses the payment. The exercise checker passes the solution and fails the starter.
"""

from __future__ import annotations

import random
import uuid

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from harness.resends import answer_then_resend

import helpers
from helpers import LostResponses
from helpers import dynamodb_errors as dynamodb
from helpers.dynamodb_errors import ANSWERS, ErrorResponses, kinds_for
from helpers.exercises import check_bounded_pay

from notebook_code import cells, lesson

NB = "08_when_dynamodb_says_no.ipynb"
SOLUTION = "solutions/08_when_dynamodb_says_no_solution.ipynb"
IDEMPOTENT = ["debit_idempotent", "debit_ledger"]
ALL = ["debit_naive", *IDEMPOTENT, "debit_mistaken"]
OPERATION = {"debit_naive": "UpdateItem", "debit_idempotent": "UpdateItem", "debit_ledger": "TransactWriteItems",
             "debit_mistaken": "TransactWriteItems"}


def can_get(pattern, kind):
    """Whether DynamoDB can answer this pattern's write with `kind` (TransactionInProgress: only a transaction)."""
    return kind in kinds_for(OPERATION[pattern])


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


def wallet(nb, balance=100, **client_options):
    return nb["new_wallet"](balance, **client_options)


# --- each debit under each answer, SDK retries off: the caller sees DynamoDB's answer itself -------------------

@pytest.mark.parametrize("pattern", IDEMPOTENT)
@pytest.mark.parametrize("kind, item", ANSWERS, ids=[f"{k}@{i}" for k, i in ANSWERS])
def test_no_failure_answer_is_success_and_a_resend_applies_once(nb, pattern, kind, item):
    if not can_get(pattern, kind):
        pytest.skip(f"an {OPERATION[pattern]} is never answered {kind}")
    table, wallet_id = wallet(nb)
    answer_then_resend(nb[pattern], table, wallet_id, nb["read_balance"], kind, item, "pay-1")


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("kind", dynamodb.ALL_KINDS)
def test_with_botocore_resending_only_a_conflict_reaches_the_caller(nb, pattern, kind):
    if not can_get(pattern, kind):
        pytest.skip(f"an {OPERATION[pattern]} is never answered {kind}")
    table, wallet_id = wallet(nb, sdk_retries=True)
    ErrorResponses(at={0: kind}, conflict_item=0).install(table)
    try:
        outcome = nb[pattern](table, wallet_id, 10, "pay-1")
    except ClientError as error:
        assert kind == dynamodb.CONFLICT, error
        assert nb["read_balance"](table, wallet_id) == 100                   # nothing written
        return
    expected = 80 if (pattern == "debit_naive" and kind == dynamodb.ERROR_500_APPLIED) else 90
    if pattern == "debit_mistaken" and kind == dynamodb.CONFLICT:
        assert outcome == "already applied"
        expected = 100                                                       # told success, never debited
    assert nb["read_balance"](table, wallet_id) == expected


# --- TransactionInProgressException: the request with that token may still commit ------------------------------

def test_a_transaction_in_progress_is_unknown_not_a_refusal(nb):
    """The same TransactionInProgressException is seen with the write applied and without, so its caller cannot
    know (before this, 08 called it "not applied, a resend is safe for any write, even naive")."""
    rows = {row[0]: nb["observe"](*row[2:]) for row in nb["PRODUCED"] if row[0].startswith("same token in flight")}
    assert len(rows) == 2
    answers = {str(answers[0]) for answers, _, _ in rows.values()}
    assert answers == {"400 TransactionInProgressException"}
    assert sorted(wrote for _, wrote, _ in rows.values()) == [False, True]


def test_in_flight_a_new_call_charges_a_naive_transaction_twice_the_same_token_once(nb):
    """The application is told TransactionInProgressException at 3 s -- before the 5 s DynamoDB recommends -- and
    the original then commits: a resend as a new call (a new token) debits again; with the same token, once."""
    rows = {label: nb["in_flight"](write) for label, write in nb["IN_FLIGHT"].items()}
    assert {label: row["balance"] for label, row in rows.items()} == {
        "naive, the same token": 90, "naive, a new call": 80, "ledger, a new call": 90}
    assert all(row["the application saw"].startswith("TransactionInProgressException at 3 s") for row in rows.values())


def test_the_ledger_told_in_progress_raises_and_its_resend_is_already_applied_when_the_original_committed(nb):
    table, wallet_id = wallet(nb)
    ErrorResponses(at={0: dynamodb.IN_PROGRESS_APPLIED}).install(table)
    with pytest.raises(ClientError) as raised:
        nb["debit_ledger"](table, wallet_id, 10, "pay-1")
    assert raised.value.response["Error"]["Code"] == "TransactionInProgressException"
    assert nb["debit_ledger"](table, wallet_id, 10, "pay-1") == "already applied"
    assert nb["read_balance"](table, wallet_id) == 90


@pytest.mark.parametrize("pattern", IDEMPOTENT)
def test_a_lost_response_then_a_resend_applies_once(nb, pattern):
    table, wallet_id = wallet(nb)
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        nb[pattern](table, wallet_id, 10, "pay-1")
    assert nb[pattern](table, wallet_id, 10, "pay-1") == "already applied"
    assert nb["read_balance"](table, wallet_id) == 90


def test_the_mistaken_handler_reports_a_conflict_as_applied_and_writes_nothing(nb):
    table, wallet_id = wallet(nb)
    ErrorResponses(at={0: dynamodb.CONFLICT}, conflict_item=0).install(table)
    assert nb["debit_mistaken"](table, wallet_id, 10, "pay-1") == "already applied"
    assert nb["read_balance"](table, wallet_id) == 100
    assert helpers.read_item(table, {"pk": wallet_id, "sk": "req#pay-1"}) is None


@pytest.mark.parametrize("pattern", ["debit_ledger", "debit_mistaken", "debit_idempotent"])
def test_duplicates_and_missing_wallets_are_told_apart(nb, pattern):
    table, wallet_id = wallet(nb)
    assert nb[pattern](table, wallet_id, 10, "pay-1") == "applied"
    assert nb[pattern](table, wallet_id, 10, "pay-1") == "already applied"
    with pytest.raises(helpers.WalletNotFound):
        nb[pattern](table, f"nobody-{uuid.uuid4().hex[:6]}", 10, "pay-1")
    assert nb["read_balance"](table, wallet_id) == 90


# --- the notebook's scenarios ----------------------------------------------------------------------------------

def test_a_500_after_the_write_landed(nb):
    for name, debit in nb["PATTERNS"].items():
        for resender in ("botocore", "app"):
            row = nb["after_a_500"](debit, resender)
            assert row["balance"] == (80 if name == "naive" else 90), (name, resender)
            assert row["answers on the wire"].startswith("500 InternalServerError · ")
    assert nb["after_a_500"](nb["debit_naive"], "botocore")["the application saw"] == "applied"


def test_the_swimlane_comes_from_the_run(nb):
    events = nb["swimlane_of_a_500"](nb["debit_naive"])
    assert [e for e in events["event"] if e.startswith("balance")] == ["balance 90", "balance 80"]
    assert "answers 500 InternalServerError" in events["event"].tolist()


def test_two_payments_racing(nb):
    mistaken = nb["two_payments"](nb["debit_mistaken"])
    assert (mistaken["B answered"], mistaken["balance"], mistaken["B's marker"]) == ("already applied", 90, "none")
    ledger = nb["two_payments"](nb["debit_ledger"])
    assert ledger["B answered"] == "TransactionCanceledException [TransactionConflict, None]"
    assert (ledger["B resent"], ledger["balance after"]) == ("applied", 70)


def test_botocore_backs_off_on_the_virtual_clock(nb):
    attempts, outcome, _, _ = nb["botocore_backoff"]([dynamodb.THROTTLED, dynamodb.THROTTLING])
    assert [a["at (virtual s)"] for a in attempts] == [0.0, 1.0, 3.0] and outcome["balance"] == 90
    attempts, outcome, table, wallet_id = nb["botocore_backoff"]([dynamodb.THROTTLED] * 3)
    assert outcome == {"the application saw": "ProvisionedThroughputExceededException", "balance": 100}
    assert nb["debit_naive"](table, wallet_id, 10, "pay-1") == "applied" and nb["read_balance"](table, wallet_id) == 90


def test_the_resend_evidence(nb):
    matrix = nb["resend_matrix"]
    assert matrix.loc[["500, applied", "lost response"], "naive"].tolist() == [80, 80]
    assert (matrix.drop(["500, applied", "lost response"]) == 90).all().all()
    assert (matrix[["last_request_id", "ledger"]] == 90).all().all()


def test_the_answers_table_is_observed(nb):
    rows = {row[0]: nb["observe"](*row[2:]) for row in nb["PRODUCED"]}
    assert rows["500, the write landed"][1] is True and rows["500, it did not"][1] is False
    assert str(rows["500, the write landed"][0][0]) == str(rows["500, it did not"][0][0]) == "500 InternalServerError"
    assert str(rows["conflict on the marker"][0][0]) == "400 TransactionCanceledException [None, TransactionConflict]"
    assert str(rows["token reused, other amount"][0][0]) == "400 IdempotentParameterMismatchException"
    assert str(rows["balance not a number"][0][0]) == "400 ValidationException"
    assert rows["a lost response"][0][0].status is None
    applied = [name for name, (_, wrote, _) in rows.items() if wrote]
    assert applied == ["same token in flight, it commits", "500, the write landed", "a lost response"]
    assert [name for name, (_, _, earlier) in rows.items() if earlier] == ["a duplicate (own stamp)",
                                                                          "a duplicate (own marker)"]


@pytest.mark.parametrize("seed", [0, 8, 21])
def test_one_schedule_of_mixed_faults(nb, seed):
    rng = random.Random(seed)
    kinds = [None, dynamodb.CONFLICT, dynamodb.ERROR_500_APPLIED, dynamodb.ERROR_500_NOT_APPLIED, dynamodb.THROTTLED,
             dynamodb.THROTTLING]
    schedule = [rng.choice(kinds) for _ in range(8)]
    truth = 200 - 10 * len(schedule)
    assert nb["pay_all"](nb["debit_ledger"], schedule)[-1] == truth
    assert nb["pay_all"](nb["debit_naive"], schedule)[-1] == truth - 10 * schedule.count(dynamodb.ERROR_500_APPLIED)
    assert nb["pay_all"](nb["debit_mistaken"], schedule)[-1] == truth + 10 * schedule.count(dynamodb.CONFLICT)


# --- the exercise -----------------------------------------------------------------------------------------------

def starter(nb):
    namespace = dict(nb)                                 # the notebook's namespace, then the exercise cell
    exec(cells(NB, "exercise")[0], namespace)
    return namespace["my_pay"]


# The solution's PASS: tests/test_exercises_checker.py (test_the_solution_passes_and_is_told_what_held[08]) makes
# the same call and checks what it is told.


def test_the_starter_fails_with_its_counterexample(db, nb):
    verdict = check_bounded_pay(starter(nb), db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    assert "wallet that does not exist" in verdict.message
    assert "your pay answered 'already applied' -- a payment reported done" in verdict.message


def test_the_starter_fixed_for_missing_wallets_still_fails_on_a_conflict(db, nb):
    def reads_the_slots_but_never_resends_a_conflict(table, wallet_id, amount, request_id):
        return nb["debit_ledger"](table, wallet_id, amount, request_id)       # right reading, no resends

    verdict = check_bounded_pay(reads_the_slots_but_never_resends_a_conflict, db=db)
    assert not verdict.passed
    assert "TransactionConflict on the wallet (action 0)" in verdict.message
    assert "your pay raised TransactionCanceledException [TransactionConflict, None] after 1 send" in verdict.message


@pytest.mark.parametrize("name, words", [
    ("debit_naive", "its duplicate"),
    ("debit_mistaken", "TransactionConflict on the wallet (action 0)"),
])
def test_the_notebooks_wrong_handlers_fail(db, nb, name, words):
    verdict = check_bounded_pay(nb[name], db=db)
    assert not verdict.passed and words in verdict.message, verdict.message


def test_a_pay_that_resends_without_bound_or_backoff_fails(db):
    pay = lesson(SOLUTION)
    my_pay = pay["my_pay"]

    def unbounded(*args):
        pay["ATTEMPTS"] = 60
        try:
            return my_pay(*args)
        finally:
            pay["ATTEMPTS"] = 4

    verdict = check_bounded_pay(unbounded, db=db)
    assert not verdict.passed and "bound the resends" in verdict.message, verdict.message

    clock = pay["db"].clock
    real_advance = clock.advance

    def no_backoff(*args):
        clock.advance = lambda seconds: clock.now()
        try:
            return my_pay(*args)
        finally:
            clock.advance = real_advance

    verdict = check_bounded_pay(no_backoff, db=db)
    assert not verdict.passed and "back off between sends" in verdict.message, verdict.message


def test_an_error_is_reported_not_propagated_and_bad_input_must_be_refused(db):
    def broken(*args):
        raise RuntimeError("boom")

    verdict = check_bounded_pay(broken, db=db)
    assert not verdict.passed and "RuntimeError: boom" in verdict.message
    reference = lesson(SOLUTION)["my_pay"]

    def accepts_bad_input(*args):
        try:
            return reference(*args)
        except ValueError:
            return "applied"

    verdict = check_bounded_pay(accepts_bad_input, db=db)
    assert not verdict.passed and "bad input" in verdict.message, verdict.message


def test_the_checker_names_each_answer_it_injects():
    from helpers.exercises import lesson_08

    assert {kind for kind, _, _ in lesson_08.ANSWERS} == set(dynamodb.ALL_KINDS)
    assert dynamodb.IN_PROGRESS in dynamodb.KINDS
    assert dynamodb.ERROR_500_NOT_APPLIED in {kind for kind, _, _ in lesson_08.ANSWERS}
