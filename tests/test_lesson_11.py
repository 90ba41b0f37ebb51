"""Notebook 11, the deep dive after 06: it runs 06's own cells (not a copy) and only adds to them.

The behaviour it shows -- Powertools side by side, keys per caller, the tempting variants, the checker -- is tested
through the shared namespace in tests/test_lesson_06.py and tests/test_specification.py."""

from __future__ import annotations

import itertools
import json

import nbformat
import pytest

import helpers
from helpers.services.payment_provider import PaymentProvider, ProviderUnavailable
from helpers.specification import Crash
from helpers.ttl import sweep

from notebook_code import NOTEBOOKS, lesson

NB06, NB11 = "06_saved_responses.ipynb", "11_saved_responses_in_depth.ipynb"
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")


@pytest.fixture(scope="module")
def nb():
    return lesson(NB11)


def test_06s_handler_is_loaded_from_06s_cells_not_copied(nb):
    for name in ("pay", "claim", "debit", "set_lease", "complete", "end_lease", "do_work", "check_request"):
        assert nb[name].__code__.co_filename == f"{NB06}[lesson]", name
    sources = "\n".join(c.source for c in nbformat.read(NOTEBOOKS / NB11, as_version=4).cells if c.cell_type == "code")
    for name in ("pay", "claim", "debit", "set_lease", "complete", "end_lease", "do_work"):
        assert f"def {name}(" not in sources, f"11 defines its own {name}: it must use 06's"


def test_powertools_runs_06s_own_work(nb):
    """Both handlers charge the provider of one namespace: the checker and the scenarios see one provider."""
    assert nb["pay_powertools"].__globals__ is nb["pay"].__globals__
    assert nb["do_work"].__globals__ is nb and nb["keyed_work"].__globals__ is nb


def test_a_swap_lasts_only_for_its_block(nb):
    from helpers.lessons import swapped

    kept = nb["end_lease"]
    with pytest.raises(RuntimeError), swapped(nb, end_lease=lambda key, token: None):
        assert nb["end_lease"] is not kept
        raise RuntimeError("the block ends in an error")
    assert nb["end_lease"] is kept
    with pytest.raises(KeyError, match="no nonesuch"), swapped(nb, nonesuch=1):
        pass


# --- issue 35: a payment whose caller left, finished by 11's recovery worker -------------------------------------

_keys = itertools.count(1)


def left_after_the_debit(nb, crash_at=None):
    """A new key, a wallet of 100 and a new provider; `pay` debits, then the provider is down (or the attempt crashes
    at `crash_at`) and its caller never sends it again. Returns the key."""
    nb["provider"] = PaymentProvider(nb["db"].clock)
    helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)
    key = f"t11-{next(_keys)}"

    def hook(step):
        if step == crash_at:
            raise Crash(step)
    if crash_at is None:
        nb["provider"].fail_next()
    with pytest.raises((ProviderUnavailable, Crash)):
        nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=hook)
    return key


def balance(nb):
    return helpers.read_balance(nb["wallets"], nb["WALLET"])


def record(nb, key):
    return helpers.read_item(nb["records"], {"pk": f"{nb['CALLER']}#{key}"})


def charges(nb, key):
    """The provider's charges for this payment (the worker also finishes other tests' departed payments)."""
    return sum(1 for c in nb["provider"].made if c.idempotency_key.startswith(f"{nb['CALLER']}#{key}@"))


def past_the_grace(nb):
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + nb["RECOVERY_GRACE_SECONDS"] + 1)


@pytest.mark.parametrize("crash_at", [None, "debited", "charged"], ids=["provider-down", "crash-after-debit",
                                                                        "crash-after-charge"])
def test_without_the_worker_a_departed_callers_payment_stays_half_done_with_it_it_is_finished(nb, crash_at):
    key = left_after_the_debit(nb, crash_at)
    charged = 1 if crash_at == "charged" else 0
    nb["db"].clock.advance(25 * 3600)                      # a day: nobody came back, and nothing finished it
    assert (balance(nb), charges(nb, key), record(nb, key)["status"]) == (90, charged, "IN_PROGRESS")
    assert "expires_at" not in record(nb, key)             # unfinished: no TTL attribute, so TTL never deletes it
    sweep(nb["records"], nb["now"](), attribute="expires_at")
    assert record(nb, key)["status"] == "IN_PROGRESS"
    left = left_after_the_debit(nb, crash_at)
    past_the_grace(nb)
    assert nb["recover_unfinished"]()[f"{nb['CALLER']}#{left}"] == "finished"
    assert (balance(nb), charges(nb, left), record(nb, left)["status"]) == (90, 1, "COMPLETED")
    assert f"{nb['CALLER']}#{left}" not in nb["recover_unfinished"]()            # run twice: nothing to do
    assert (balance(nb), charges(nb, left)) == (90, 1)
    back = nb["pay"](left, nb["PAYLOAD"], "inv-2")                                # the caller comes back: a replay
    assert back["status"] == 201 and json.loads(back["body"])["served_by"] == "recovery"
    assert (balance(nb), charges(nb, left)) == (90, 1)


