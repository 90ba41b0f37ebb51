"""Notebook 06's own saved-response handler (and Powertools beside it, from the deep dive 11) under crashes, leases,
duplicates and every failure answer DynamoDB can give (helpers/dynamodb_errors.py), through the notebooks' own
functions. Notebook 11 runs 06's cells in its own namespace, so `lesson(NB11)` holds both: 06's `pay`, `claim`,
`complete`... and 11's Powertools handlers around 06's work."""

from __future__ import annotations

import datetime as real_datetime
import itertools
import json

import pytest
from botocore.exceptions import ClientError

import helpers
from helpers.concurrency import race
from helpers.dynamodb_errors import (
    ANSWERS,
    CONFLICT,
    ERROR_500_APPLIED,
    IN_PROGRESS_APPLIED,
    ErrorResponses,
)
from helpers.exercises import check_fenced_completion
from helpers.fidelity.powertools_clock import POWERTOOLS_MODULES, LambdaContext, use_virtual_time
from helpers.meter import CallCounter
from helpers.scenarios import crash_at as crash_at_step
from helpers.scenarios import scenario
from helpers.services.payment_provider import PaymentProvider, ProviderKeyReused, ProviderUnavailable, watch_charges
from helpers.specification import Crash
from helpers.ttl import sweep

from notebook_code import lesson

NB, NB11 = "06_saved_responses.ipynb", "11_saved_responses_in_depth.ipynb"
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")
_keys = itertools.count()


@pytest.fixture(scope="module")
def nb():
    return lesson(NB11)          # 06's own cells and 11's, in one namespace (as 11 runs them)


def fresh_run(nb):
    """A new key, a wallet of 100 and a new provider; returns the key."""
    nb["provider"] = PaymentProvider(nb["db"].clock)
    helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)
    return f"t06-{next(_keys)}"


def debits(nb):
    return (100 - helpers.read_balance(nb["wallets"], nb["WALLET"])) // nb["PAYLOAD"]["amount"]


@pytest.mark.parametrize("handler", ["pay_powertools"])   # 06's pay: test_concurrency.py, 32 threads x 25 rounds
def test_concurrent_duplicates_one_debit_one_charge(nb, handler):
    key = fresh_run(nb)
    answers = race(lambda i: nb[handler](key, nb["PAYLOAD"], f"inv-{i}"), threads=12)
    assert not [a for a in answers if isinstance(a, BaseException)]
    successes = [a for a in answers if a["status"] == 201]
    assert successes and all(a == successes[0] for a in successes)
    assert all(a == nb["IN_PROGRESS"] for a in answers if a["status"] != 201)
    assert debits(nb) == 1 and nb["provider"].charges == 1
    assert nb[handler](key, nb["PAYLOAD"], "later") == successes[0]


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
def test_scenarios_without_takeover_agree(nb, handler):
    for name in ["retry after success", "different payload", "in-flight duplicate", "crash after debit, retries"]:
        row = scenario(name, nb[handler], nb)
        assert (row["debits"], row["charges"]) == (1, 1), name
    assert scenario("retry after 25 h", nb[handler], nb)["debits"] == 2


def test_fenced_completion_keeps_the_new_owners_response_powertools_does_not(nb):
    assert scenario("lease taken over", nb["pay"], nb)["caller saw"] == " → ".join(["201 ch_0001 inv-2"] * 3)
    key = f"t06-{next(_keys)}"
    row = scenario("lease taken over", nb["pay_powertools"], nb, key=key)
    assert row["caller saw"] == "201 ch_0001 inv-2 → 201 ch_0001 inv-1 → 201 ch_0001 inv-1"   # overwritten
    item = helpers.read_item(nb["powertools_table"], {"pk": "pay-in-lambda#" + _digest(key)})
    assert json.loads(json.loads(item["data"])["body"])["served_by"] == "inv-1"


def _digest(key, caller="shop-a"):
    import hashlib

    return hashlib.md5(json.dumps([caller, key]).encode()).hexdigest()


