"""Notebook 05's own functions: the request ledger, ClientRequestToken, and what each pattern costs.

Property-based tests generate schedules of duplicate and reordered deliveries and lost responses:
last_request_id double-applies exactly in the ABA shape; with botocore resending lost responses itself, the
ledger and the token still apply each request once (without botocore's resends, under bursts too: the
specification's checker for the ledger, test_properties.py for the token, test_concurrency.py for both).
"""

from __future__ import annotations

import time
import uuid

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from harness.resends import answer_then_resend
from harness.wallets import check_last_request_id, deliver, module_fixtures, new_wallet, schedules, truth
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers
from helpers import LostResponses
from helpers.concurrency import race
from helpers.dynamodb_errors import ANSWERS as ALL_ANSWERS
from helpers.dynamodb_errors import CONFLICT, KINDS, ErrorResponses
from helpers.meter import CapacityMeter
from helpers.ttl import sweep

from notebook_code import cells

NB = "05_remembering_every_request.ipynb"
nb, name = module_fixtures(NB, "test-05")   # the notebook's own code; one table for the module
SETTINGS = settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
PATTERNS = ["debit_ledger", "debit_token"]


# --- last_request_id fails in the ABA shape; the ledger and the token do not, botocore's own resends included ---
# (That the ledger and the token apply each request once under duplicates, reorderings, lost responses and
# concurrent copies is the specification's checker's (the ledger), test_properties.py's (the token) and
# test_concurrency.py's.)

@SETTINGS
@given(schedule=schedules)
def test_property_last_request_id_fails_exactly_in_the_aba_shape(nb, db, name, schedule):
    check_last_request_id(nb, db, name, schedule)


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=schedules, pattern=st.sampled_from(PATTERNS))
def test_property_with_botocore_retrying_lost_responses(nb, db, name, schedule, pattern):
    """botocore resends each lost response itself (same call, same token) — still one effect per request."""
    order, lost = schedule
    balance, seen = deliver(nb, db, name, nb[pattern], order, sorted(lost), sdk_retries=True)
    assert balance == truth(order)


def test_the_notebooks_search(nb, db, name):
    table = db.table(name)
    assert nb["smallest_counterexample"](nb["debit_idempotent"], table) == ["A", "B", "A"]
    assert nb["smallest_counterexample"](nb["debit_ledger"], table) is None
    assert nb["smallest_counterexample"](nb["debit_token"], table) is None


@pytest.mark.parametrize("pattern", PATTERNS)
def test_aba_under_concurrency_is_refused(nb, db, name, pattern):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    nb[pattern](table, wallet_id, 10, f"{wallet_id}-A")
    nb[pattern](table, wallet_id, 20, f"{wallet_id}-B")
    race(lambda i: nb[pattern](table, wallet_id, 10, f"{wallet_id}-A"), threads=8)
    assert nb["read_balance"](table, wallet_id) == 70


# --- the ledger's items -----------------------------------------------------

def test_the_marker_is_written_with_the_debit_and_expires_on_the_backends_clock(nb, db, name):
    """Time in items: expires_at is epoch seconds from db.clock (virtual, 2030), the lifetime the sum of the hops."""
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    assert nb["debit_ledger"](table, wallet_id, 10, "req-1") == "applied"
    marker = helpers.read_item(table, {"pk": wallet_id, "sk": "req#req-1"})
    assert marker["amount"] == 10
    assert marker["expires_at"] == int(db.clock.now()) + nb["MARKER_LIFETIME"]
    assert marker["expires_at"] > time.time() + nb["MARKER_LIFETIME"]          # the virtual clock runs ahead
    assert nb["MARKER_LIFETIME"] == sum(nb["HOPS"].values()) >= 14 * nb["DAY"] * 3
    assert nb["debit_ledger"](table, wallet_id, 10, "req-1") == "already applied"


def test_ttl_decides_nothing_within_the_lifetime_and_past_it_both_answers_are_allowed(nb, db, name):
    """Time in items, shown: a TTL sweep at any moment within a marker's lifetime leaves it, so a copy is
    refused; past the lifetime a copy is refused until the sweep comes, and applied after it (by design)."""
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    assert nb["debit_ledger"](table, wallet_id, 10, "req-ttl") == "applied"
    marker, start = {"pk": wallet_id, "sk": "req#req-ttl"}, int(db.clock.now())
    for moment in (start + 1, start + nb["MARKER_LIFETIME"] - 1, start + nb["MARKER_LIFETIME"]):
        assert marker not in sweep(table, moment, attribute="expires_at")
        assert nb["debit_ledger"](table, wallet_id, 10, "req-ttl") == "already applied"
    assert marker in sweep(table, start + nb["MARKER_LIFETIME"] + 1, attribute="expires_at")
    assert nb["debit_ledger"](table, wallet_id, 10, "req-ttl") == "applied"            # a new request now


