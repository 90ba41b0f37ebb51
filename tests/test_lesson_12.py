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


# --- 3 · backoff and jitter under contention ----------------------------------------------------------------------

def test_under_contention_full_jitter_does_less_work_and_serves_the_last_caller_sooner(nb):
    _, exponential = nb["contention_for"](nb["exponential"])
    _, jittered = nb["contention_for"](nb["full_jitter"])
    assert jittered["requests (work)"] < exponential["requests (work)"]
    assert jittered["last paid at (s)"] < exponential["last paid at (s)"]
    assert exponential["charged"] == jittered["charged"] == nb["CALLERS"]          # each paid once


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_jitter_wins_for_other_seeds_too_and_a_seed_gives_one_run(nb, seed):
    _, exponential = nb["contention_for"](nb["exponential"], seed=seed)
    _, jittered = nb["contention_for"](nb["full_jitter"], seed=seed)
    assert jittered["requests (work)"] < exponential["requests (work)"]
    assert jittered["last paid at (s)"] < exponential["last paid at (s)"]
    assert nb["contention_for"](nb["full_jitter"], seed=seed)[1] == jittered


def test_no_backoff_spends_every_attempt_in_one_instant(nb):
    per_bucket, summary = nb["contention_for"](nb["no_backoff"])
    assert summary["paid"] == nb["PER_INTERVAL"] and summary["requests (work)"] == per_bucket.iloc[0]


# --- 4 · the storm, and the budget ---------------------------------------------------------------------------------

def test_the_storm_outlives_its_stall_without_a_budget_and_ends_with_one(nb):
    _, unbudgeted = nb["storm_for"](nb["NoBudget"]())
    over_time, budgeted = nb["storm_for"](nb["RetryBudget"]())
    assert unbudgeted["answered in time, last 4 s"] == 0
    assert budgeted["answered in time, last 4 s"] == 4 / nb["EVERY"]
    assert budgeted["requests"] - nb["PAYMENTS"] <= 5 + 0.1 * nb["PAYMENTS"]
    assert over_time["sent"].iloc[-8:].tolist() == over_time["answered in time"].iloc[-8:].tolist()
    assert unbudgeted["of those, charged"] > 0                    # a payment that stopped: unknown, not failed


def test_a_budget_with_no_reserve_and_no_ratio_allows_no_retry(nb):
    _, summary = nb["storm_for"](nb["RetryBudget"](ratio=0, reserve=0))
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