def test_powertools_outside_lambda_has_no_in_progress_expiry_a_crash_blocks_the_key(nb):
    row = scenario("crash after debit, retries", nb["pay_powertools_outside_lambda"], nb)
    assert row["caller saw"] == "crashed → 409 → 409 → 409" and (row["debits"], row["charges"]) == (1, 0)


def test_the_notebooks_complete_passes_the_exercise_checker(nb):
    """The lesson's `complete` does what the exercise asks: fenced, and True to its own lost-answer retry."""
    def complete(records, key, lease_token, response):
        nb["records"] = records
        return nb["complete"](key, lease_token, response)

    try:
        verdict = check_fenced_completion(complete, db=nb["db"])
    finally:
        nb["records"] = helpers.fresh_table(nb["db"], "idempotency-06")
    assert verdict.passed, verdict


def test_replay_is_byte_identical(nb):
    key = fresh_run(nb)
    first = nb["pay"](key, nb["PAYLOAD"], "inv-1")
    again = nb["pay"](key, nb["PAYLOAD"], "inv-2")
    assert isinstance(first["body"], str) and again["body"].encode() == first["body"].encode()
    assert list(again) == list(first) and repr(again) == repr(first)


def test_a_stale_lease_cannot_complete(nb):
    key = fresh_run(nb)
    assert nb["claim"](key, nb["PAYLOAD"], "old")["lease_token"] == "old"       # ours
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["claim"](key, nb["PAYLOAD"], "new")["lease_token"] == "new"       # taken over
    assert nb["complete"](key, "old", {"status": 201, "body": {}}) is False
    assert nb["complete"](key, "new", {"status": 201, "body": {}}) is True


def test_ending_our_lease_never_ends_the_one_that_took_it_over_nor_touches_a_completed_record(nb):
    """end_lease is fenced on our token and on IN_PROGRESS (tools/mutants.py found its condition untested)."""
    key = fresh_run(nb)
    nb["claim"](key, nb["PAYLOAD"], "old")
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    nb["claim"](key, nb["PAYLOAD"], "new")                      # taken over
    theirs = helpers.read_item(nb["records"], {"pk": key})
    nb["end_lease"](key, "old")                                 # the old attempt's error path, too late
    assert helpers.read_item(nb["records"], {"pk": key}) == theirs
    assert nb["complete"](key, "new", {"status": 201, "body": "{}"}) is True
    completed = helpers.read_item(nb["records"], {"pk": key})
    nb["end_lease"](key, "new")                                 # an error after completing: nothing to end
    assert helpers.read_item(nb["records"], {"pk": key}) == completed


@pytest.mark.parametrize("world", ["too little, then topped up", "closed, then opened again"])
def test_a_stalled_attempt_after_a_refused_takeover_moves_no_money(nb, world):
    """Issue 43's history: inv-1 claims and stalls past its lease; inv-2 takes over and is refused (the wallet holds
    5, or is closed); the world changes (topped up, opened again) and the caller resends (inv-3); inv-1 wakes. The
    refusal is saved and replayed, so no key is freed, and inv-1's fenced debit moves nothing: debited 0, charged 0,
    every answer the first refusal, byte for byte."""
    key, answers = fresh_run(nb), []
    if world.startswith("closed"):
        nb["wallets"].delete_item(Key={"pk": nb["WALLET"]})
    else:
        helpers.open_wallet(nb["wallets"], nb["WALLET"], 5)

    def stall(step):
        if step == "claimed" and not answers:
            nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
            answers.append(nb["pay"](key, nb["PAYLOAD"], "inv-2"))            # takes over, refused
            helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)              # the world changes
            answers.append(nb["pay"](key, nb["PAYLOAD"], "inv-3"))            # the caller resends
    answers.append(nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=stall))       # inv-1 wakes
    assert answers[0]["status"] == (404 if world.startswith("closed") else 402)
    assert all(a == answers[0] for a in answers), answers
    assert (debits(nb), nb["provider"].calls) == (0, 0)


