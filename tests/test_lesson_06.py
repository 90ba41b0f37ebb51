"""Notebook 06's own saved-response handler (and Powertools beside it) under crashes, leases and duplicates."""

from __future__ import annotations

import datetime as real_datetime
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from helpers.call_counter import CallCounter
from helpers.concurrency import race
from helpers.payment_provider import PaymentProvider, ProviderKeyReused
from helpers.powertools_clock import POWERTOOLS_MODULES, LambdaContext, virtual_time
from notebook_code import lesson

NB = "06_saved_responses.ipynb"
_keys = itertools.count()


@pytest.fixture(scope="module")
def nb():
    return lesson(NB)


def fresh_run(nb):
    """A new key, a wallet of 100 and a new provider; returns the key."""
    nb["provider"] = PaymentProvider(nb["db"].clock)
    helpers.open_wallet(nb["wallets"], nb["WALLET"], 100)
    return f"t06-{next(_keys)}"


def debits(nb):
    return (100 - helpers.read_balance(nb["wallets"], nb["WALLET"])) // nb["PAYLOAD"]["amount"]


STEPS = ["claimed", "debited", "charged"]
actions = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.sampled_from([None, *STEPS])),   # None: runs through; else crashes there
        st.tuples(st.just("stall"), st.sampled_from(STEPS)),           # stalls past its lease; a retry runs meanwhile
        st.tuples(st.just("duplicate"), st.sampled_from(STEPS)),       # a duplicate arrives while it is in flight
        st.tuples(st.just("mismatch"), st.none()),
        st.tuples(st.just("advance"), st.integers(0, 45)),
    ),
    max_size=12,
)


@settings(max_examples=50)
@given(schedule=actions)
def test_property_one_debit_one_charge_every_replay_the_first_response(nb, schedule):
    key, clock, pay = fresh_run(nb), nb["db"].clock, nb["pay"]
    invocations = (f"inv-{i}" for i in itertools.count())
    answers, called = [], False

    def call(hook=lambda step: None):
        try:
            answers.append(pay(key, nb["PAYLOAD"], next(invocations), hook))
        except nb["Crash"]:
            pass

    def interrupt_at(at, stall):
        done = []

        def hook(step):
            if step == at and not done:
                done.append(step)
                if stall:
                    clock.advance(nb["LEASE_SECONDS"] + 1)
                call()
        return hook

    for kind, arg in schedule:
        if kind == "call":
            call(nb["crash_at"](arg) if arg else (lambda step: None))
            called = True
        elif kind in ("stall", "duplicate"):
            call(interrupt_at(arg, stall=kind == "stall"))
            called = True
        elif kind == "mismatch" and called:
            assert pay(key, {"wallet": nb["WALLET"], "amount": 99}, next(invocations)) == nb["MISMATCH"]
        elif kind == "advance":
            clock.advance(arg)
        assert debits(nb) <= 1 and nb["provider"].charges <= 1
    clock.advance(nb["LEASE_SECONDS"] + 1)     # whatever crashed, its lease is over now
    call()
    successes = [a for a in answers if a["status"] == 201]
    assert all(a == nb["IN_PROGRESS"] for a in answers if a["status"] != 201)
    assert successes and all(a == successes[0] for a in successes)      # every replay: the first response
    assert debits(nb) == 1 and nb["provider"].charges == 1               # finished exactly once


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
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
        row = nb["scenario"](name, nb[handler])
        assert (row["debits"], row["charges"]) == (1, 1), name
    assert nb["scenario"]("retry after 25 h", nb[handler])["debits"] == 2


def test_fenced_completion_keeps_the_new_owners_response_powertools_does_not(nb):
    assert nb["scenario"]("lease taken over", nb["pay"])["caller saw"] == " → ".join(["201 ch_0001 inv-2"] * 3)
    row = nb["scenario"]("lease taken over", nb["pay_powertools"], key="t06-powertools-takeover")
    assert row["caller saw"] == "201 ch_0001 inv-2 → 201 ch_0001 inv-1 → 201 ch_0001 inv-1"
    assert nb["powertools_record"]("t06-powertools-takeover")["served_by"] == "inv-1"