def test_the_worker_meeting_the_provider_down_ends_its_lease_says_failed_and_the_next_run_finishes(nb):
    """finish_forward's own error path (tools/mutants.py found it untested): the provider down during recovery is
    'failed', not an exception that stops the worker, and the lease it took is ended, so the next run can finish."""
    left = left_after_the_debit(nb)
    past_the_grace(nb)
    nb["provider"].fail_next()
    assert nb["recover_unfinished"]()[f"{nb['CALLER']}#{left}"] == "failed"
    assert (balance(nb), charges(nb, left), record(nb, left)["lease_expires_at"]) == (90, 0, 0)   # lease ended
    assert nb["recover_unfinished"]()[f"{nb['CALLER']}#{left}"] == "finished"
    assert (balance(nb), charges(nb, left), record(nb, left)["status"]) == (90, 1, "COMPLETED")


def test_a_payment_with_no_debit_is_left_for_its_caller(nb):
    key = left_after_the_debit(nb, crash_at="claimed")
    past_the_grace(nb)
    assert nb["recover_unfinished"]()[f"{nb['CALLER']}#{key}"] == "nothing debited"
    assert (balance(nb), charges(nb, key), record(nb, key)["status"]) == (100, 0, "IN_PROGRESS")
    assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201 and (balance(nb), charges(nb, key)) == (90, 1)


def test_a_resend_arriving_mid_worker_is_told_in_progress_then_gets_the_workers_answer(nb):
    key, seen = left_after_the_debit(nb), []
    past_the_grace(nb)

    def resend(step):
        if step == "debited":
            seen.append(nb["pay"](key, nb["PAYLOAD"], "inv-2"))
    assert nb["recover_unfinished"](hook=resend)[f"{nb['CALLER']}#{key}"] == "finished"
    assert seen == [nb["IN_PROGRESS"]]                                           # the worker holds the lease
    finished = nb["pay"](key, nb["PAYLOAD"], "inv-3")
    assert finished == json.loads(record(nb, key)["response"]) and (balance(nb), charges(nb, key)) == (90, 1)


def test_a_caller_who_resends_before_the_worker_takes_over_finishes_it_and_the_worker_does_nothing(nb):
    key = left_after_the_debit(nb)
    past_the_grace(nb)
    stale = [r for r in nb["unfinished_payments"]() if r["pk"] == f"{nb['CALLER']}#{key}"]   # the worker's scan...
    assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201                 # ... then the caller comes back
    assert nb["finish_forward"](stale[0]) == "taken"                               # fenced: the old token is gone
    assert (balance(nb), charges(nb, key)) == (90, 1)


def test_a_stalled_attempt_that_resumes_after_the_worker_finished_charges_nothing_and_answers_the_same(nb):
    """Not dead, only stalled past its lease: the worker finishes the payment; the attempt resumes, charges with the
    same provider key (a replay) and its fenced completion fails: it answers with the worker's saved response."""
    nb["provider"] = PaymentProvider(nb["db"].clock)
    helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)
    key, done = f"t11-{next(_keys)}", []

    def stall(step):
        if step == "debited":
            past_the_grace(nb)
            done.append(nb["recover_unfinished"]()[f"{nb['CALLER']}#{key}"])
    answer = nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=stall)
    assert done == ["finished"] and answer == json.loads(record(nb, key)["response"])
    assert json.loads(answer["body"])["served_by"] == "recovery" and (balance(nb), charges(nb, key)) == (90, 1)


def test_the_window_rule_a_key_past_the_providers_window_is_never_charged_again(nb):
    """Issue 35, step 2: the charge made, then a crash; the worker only runs after the provider forgot the key (its
    window, from the charge). Past PROVIDER_WINDOW - MARGIN the charge is looked up: no request reaches the
    provider's charge with that key again, and the payment completes with the first charge's answer."""
    key, requests = left_after_the_debit(nb, crash_at="charged"), []
    nb["db"].clock.advance(nb["PROVIDER_WINDOW"] + 60)
    provider, charge = nb["provider"], nb["provider"].charge

    def watched(wallet, amount, idempotency_key):
        requests.append(idempotency_key)
        return charge(wallet, amount, idempotency_key)
    provider.charge = watched
    assert nb["recover_unfinished"]()[f"{nb['CALLER']}#{key}"] == "finished"
    assert requests == [] and (balance(nb), charges(nb, key)) == (90, 1)
    assert json.loads(json.loads(record(nb, key)["response"])["body"])["charge"] == provider.made[0].charge_id


@pytest.mark.parametrize("step", ["debited", "charged"])
def test_a_stalled_worker_whose_lease_was_taken_moves_no_money_and_calls_no_provider_after_waking(nb, step):
    """Issue 43: the worker stalls at `step` past its lease, the caller comes back and finishes the payment; the
    worker, woken, moves no money, makes no provider call, and says 'taken'."""
    key, woke_to = left_after_the_debit(nb), []
    past_the_grace(nb)

    def stall(at):
        if at == step and not woke_to:
            nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
            assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201       # the caller takes over, finishes
            woke_to.append((balance(nb), nb["provider"].calls, record(nb, key)))
    assert nb["recover_unfinished"](hook=stall)[f"{nb['CALLER']}#{key}"] == "taken"
    assert (balance(nb), nb["provider"].calls, record(nb, key)) == woke_to[0]    # nothing after waking
    assert (balance(nb), charges(nb, key)) == (90, 1)