@pytest.mark.parametrize("step", ["claimed", "debited", "charged"])
def test_a_stalled_attempt_whose_lease_was_taken_moves_no_money_and_calls_no_provider_after_waking(nb, step):
    """Issue 43: inv-1 stalls at `step` past its lease; inv-2 takes over and finishes. inv-1, woken at any of its
    hook steps, moves no money and makes no provider call, and answers with inv-2's saved response."""
    key, woke_to = fresh_run(nb), []

    def stall(at):
        if at == step and not woke_to:
            nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
            woke_to.append(nb["pay"](key, nb["PAYLOAD"], "inv-2"))
            woke_to.append((debits(nb), nb["provider"].calls))
    late = nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=stall)
    assert (debits(nb), nb["provider"].calls) == woke_to[1] and debits(nb) == 1   # nothing after waking
    assert late == woke_to[0] and json.loads(late["body"])["served_by"] == "inv-2"


@pytest.mark.parametrize("crash_at", ["claimed", "debited", "charged"])
def test_a_ttl_sweep_at_any_moment_never_makes_an_abandoned_payment_pay_twice(nb, crash_at):
    """An attempt crashes at `crash_at` and its caller leaves for a while; DynamoDB's TTL sweeps at moments after
    every expiry there is (the lease, the retention window, days); then the caller resends. An unfinished record
    carries no TTL attribute: it is never swept, and the payment ends once."""
    key = fresh_run(nb)
    with pytest.raises(Crash):
        nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=crash_at_step(crash_at))
    for wait in (nb["LEASE_SECONDS"] + 1, nb["RETENTION_SECONDS"] + 1, 3 * 24 * 3600):
        nb["db"].clock.advance(wait)
        sweep(nb["records"], nb["now"](), attribute="expires_at")
        assert helpers.read_item(nb["records"], {"pk": f"{nb['CALLER']}#{key}"})["status"] == "IN_PROGRESS"
    assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201
    assert (debits(nb), nb["provider"].charges) == (1, 1)


def test_expired_lease_with_a_different_payload_is_a_mismatch_not_a_takeover(nb):
    key = fresh_run(nb)
    assert nb["claim"](f"{nb['CALLER']}#{key}", nb["PAYLOAD"], "first")["lease_token"] == "first"  # pay's key
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["pay"](key, {"wallet": nb["WALLET"], "amount": 99}, "other") == nb["MISMATCH"]
    assert debits(nb) == 0


def test_missing_wallet_is_a_saved_refusal_and_charges_nothing(nb):
    fresh_run(nb)
    key = f"t06-{next(_keys)}"
    refused = nb["pay"](key, {"wallet": "nobody", "amount": 10}, "inv-1")
    assert refused["status"] == 404 and "does not exist" in refused["body"] and nb["provider"].calls == 0
    helpers.open_wallet(nb["wallets"], "nobody", 100)
    try:
        assert nb["pay"](key, {"wallet": "nobody", "amount": 10}, "inv-2") == refused       # replayed, not paid
    finally:
        nb["wallets"].delete_item(Key={"pk": "nobody"})


# --- DynamoDB's failure answers, injected (issue 10) -------------------------------------------------------
#
# Each handler of the notebook -- ours, Powertools in Lambda, Powertools outside Lambda -- against each answer
# at each write request of one payment (0: the claim, 1: the debit, 2: the completion, ...), the conflict in
# each CancellationReasons slot. After the injected call the caller retries (past the lease) as a client would.
# No false success (a 201 means one debit and one charge), no lost payment (a charge without a debit), never a
# second debit or charge, and every 201 the same response.

HANDLERS = ["pay", "pay_powertools", "pay_powertools_outside_lambda"]
# dynamodb_errors.ANSWERS: a conflict on the debit's last action (-1, the record: slot 1) and its first (0)


def inject(nb, schedule, conflict_item=-1):
    errors = ErrorResponses(at=schedule, conflict_item=conflict_item, impossible="skip")  # in-progress: transactions
    for target in (nb["records"], nb["wallets"], nb["powertools_client"]):
        errors.install(target)
    return errors


def call(nb, handler, key, invocation):
    try:
        return nb[handler](key, nb["PAYLOAD"], invocation)
    except Exception as error:  # noqa: BLE001 - an error is an allowed answer; a false success is not
        return error


