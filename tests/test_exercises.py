"""The exercise checkers: they pass the reference solution and catch wrong answers with a useful message."""

from __future__ import annotations

from helpers.exercises import check_retry_safe_debit
from notebook_code import cells, lesson

NB = "03_request_id_increments.ipynb"


def test_the_reference_solution_passes(db):
    solution = lesson("solutions/03_request_id_increments_solution.ipynb")
    verdict = check_retry_safe_debit(solution["my_debit"], db=db)
    assert verdict.passed, verdict


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
