"""Notebook 12's own callers, run against the table: where the key is made, how retries multiply, what jitter and a
budget do to the load, botocore's quota; and its exercise's checker (the learners' answers: test_learners.py)."""

from __future__ import annotations

import pytest

from helpers.dynamodb_errors import THROTTLING
from helpers.exercises.lesson_12 import check_careful_client

from notebook_code import cells, lesson

NB = "12_the_callers_half.ipynb"


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


# --- 1 · the key -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key_for,double,restart", [("key_per_press", 60, 60), ("key_in_memory", 30, 60),
                                                    ("key_saved", 30, 30)])
def test_only_a_saved_key_charges_once_for_a_double_press_and_a_restart(nb, key_for, double, restart):
    assert nb["double_press"](nb[key_for])[1] == double
    assert nb["restart_and_press"](nb[key_for])[1] == restart


# --- 2 and 5 · layers, and botocore's quota ----------------------------------------------------------------------

def test_retries_multiply_across_layers_counted_at_the_table(nb):
    assert [nb["requests_for_clicks"](a, s, b)[0] for a, s, b in [(2, 1, 1), (2, 2, 1), (2, 2, 3)]] == [2, 4, 12]


def test_botocores_quota_caps_its_own_layer_only(nb):
    # 36 requests: 27 botocore retries at 14 each (378 of 500); then 8 more; then the app's and service's 3 x 3.
    assert nb["requests_for_clicks"](3, 3, 4, clicks=4) == [36, 17, 9, 9]


def test_a_throttled_retry_costs_less_of_the_quota(nb):
    quota = nb["retries_before_the_quota_runs_out"](THROTTLING, calls=36)
    assert quota["botocore's retries"] == 100 and quota["first call refused a retry"] == 34


# --- 3 · backoff and jitter ----------------------------------------------------------------------------------------

def test_backoff_without_jitter_keeps_callers_in_step_and_jitter_breaks_it(nb):
    _, exponential = nb["outage_for"](nb["exponential"])
    _, jittered = nb["outage_for"](nb["full_jitter"])
    assert exponential["busiest 0.1 s after the start"] == nb["CALLERS"]          # every retry, all at once
    assert jittered["busiest 0.1 s after the start"] < nb["CALLERS"] * 0.6
    assert exponential["charged"] == jittered["charged"] == nb["CALLERS"]          # each paid once


def test_no_backoff_spends_every_attempt_inside_the_outage(nb):
    per_bucket, summary = nb["outage_for"](nb["no_backoff"])
    assert summary["gave up"] == nb["CALLERS"] and summary["requests"] == 8 * nb["CALLERS"]
    assert per_bucket[per_bucket.index >= 0.8].sum() == 0


def test_jitter_depends_on_the_seed_not_on_luck(nb):
    assert nb["outage_for"](nb["full_jitter"], seed=5)[1] == nb["outage_for"](nb["full_jitter"], seed=5)[1]


# --- 4 · the budget ------------------------------------------------------------------------------------------------

def test_a_retry_budget_caps_the_retries_and_costs_failed_payments(nb):
    _, unbudgeted = nb["service_for"](nb["NoBudget"]())
    _, budgeted = nb["service_for"](nb["RetryBudget"]())
    payments = nb["PAYMENTS"]
    assert budgeted["requests"] - payments <= 5 + 0.1 * payments
    assert unbudgeted["requests"] - payments > 2 * (budgeted["requests"] - payments)
    assert budgeted["failed"] >= unbudgeted["failed"]


def test_a_budget_with_no_reserve_and_no_ratio_allows_no_retry(nb):
    _, summary = nb["service_for"](nb["RetryBudget"](ratio=0, reserve=0))
    assert summary["requests"] == nb["PAYMENTS"]


# --- the exercise --------------------------------------------------------------------------------------------------

def test_the_exercise_starter_is_not_yet_at_the_restart(nb, db):
    namespace = dict(nb)
    exec(cells(NB, "exercise")[0], namespace)
    verdict = check_careful_client(namespace["my_pay"], db=db)
    assert not verdict.passed and "restarted" in verdict.message and "charged 20" in verdict.message


def test_the_reference_solution_passes(db):
    solution = lesson("solutions/12_the_callers_half_solution.ipynb")
    verdict = check_careful_client(solution["my_pay"], db=db)
    assert verdict.passed, verdict


def test_the_checker_reports_an_error_and_refuses_a_non_function(db):
    def broken(send, order, saved, budget, rng):
        raise RuntimeError("boom")

    verdict = check_careful_client(broken, db=db)
    assert not verdict.passed and "RuntimeError: boom" in verdict.message
    verdict = check_careful_client("my_pay", db=db)
    assert not verdict.passed and "expected your function" in verdict.message


def test_a_caller_that_yields_nonsense_is_told_so(db):
    def nonsense(send, order, saved, budget, rng):
        key = saved.setdefault(order, "k-" + order)
        try:
            return send(key)
        except Exception:
            yield "soon"
        return "gave up"

    verdict = check_careful_client(nonsense, db=db)
    assert not verdict.passed and "yield seconds" in verdict.message, verdict.message