def check_invariants(nb, answers):
    debited, charged = debits(nb), nb["provider"].charges
    assert debited <= 1 and charged <= 1, f"twice: {debited} debits, {charged} charges"
    assert charged <= debited, "a charge without a debit: a lost payment"
    successes = [a for a in answers if isinstance(a, dict) and a["status"] == 201]
    if successes:
        assert (debited, charged) == (1, 1), f"a 201 with {debited} debits and {charged} charges: a false success"
        assert all(a == successes[0] for a in successes), successes
    return successes


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("kind, slot", ANSWERS, ids=[f"{k}@{s}" for k, s in ANSWERS])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_every_injected_answer_no_false_success_no_lost_payment(nb, handler, kind, slot, n):
    key = fresh_run(nb)
    errors = inject(nb, {n: kind}, conflict_item=slot)
    try:
        answers = [call(nb, handler, key, "inv-1")]
    finally:
        errors.uninstall()
    check_invariants(nb, answers)
    for i in range(3):                                    # the caller retries, the lease long over
        nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
        answers.append(call(nb, handler, key, f"retry-{i}"))
    successes = check_invariants(nb, answers)
    if handler != "pay_powertools_outside_lambda":       # outside Lambda a stuck record blocks the key (409)
        assert successes, f"never completed: {answers}"
    if handler == "pay":
        assert answers[0] == successes[0], f"our handler resends what DynamoDB did not apply: {answers[0]!r}"


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("kind, slot", ANSWERS, ids=[f"{k}@{s}" for k, s in ANSWERS])
def test_an_answer_that_never_stops_is_an_error_never_a_success_without_effects(nb, handler, kind, slot):
    key = fresh_run(nb)
    errors = inject(nb, {n: kind for n in range(40)}, conflict_item=slot)
    try:
        answers = [call(nb, handler, key, "inv-1")]
    finally:
        errors.uninstall()
    successes = check_invariants(nb, answers)
    if kind not in (ERROR_500_APPLIED, IN_PROGRESS_APPLIED):   # nothing was applied: nothing may have happened
        assert not successes and (debits(nb), nb["provider"].charges) == (0, 0), answers
        assert isinstance(answers[0], Exception) or answers[0]["status"] != 201


@pytest.mark.parametrize("slot", [0, 1])
def test_a_conflict_in_either_slot_is_never_read_as_already_debited(nb, slot):
    fresh_run(nb)
    key = f"shop-a#t06-{next(_keys)}"
    nb["claim"](key, nb["PAYLOAD"], "ours")
    errors = ErrorResponses(at={n: CONFLICT for n in range(nb["ATTEMPTS"])}, conflict_item=slot).install(nb["wallets"])
    try:
        with pytest.raises(ClientError) as raised:
            nb["debit"](key, "ours", nb["WALLET"], 10)
    finally:
        errors.uninstall()
    reasons = [r["Code"] for r in raised.value.response["CancellationReasons"]]
    assert reasons[slot] == "TransactionConflict" and debits(nb) == 0
    assert nb["debit"](key, "ours", nb["WALLET"], 10) is True and debits(nb) == 1    # nothing had been written
    assert nb["debit"](key, "ours", nb["WALLET"], 10) is False and debits(nb) == 1   # the record's own CCF