def test_a_missing_wallet_cancels_the_whole_transaction(nb, db, name):
    table = db.table(name)
    with pytest.raises(helpers.WalletNotFound):
        nb["debit_ledger"](table, "nobody-05", 10, "req-x")
    assert helpers.read_item(table, {"pk": "nobody-05", "sk": "req#req-x"}) is None
    with pytest.raises(helpers.WalletNotFound):
        nb["debit_token"](table, "nobody-05", 10, str(uuid.uuid4()))


def test_the_notebook_enables_ttl(nb, db):
    """The notebook's TTL cell (a lesson cell) ran in `lesson()`; running it again is safe."""
    client = db.client()
    exec(compile(next(c for c in cells(NB, "lesson") if "update_time_to_live" in c), NB, "exec"), dict(nb))
    ttl = client.describe_time_to_live(TableName=nb["table"].name)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expires_at")


class _EnablingClient:
    """A client for a table whose TTL is ENABLING, as on AWS for up to an hour after UpdateTimeToLive: another
    UpdateTimeToLive then is a ValidationException (API_UpdateTimeToLive). No local backend has this state."""

    def __init__(self):
        self.updates = 0

    def describe_time_to_live(self, TableName):
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLING", "AttributeName": "expires_at"}}

    def update_time_to_live(self, **_):
        self.updates += 1
        raise RuntimeError("ValidationException: TimeToLive is already being enabled")


def test_the_ttl_cell_runs_again_while_ttl_is_enabling(nb, capsys):
    """Re-running the TTL cell on AWS within the hour after enabling: before this, the cell only accepted ENABLED
    and called UpdateTimeToLive again, which AWS refuses. Proved on a client in that state (no account here)."""
    source = next(c for c in cells(NB, "lesson") if "update_time_to_live" in c)
    fake = _EnablingClient()
    exec(compile(source, NB, "exec"), {**nb, "db": type("Db", (), {"client": lambda self: fake})()})
    assert fake.updates == 0
    assert capsys.readouterr().out.strip() == "TTL on expires_at: True"


def test_concurrent_copies_cancelled_by_a_conflict_are_sent_again_and_apply_once(nb, db, name):
    """On AWS some of sixteen concurrent copies are cancelled with TransactionConflict (nothing written); injected
    here on two of them. The notebook's race resends those: one 'applied', fifteen 'already applied', one debit.
    Before this, the cell counted the raised conflicts as neither and its assertion failed on AWS."""
    table = db.table(name)
    nb["open_wallet"](table, "w-race", 100)
    errors = ErrorResponses(at={0: CONFLICT, 5: CONFLICT}, conflict_item=1).install(table)
    outcomes = nb["race_copies"](table, "w-race", "req-race", 16)
    assert [kind for _, _, kind in errors.answered] == [CONFLICT, CONFLICT]
    assert sorted(outcomes) == ["already applied"] * 15 + ["applied"]
    assert nb["read_balance"](table, "w-race") == 95


# --- ClientRequestToken --------------------------------------------------------

def test_token_replay_and_mismatch(nb, db, name):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    token = str(uuid.uuid4())
    assert nb["debit_token"](table, wallet_id, 10, token) == "applied or replayed"
    assert nb["debit_token"](table, wallet_id, 10, token) == "applied or replayed"
    with pytest.raises(ClientError) as error:
        nb["debit_token"](table, wallet_id, 25, token)
    assert error.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert nb["read_balance"](table, wallet_id) == 90


def test_own_token_on_the_ledger_turns_a_rebuilt_resend_into_a_mismatch(nb, db, name):
    """The ledger rebuilds its call (expires_at from the clock): the same token a second later is a mismatch."""
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    request_id = str(uuid.uuid4())
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        nb["debit_ledger"](table, wallet_id, 10, request_id, token=request_id)
    db.clock.advance(1)
    with pytest.raises(ClientError) as error:
        nb["debit_ledger"](table, wallet_id, 10, request_id, token=request_id)
    assert error.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert nb["debit_ledger"](table, wallet_id, 10, request_id) == "already applied"   # no token: the marker answers
    assert nb["read_balance"](table, wallet_id) == 90


def test_an_app_retry_without_a_token_of_its_own_applies_twice(nb, db, name):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    LostResponses(at=[0]).install(table)
    update = {"Update": {"TableName": table.name, "Key": {"pk": wallet_id, "sk": "wallet"},
                         "UpdateExpression": "SET balance = balance - :a", "ExpressionAttributeValues": {":a": 10}}}
    with pytest.raises(ReadTimeoutError):
        table.meta.client.transact_write_items(TransactItems=[update])
    table.meta.client.transact_write_items(TransactItems=[update])      # botocore makes a new token
    assert nb["read_balance"](table, wallet_id) == 80