def test_a_stale_lease_cannot_complete(nb):
    key = fresh_run(nb)
    assert nb["claim"](key, nb["PAYLOAD"], "old") is None
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["claim"](key, nb["PAYLOAD"], "new") is None              # taken over
    assert nb["complete"](key, "old", {"status": 201, "body": {}}) is False
    assert nb["complete"](key, "new", {"status": 201, "body": {}}) is True


def test_expired_lease_with_a_different_payload_is_a_mismatch_not_a_takeover(nb):
    key = fresh_run(nb)
    assert nb["claim"](key, nb["PAYLOAD"], "first") is None
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    assert nb["pay"](key, {"wallet": nb["WALLET"], "amount": 99}, "other") == nb["MISMATCH"]
    assert debits(nb) == 0


BAD = [({"wallet": "alice", "amount": -1}, "k", "positive"), ({"wallet": "alice", "amount": 2.5}, "k", "float"),
       ({"wallet": "", "amount": 10}, "k", "wallet_id"), ({"wallet": "alice", "amount": 10}, "", "empty"),
       ({"wallet": "alice", "amount": 10}, "x" * 37, "at most 36")]


@pytest.mark.parametrize("handler", ["pay", "pay_powertools"])
@pytest.mark.parametrize("payload, key, message", BAD)
def test_bad_input_is_refused_and_nothing_is_written(nb, handler, payload, key, message):
    fresh_run(nb)
    before = [t.scan(ConsistentRead=True)["Items"] for t in (nb["wallets"], nb["records"], nb["powertools_table"])]
    with pytest.raises(helpers.BadInput, match=message):
        nb[handler](key, payload, "inv-1")
    assert [t.scan(ConsistentRead=True)["Items"] for t in (nb["wallets"], nb["records"], nb["powertools_table"])] == before
    assert nb["provider"].calls == 0


def test_missing_wallet_is_an_error_and_charges_nothing(nb):
    fresh_run(nb)
    with pytest.raises(helpers.WalletNotFound):
        nb["pay"](f"t06-{next(_keys)}", {"wallet": "nobody", "amount": 10}, "inv-1")
    assert nb["provider"].calls == 0


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


def test_provider_window_must_be_positive():
    with pytest.raises(helpers.BadInput):
        PaymentProvider(helpers.VirtualClock(), key_window_seconds=0)


def test_powertools_reads_the_virtual_clock_only_inside_the_block():
    import importlib

    clock = helpers.VirtualClock(start=1_000)
    modules = [importlib.import_module(m) for m in POWERTOOLS_MODULES]
    with virtual_time(clock):
        with virtual_time(clock):                                    # nesting is fine
            assert all(m.dt.datetime.now().timestamp() == 1_000 for m in modules)
        assert modules[0].dt.datetime.now().timestamp() == 1_000
        with pytest.raises(RuntimeError):
            with virtual_time(helpers.VirtualClock()):
                pass
    assert all(m.dt is real_datetime for m in modules)
    assert real_datetime.datetime.now().year > 2000


def test_powertools_clock_bad_input():
    with pytest.raises(helpers.BadInput):
        with virtual_time(123):  # type: ignore[arg-type]
            pass
    with pytest.raises(helpers.BadInput):
        LambdaContext(helpers.VirtualClock(), 0)
    clock = helpers.VirtualClock()
    context = LambdaContext(clock, 30)
    clock.advance(10)
    assert context.get_remaining_time_in_millis() == 20_000
    clock.advance(60)
    assert context.get_remaining_time_in_millis() == 0


def test_call_counter(table):
    counter = CallCounter().watch(table)
    table.put_item(Item={"pk": "a"})
    table.get_item(Key={"pk": "a"})
    assert counter.round_trips == 2 and counter.writes == 1
    counter.reset()
    assert counter.round_trips == 0
    with pytest.raises(TypeError):
        CallCounter().watch(object())