def test_one_conflict_is_resent_and_charges_once(nb):
    key = fresh_run(nb)
    errors = inject(nb, {1: CONFLICT}, conflict_item=1)
    try:
        answer = nb["pay"](key, nb["PAYLOAD"], "inv-1")
    finally:
        errors.uninstall()
    assert errors.answered == [(1, "TransactWriteItems", CONFLICT)]
    assert answer["status"] == 201 and (debits(nb), nb["provider"].charges) == (1, 1)


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_wallet_id_dynamodb_refuses_charges_nothing_and_saves_nothing(nb, handler):
    """Issue 10: a 2,049-byte wallet ID was answered 201 on DynamoDB Local, charged, and debited nothing."""
    fresh_run(nb)
    key = f"t06-{next(_keys)}"
    before = [t.scan(ConsistentRead=True)["Items"] for t in (nb["records"], nb["powertools_table"])]
    calls_before = nb["provider"].calls
    try:
        answer = nb[handler](key, {"wallet": "w" * 2049, "amount": 10}, "inv-1")
    except Exception as error:  # noqa: BLE001 - BadInput (check_debit), or DynamoDB's own refusal
        answer = error
    assert isinstance(answer, Exception), f"answered {answer!r}"
    assert nb["provider"].calls == calls_before, "the provider was called"
    assert [t.scan(ConsistentRead=True)["Items"] for t in (nb["records"], nb["powertools_table"])] == before


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
def test_provider_down_after_the_debit_then_forward_recovery_with_the_same_key(nb, handler):
    key = fresh_run(nb)
    nb["provider"].fail_next()
    with pytest.raises(ProviderUnavailable):
        nb[handler](key, nb["PAYLOAD"], "inv-1")
    assert (debits(nb), nb["provider"].charges) == (1, 0)            # the debit stays: the case to recover
    record = helpers.read_item(nb["records"], {"pk": f"shop-a#{key}"})
    if handler == "pay":     # the record is kept, its lease ended: the key stays bound to this payload
        assert record["status"] == "IN_PROGRESS" and record["lease_expires_at"] == 0
    else:                    # Powertools deletes its record on an error
        assert record is None
    answer = nb[handler](key, nb["PAYLOAD"], "inv-2")
    assert answer["status"] == 201 and (debits(nb), nb["provider"].charges) == (1, 1)


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
def test_keys_are_scoped_per_caller(nb, handler):
    key = fresh_run(nb)
    a = nb[handler](key, nb["PAYLOAD"], "inv-a", caller="shop-a")
    b = nb[handler](key, nb["PAYLOAD"], "inv-b", caller="shop-b")
    assert json.loads(a["body"])["served_by"] == "inv-a" and json.loads(b["body"])["served_by"] == "inv-b"
    assert debits(nb) == 2 and nb["provider"].charges == 2
    assert nb[handler](key, nb["PAYLOAD"], "inv-c", caller="shop-b") == b


def test_powertools_keyed_by_the_raw_key_leaks_one_callers_response_to_another(nb):
    by_key = nb["powertools_handler"]("t06-by-key", event_key="key")
    key = fresh_run(nb)
    a = by_key(key, nb["PAYLOAD"], "inv-a", caller="shop-a")
    assert by_key(key, nb["PAYLOAD"], "inv-b", caller="shop-b") == a and nb["provider"].charges == 1


@pytest.mark.parametrize("caller", ["", " ", "a#b", None, 7, "c\ud800", "c" * 101])
def test_a_bad_caller_is_refused_and_nothing_is_written(nb, caller):
    key = fresh_run(nb)
    with pytest.raises(helpers.BadInput, match="caller"):
        nb["pay"](key, nb["PAYLOAD"], "inv-1", caller=caller)
    assert nb["provider"].calls == 0 and debits(nb) == 0


# --- helpers added for this lesson -------------------------------------------------------------

def test_provider_replays_a_key_refuses_a_changed_charge_and_forgets_after_the_window():
    clock = helpers.VirtualClock()
    provider = PaymentProvider(clock, key_window_seconds=100)
    first = provider.charge("alice", 10, "k1")
    assert provider.charge("alice", 10, "k1") == first and provider.charges == 1 and provider.calls == 2
    with pytest.raises(ProviderKeyReused):
        provider.charge("alice", 11, "k1")
    clock.advance(100)
    assert provider.charge("alice", 10, "k1") != first and provider.charges == 2


@pytest.mark.parametrize("args, message", [(("alice", 0, "k"), "positive"), (("", 5, "k"), "wallet_id"),
                                           (("alice", 5, ""), "empty"), (("alice", 1.5, "k"), "float")])
def test_provider_bad_input_charges_nothing(args, message):
    provider = PaymentProvider(helpers.VirtualClock())
    with pytest.raises(helpers.BadInput, match=message):
        provider.charge(*args)
    assert provider.charges == 0