def test_the_token_window_closes_so_a_late_aba_retry_applies_again(nb, db, name):
    if db.name != "moto":
        pytest.skip("DynamoDB Local keeps its token window on the wall clock; ten real minutes is too long for a test")
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    debit = nb["debit_token"]
    debit(table, wallet_id, 10, f"{wallet_id}-A")
    debit(table, wallet_id, 20, f"{wallet_id}-B")
    db.clock.advance(601)
    debit(table, wallet_id, 10, f"{wallet_id}-A")                        # a late retry: a new transaction
    assert nb["read_balance"](table, wallet_id) == 60
    assert nb["debit_ledger"](table, wallet_id, 10, "late") == "applied"
    db.clock.advance(601)
    assert nb["debit_ledger"](table, wallet_id, 10, "late") == "already applied"   # the marker does not expire so


# --- costs ----------------------------------------------------------------------

EXPECTED_UNITS = {"debit_naive": 1.0, "debit_idempotent": 1.0, "debit_ledger": 2.0, "debit_token": 2.0}


@pytest.mark.parametrize("pattern, units", EXPECTED_UNITS.items())
def test_cost_per_debit_as_dynamodb_local_reports_it(nb, db, name, pattern, units):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 1000)
    meter = CapacityMeter().install(table)
    for _ in range(3):
        nb[pattern](table, wallet_id, 10, str(uuid.uuid4()))
    assert (meter.round_trips, meter.capacity_units) == (3, 3 * units)
    assert [call.operation for call in meter.calls] == (
        ["TransactWriteItems"] * 3 if "ledger" in pattern or "token" in pattern else ["UpdateItem"] * 3)


def test_a_duplicate_costs_a_round_trip_and_reports_no_units_except_a_token_replay(nb, db, name):
    table = db.table(name)
    reported = {}
    for pattern in EXPECTED_UNITS:
        wallet_id = new_wallet(nb, table, 1000)
        request_id = str(uuid.uuid4())
        nb[pattern](table, wallet_id, 10, request_id)
        meter = CapacityMeter().install(table)
        nb[pattern](table, wallet_id, 10, request_id)
        reported[pattern] = (meter.round_trips, meter.capacity_units)
        table = db.table(name)                                           # a fresh client, no meter
    assert reported == {"debit_naive": (1, 1.0), "debit_idempotent": (1, 0.0),
                        "debit_ledger": (1, 0.0), "debit_token": (1, 2.0)}


def test_the_meter_counts_a_timeout_as_a_round_trip_without_units(nb, db, name):
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    meter = CapacityMeter().install(table)
    LostResponses(at=[0]).install(table)
    with pytest.raises(ReadTimeoutError):
        nb["debit_ledger"](table, wallet_id, 10, "m-1")
    assert nb["debit_ledger"](table, wallet_id, 10, "m-1") == "already applied"
    assert (meter.round_trips, meter.capacity_units) == (2, 0.0)


def test_asking_for_capacity_only_on_the_replay_is_still_a_replay(nb, db, name):
    """Measured on DynamoDB Local: ReturnConsumedCapacity is not compared; the replay reports units."""
    table = db.table(name)
    wallet_id = new_wallet(nb, table, 100)
    token = str(uuid.uuid4())
    nb["debit_token"](table, wallet_id, 10, token)
    meter = CapacityMeter().install(table)
    assert nb["debit_token"](table, wallet_id, 10, token) == "applied or replayed"
    assert meter.capacity_units == 2.0
    assert nb["read_balance"](table, wallet_id) == 90


def test_a_call_that_sets_its_own_capacity_mode_keeps_it(db, name):
    table = db.table(name)
    meter = CapacityMeter().install(table)
    response = table.put_item(Item={"pk": "m", "sk": "wallet", "balance": 1}, ReturnConsumedCapacity="INDEXES")
    assert response["ConsumedCapacity"]["Table"] == {"CapacityUnits": 1.0}
    assert meter.capacity_units == 1.0


# --- DynamoDB's own failure answers (helpers.dynamodb_errors) -------------------
# (Under generated schedules of them, botocore's resends or the application's, once and truthful:
# test_properties_failures.py. Here: each answer alone, with the conflict on either action.)

ANSWERS = [(kind, item) for kind, item in ALL_ANSWERS if kind in KINDS]   # the table, its original commit aside


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("kind, conflict_item", ANSWERS, ids=[f"{k}@{i}" for k, i in ANSWERS])
def test_no_failure_answer_is_read_as_success_or_as_a_missing_wallet(nb, db, name, pattern, kind, conflict_item):
    table = db.table(name)
    answer_then_resend(nb[pattern], table, new_wallet(nb, table, 100), nb["read_balance"], kind, conflict_item,
                       str(uuid.uuid4()))


# --- the collection's rules for time in items: stated once, here; linked from the lessons that use them ----------

def test_time_in_items_is_stated_in_05_and_linked_from_06_and_07():
    from pathlib import Path

    import nbformat

    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    headings = [line for cell in nbformat.read(notebooks / NB, as_version=4).cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines() if line.startswith("#")]
    assert "## Time in items" in headings                       # the anchor #Time-in-items
    for other in ("06_saved_responses.ipynb", "07_event_sources.ipynb"):
        text = "".join(cell.source for cell in nbformat.read(notebooks / other, as_version=4).cells
                       if cell.cell_type == "markdown")
        assert f"{NB}#Time-in-items" in text, other
