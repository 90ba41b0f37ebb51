"""The exercise checkers: they pass the reference solution and catch wrong answers with a useful message."""

from __future__ import annotations

from helpers.exercises import check_retry_safe_debit

from notebook_code import cells, exercise_solution, exercise_starter, lesson

NB = "03_request_id_increments.ipynb"


# The reference solutions' PASS is asserted where the same call is made with more to check: 00-05 and 08 in
# tests/test_exercises_checker.py (told what held), 06, 07, 09 and 10 in tests/test_exercises_specification.py.
# (Each was made twice before; the checkers are seeded, so the second call only repeated the first.)


def test_the_lessons_idempotent_debit_passes(db):
    assert check_retry_safe_debit(lesson(NB)["debit_idempotent"], db=db).passed


def test_the_naive_debit_fails_with_a_counterexample(db):
    verdict = check_retry_safe_debit(lesson(NB)["debit_naive"], db=db)
    assert not verdict.passed
    assert "lost" in verdict.message and "expected balance 80" in verdict.message


def test_the_exercise_starter_fails_with_a_counterexample(db):
    namespace = lesson(NB)
    exec(cells(NB, "exercise")[0], namespace)
    verdict = check_retry_safe_debit(namespace["my_debit"], db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    assert "your debit left" in verdict.message


def test_a_debit_that_accepts_bad_input_fails(db):
    nb = lesson(NB)

    def no_validation(table, wallet_id, amount, request_id):
        if amount != amount or isinstance(amount, float):  # accepts bad input silently
            return "applied"
        return nb["debit_idempotent"](table, wallet_id, amount, request_id)

    verdict = check_retry_safe_debit(no_validation, db=db)
    assert not verdict.passed and "bad input" in verdict.message


def test_a_debit_that_raises_is_reported_not_propagated(db):
    def broken(table, wallet_id, amount, request_id):
        raise RuntimeError("boom")

    verdict = check_retry_safe_debit(broken, db=db)
    assert not verdict.passed and "RuntimeError: boom" in verdict.message


# --- the exercises of notebooks 00-06 (03's are above) --------------------------------------------
# Each checker passes the reference solution, fails the exercise starter with its counterexample, fails the
# notebook's own naive function, reports (never propagates) an error, and fails a function that accepts bad input.

import pytest  # noqa: E402

from helpers.exercises import (  # noqa: E402
    check_fenced_completion,
    check_guarded_debit,
    check_ledger_debit,
    check_order_safe_update,
    check_payment_handler,
    check_sign_up,
)

EXERCISES = {
    # lesson: (notebook, the reader's function, checker, what the starter's counterexample says, "accepted" answer)
    "00": ("00_why_retries_happen.ipynb", "my_handler", check_payment_handler,
           ["botocore's own retries on", "write requests [0, 3] lost (seed 1)",
            "expected balance 70, your handler left 50"],
           {"status": "paid"}),
    "01": ("01_fixed_value_updates.ipynb", "my_set_status", check_order_safe_update,
           ["packed's retry arrived late", "answered 'applied' and left packed (seq 2)"], "applied"),
    "02": ("02_conditional_creates.ipynb", "my_sign_up", check_sign_up,
           ["mallory@example.com signed up as 'alice' too", "your sign-up answered 'already created'"], "created"),
    "04": ("04_where_it_stops.ipynb", "my_debit", check_guarded_debit,
           ["lost, seed 3", "payment 2, sent when the balance was 30", "your debit answered 'insufficient funds'"],
           "applied"),
    "05": ("05_remembering_every_request.ipynb", "my_debit", check_ledger_debit,
           ["A → B → C → A → B", "lost, seed 1): expected balance 30, your debit left 40"], "applied"),
    "06": ("06_saved_responses.ipynb", "my_complete", check_fenced_completion,
           ["inv-2 took over", "your completion answered True", "response served by inv-1"], True),
}
by_lesson = pytest.mark.parametrize("n", sorted(EXERCISES))


def solution(n):
    notebook, name, *_ = EXERCISES[n]
    return exercise_solution(notebook, name)


def starter(n):
    notebook, name, *_ = EXERCISES[n]
    return exercise_starter(notebook, name)


@by_lesson
def test_each_exercise_starter_fails_with_its_counterexample(db, n):
    verdict = EXERCISES[n][2](starter(n), db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    for words in EXERCISES[n][3]:
        assert words in verdict.message, verdict.message


@by_lesson
def test_an_error_is_reported_not_propagated(db, n):
    def broken(*args):
        raise RuntimeError("boom")

    verdict = EXERCISES[n][2](broken, db=db)
    assert not verdict.passed and "RuntimeError: boom" in verdict.message


@by_lesson
def test_a_function_that_accepts_bad_input_fails(db, n):
    reference, accepted = solution(n), EXERCISES[n][4]

    def accepts_bad_input(*args):
        try:
            return reference(*args)
        except ValueError:
            return accepted                                 # swallows the error: bad input looks like success

    verdict = EXERCISES[n][2](accepts_bad_input, db=db)
    assert not verdict.passed
    assert ("bad input" if n != "06" else "empty lease token") in verdict.message, verdict.message


def test_00_a_handler_that_calls_a_missing_wallet_paid_fails(db):
    """The condition attribute_exists(balance) fails for a missing wallet too: that is no duplicate."""
    def missing_wallet_is_paid(table, request):
        try:
            return solution("00")(table, request)
        except LookupError:
            return {"status": "paid"}

    verdict = check_payment_handler(missing_wallet_is_paid, db=db)
    assert not verdict.passed and "wallet that does not exist" in verdict.message, verdict.message
    assert "your handler answered {'status': 'paid'}" in verdict.message


def test_00_the_naive_debit_fails_when_a_payment_arrives_twice(db):
    debit = lesson("00_why_retries_happen.ipynb")["debit"]
    verdict = check_payment_handler(lambda table, request: debit(table, request["wallet"], request["amount"]), db=db)
    assert not verdict.passed and "each delivered twice" in verdict.message
    assert "expected balance 70, your handler left 40" in verdict.message


def test_01_the_fixed_value_updates_fail(db):
    set_status = lesson("01_fixed_value_updates.ipynb")["set_status"]
    verdict = check_order_safe_update(lambda table, order, status, seq: set_status(table, order, status), db=db)
    assert not verdict.passed and "expected shipped (seq 3), your update left shipped (seq 1)" in verdict.message

    def set_status_and_seq(table, order_id, status, seq):      # the same fixed-value write, seq included
        table.update_item(Key={"pk": order_id}, UpdateExpression="SET #status = :status, seq = :seq",
                          ExpressionAttributeNames={"#status": "status"},
                          ExpressionAttributeValues={":status": status, ":seq": seq})
        return "applied"

    verdict = check_order_safe_update(set_status_and_seq, db=db)
    assert not verdict.passed and "packed's retry arrived late" in verdict.message
    assert "answered 'applied' and left packed (seq 2)" in verdict.message


def test_02_create_once_tells_mallory_she_has_an_account(db):
    create_once = lesson("02_conditional_creates.ipynb")["create_once"]
    verdict = check_sign_up(lambda table, username, email: create_once(table, username, email, 1), db=db)
    assert not verdict.passed and "your sign-up answered 'already created'" in verdict.message


def test_04_the_notebooks_debits(db):
    nb = lesson("04_where_it_stops.ipynb")
    assert check_guarded_debit(nb["debit_guarded"], db=db).passed
    ambiguous = check_guarded_debit(nb["debit_guarded_ambiguous"], db=db)
    assert not ambiguous.passed and "your debit answered 'ConditionalCheckFailedException'" in ambiguous.message
    unguarded = check_guarded_debit(nb["debit_idempotent"], db=db)
    assert not unguarded.passed and "payment 3, sent when the balance was 10" in unguarded.message


def test_05_last_request_id_fails_the_aba_order_and_the_ledger_passes(db):
    nb = lesson("05_remembering_every_request.ipynb")
    verdict = check_ledger_debit(nb["debit_idempotent"], db=db)
    assert not verdict.passed and "A → B → A" in verdict.message
    assert "expected balance 70, your debit left 60" in verdict.message
    assert check_ledger_debit(nb["debit_ledger"], db=db).passed