def test_provider_keys_up_to_255_characters_down_means_nothing_charged_and_watchers_hear_each_answer():
    provider = PaymentProvider(helpers.VirtualClock())
    heard = []
    with watch_charges(lambda charge, new: heard.append((charge.charge_id, new))):
        provider.charge("alice", 5, "k" * 255)
        provider.charge("alice", 5, "k" * 255)
        provider.fail_next(2)
        for _ in range(2):
            with pytest.raises(ProviderUnavailable):
                provider.charge("alice", 5, "other")
        provider.charge("alice", 5, "other")
    provider.charge("alice", 5, "after")                     # outside the block: not heard
    assert heard == [("ch_0001", True), ("ch_0001", False), ("ch_0002", True)] and provider.charges == 3
    with pytest.raises(helpers.BadInput, match="at most 255"):
        provider.charge("alice", 5, "k" * 256)
    with pytest.raises(helpers.BadInput):
        provider.fail_next(-1)
    with pytest.raises(helpers.BadInput):
        with watch_charges("not callable"):  # type: ignore[arg-type]
            pass


def test_provider_window_must_be_positive():
    with pytest.raises(helpers.BadInput):
        PaymentProvider(helpers.VirtualClock(), key_window_seconds=0)


def test_powertools_reads_the_virtual_clock_only_inside_the_block():
    import importlib

    clock = helpers.VirtualClock(start=1_000)
    modules = [importlib.import_module(m) for m in POWERTOOLS_MODULES]
    with use_virtual_time(clock):
        with use_virtual_time(clock):                                    # nesting is fine
            assert all(m.dt.datetime.now().timestamp() == 1_000 for m in modules)
        assert modules[0].dt.datetime.now().timestamp() == 1_000
        with pytest.raises(RuntimeError):
            with use_virtual_time(helpers.VirtualClock()):
                pass
    assert all(m.dt is real_datetime for m in modules)
    assert real_datetime.datetime.now().year > 2000


def test_powertools_clock_bad_input():
    with pytest.raises(helpers.BadInput):
        with use_virtual_time(123):  # type: ignore[arg-type]
            pass
    with pytest.raises(helpers.BadInput):
        LambdaContext(helpers.VirtualClock(), 0)
    clock = helpers.VirtualClock()
    context = LambdaContext(clock, 30)
    clock.advance(10)
    assert context.get_remaining_time_in_millis() == 20_000
    clock.advance(60)
    assert context.get_remaining_time_in_millis() == 0


def test_callcounter_counts_requests(table):
    counter = CallCounter().install(table)
    table.put_item(Item={"pk": "a"})
    table.get_item(Key={"pk": "a"})
    assert counter.round_trips == 2 and counter.writes == 1
    counter.reset()
    assert counter.round_trips == 0
    with pytest.raises(TypeError):
        CallCounter().install(object())


# --- histories an adversary tried (issue "One specification, one checker"); each failed on the old handler ---


@pytest.mark.parametrize("retry", [{"wallet": "alice", "amount": 99}, {"wallet": "bob", "amount": 10}])
def test_key_reused_with_another_payload_after_a_partial_failure_is_refused(nb, retry):
    """The debit lands, the provider is down; the key then comes back with another amount or wallet.

    The old handler gave the key back (deleted its record, fingerprint and all), and its debit took any marker under
    the key as "already debited": the 99 was charged while the wallet moved 10; with bob's wallet, alice was debited
    and never charged while bob was charged with his wallet untouched."""
    key = fresh_run(nb)
    helpers.open_wallet(nb["wallets"], "bob", 100)
    nb["provider"].fail_next()
    with pytest.raises(ProviderUnavailable):
        nb["pay"](key, nb["PAYLOAD"], "inv-1")
    assert nb["pay"](key, retry, "inv-2") == nb["MISMATCH"]
    assert nb["provider"].charges == 0 and helpers.read_balance(nb["wallets"], "bob") == 100
    first = nb["pay"](key, nb["PAYLOAD"], "inv-3")                     # the first request, sent again, finishes
    assert first["status"] == 201 and (debits(nb), nb["provider"].charges) == (1, 1)
    assert [(c.wallet_id, c.amount) for c in nb["provider"].made] == [("alice", 10)]
    assert nb["pay"](key, retry, "inv-4") == nb["MISMATCH"]


def test_a_debit_under_a_lease_that_was_taken_moves_nothing(nb):
    """Only the record's own failed condition under our lease is 'already debited'; under another lease it is
    LeaseLost, before and after the new owner debited, and nothing moves."""
    key = f"shop-a#{fresh_run(nb)}"
    nb["claim"](key, nb["PAYLOAD"], "first")
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["claim"](key, nb["PAYLOAD"], "second")["lease_token"] == "second"        # taken over
    with pytest.raises(nb["LeaseLost"]):
        nb["debit"](key, "first", "alice", 10)
    assert nb["debit"](key, "second", "alice", 10) is True
    with pytest.raises(nb["LeaseLost"]):
        nb["debit"](key, "first", "alice", 10)
    assert nb["debit"](key, "second", "alice", 10) is False and debits(nb) == 1


def test_two_attempts_with_one_invocation_id_in_one_millisecond_do_not_share_the_lease(nb):
    """Lambda's async retries reuse the request ID, and on the virtual clock every call in a cell shares a
    millisecond: the old token `invocation@ms` let a duplicate with another amount be charged instead of refused."""
    key, seen = fresh_run(nb), []
    def duplicate(step):
        if step == "claimed" and not seen:
            seen.append(nb["pay"](key, {"wallet": "alice", "amount": 99}, "inv-1"))
            seen.append(nb["pay"](key, nb["PAYLOAD"], "inv-1"))
    first = nb["pay"](key, nb["PAYLOAD"], "inv-1", duplicate)
    assert seen == [nb["MISMATCH"], nb["IN_PROGRESS"]] and first["status"] == 201
    assert (debits(nb), nb["provider"].charges) == (1, 1)


def test_eight_threads_with_one_invocation_id_run_the_work_once(nb):
    key, runs = fresh_run(nb), []
    answers = race(lambda i: nb["pay"](key, nb["PAYLOAD"], "inv-1", lambda step: runs.append(step)), threads=8)
    assert runs.count("claimed") == 1, runs
    assert (debits(nb), nb["provider"].charges) == (1, 1)
    assert all(a == nb["IN_PROGRESS"] or a["status"] == 201 for a in answers)


def test_a_replay_is_one_failed_conditional_write(nb):
    key = fresh_run(nb)
    nb["pay"](key, nb["PAYLOAD"], "inv-1")
    counter = CallCounter().install(nb["records"])
    nb["pay"](key, nb["PAYLOAD"], "inv-1")
    assert (counter.round_trips, dict(counter.calls)) == (1, {"PutItem": 1})


@pytest.mark.parametrize("caller_length", [240, 300])
def test_a_key_too_long_for_the_provider_is_refused_before_the_debit(nb, caller_length):
    """The old handler debited, then the provider refused the 256+ character key as bad input: wallet -10, no
    charge, and every retry the same."""
    key = fresh_run(nb)
    caller = "c" * caller_length
    with pytest.raises(helpers.BadInput, match="caller|provider"):
        nb["pay"](key, nb["PAYLOAD"], "inv-1", caller=caller)
    assert debits(nb) == 0 and nb["provider"].calls == 0
    assert helpers.read_item(nb["records"], {"pk": f"{caller}#{key}"}) is None


SHAPES = [({"wallet": "alice"}, "k", "inv-1", "payload"), ({"wallet": "alice", "amount": 10, "note": "x" * 500_000},
          "k", "inv-1", "payload"), ("alice:10", "k", "inv-1", "payload"), (nb_payload := {"wallet": "alice",
          "amount": 10}, "k", None, "invocation"), (nb_payload, "k", "", "invocation"),
          (nb_payload, "k\ud800", "inv-1", "request_id"), ({"wallet": "al\udfffice", "amount": 10}, "k", "inv-1",
          "wallet_id"), (nb_payload, "k", "inv\ud800", "invocation")]


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
@pytest.mark.parametrize("payload, key, invocation, name", SHAPES)
def test_a_badly_shaped_request_is_bad_input_naming_the_field_nothing_written(nb, handler, payload, key, invocation,
                                                                             name):
    key = f"{key}-{fresh_run(nb)}"
    records_before = nb["records"].scan(ConsistentRead=True)["Items"]
    with pytest.raises(helpers.BadInput, match=name):
        nb[handler](key, payload, invocation)
    assert debits(nb) == 0 and nb["provider"].calls == 0
    assert nb["records"].scan(ConsistentRead=True)["Items"] == records_before


# --- issue 33: every clock's edge, the world changing, the limits -- through 06's own pay ---------------------------

def test_a_payment_resent_across_the_windows_edge_debits_and_charges_once(nb):
    """The provider down at t0 and again 5 s before the window ends, then the same request after it: the record,
    unfinished, never expires into a new payment, and its marker is that payment's (key and started_at)."""
    key = fresh_run(nb)
    for wait in (0, nb["RETENTION_SECONDS"] - 5):
        nb["db"].clock.advance(wait)
        nb["provider"].fail_next(1)
        with pytest.raises(ProviderUnavailable):
            nb["pay"](key, nb["PAYLOAD"], "inv-1")
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201
    assert (debits(nb), nb["provider"].charges) == (1, 1)


def test_a_crash_after_the_charge_finished_past_the_providers_window_is_not_charged_again(nb):
    key, charged = fresh_run(nb), []
    def crash(step):
        if step == "charged":
            raise Crash(step)
    with pytest.raises(Crash):
        nb["pay"](key, nb["PAYLOAD"], "inv-1", hook=crash)
    nb["db"].clock.advance(nb["PROVIDER_WINDOW"] - 5)
    with watch_charges(lambda charge, new: charged.append(new)):
        assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201
    assert (debits(nb), nb["provider"].charges, charged) == (1, 1, [])   # looked up, not asked again


def test_a_payment_that_went_through_is_replayed_after_its_wallet_closed(nb):
    key = fresh_run(nb)
    first = nb["pay"](key, nb["PAYLOAD"], "inv-1")
    nb["wallets"].delete_item(Key={"pk": nb["WALLET"]})
    try:
        assert nb["pay"](key, nb["PAYLOAD"], "inv-2") == first
        assert nb["pay"](f"{key}-new", nb["PAYLOAD"], "inv-3")["status"] == 404      # a new key: refused, saved
        assert helpers.read_item(nb["records"], {"pk": f"{nb['CALLER']}#{key}-new"})["status"] == "COMPLETED"
    finally:
        helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)


def test_an_overdraft_is_a_saved_refusal_moving_nothing_and_the_key_stays_bound(nb):
    key = fresh_run(nb)
    refused = nb["pay"](key, {"wallet": nb["WALLET"], "amount": 101}, "inv-1")
    assert refused["status"] == 402 and "holds 100, less than 101" in refused["body"]
    assert debits(nb) == 0 and nb["provider"].charges == 0
    assert nb["pay"](key, {"wallet": nb["WALLET"], "amount": 101}, "inv-2") == refused      # replayed
    assert nb["pay"](key, nb["PAYLOAD"], "inv-3") == nb["MISMATCH"]                          # bound to its payload


@pytest.mark.parametrize("amount, error", [(10**37, helpers.BadInput), (99_999_999 + 1, helpers.BadInput)],
                         ids=["1e37", "max+1"])
def test_an_amount_over_the_limit_is_bad_input_with_nothing_written(nb, amount, error):
    key = fresh_run(nb)
    with pytest.raises(error):
        nb["pay"](key, {"wallet": nb["WALLET"], "amount": amount}, "inv-1")
    assert debits(nb) == 0 and nb["provider"].charges == 0
    assert helpers.read_item(nb["records"], {"pk": f"{nb['CALLER']}#{key}"}) is None   # the key is free
    assert nb["pay"](key, nb["PAYLOAD"], "inv-2")["status"] == 201                      # and takes a payment
