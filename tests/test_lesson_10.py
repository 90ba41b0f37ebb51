"""Notebook 10's own code -- the Postgres handler `pay`, the outbox worker `deliver_one`, and notebook 06's
DynamoDB handler as 10 loads it -- under the same generated schedules: crashes between steps, duplicates in
flight (stalled past 06's lease or not, crashing or not), lost answers, worker crashes, mismatched payloads.

Whatever the schedule: never two debits, never two charges, and no false success (every 201/202 a caller
saw is backed by the debit, and every success replays the first one). Postgres never answers 409.

A lost answer is lost where each design loses it: DynamoDB's through botocore (helpers/faults.py, on 06's
tables: the claim, the debit transaction or the completion is applied and the caller times out); Postgres's
on the connection (the claim, the debit or the COMMIT reaches the server, then the connection dies before its
answer arrives); or the HTTP answer of a finished call, for both.
"""

from __future__ import annotations

import itertools
import json
import threading

import nbformat
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import BadInput, WalletNotFound
from helpers.concurrency import race
from helpers.exercises.lesson_10 import check_outbox_worker
from helpers.faults import LostResponses
from helpers.lessons import LessonNotFound, call_with, load_lesson

from notebook_code import NOTEBOOKS, cells, lesson

NB = "10_postgres_shaped.ipynb"
POSTGRES, DYNAMODB = "Postgres (10)", "DynamoDB (06)"
DESIGNS = [POSTGRES, DYNAMODB]
SUCCESS = {POSTGRES: 202, DYNAMODB: 201}
_keys = itertools.count()


@pytest.fixture(scope="module")
def nb():
    namespace = lesson(NB)
    namespace["pg"].use_schema("test_lesson_10")          # not the notebook's schema, on a shared server
    namespace["create_tables"]()
    l06 = namespace["lesson_06"]
    # One lost-response schedule per DynamoDB table of 06, installed once; a test points it at a write.
    namespace["lost_06"] = {"records": LostResponses().install(l06["records"]),
                            "wallets": LostResponses().install(l06["wallets"])}
    return namespace


def fresh(nb, design: str) -> str:
    """The notebook's own fresh start for `design` (a wallet of 100, a new provider); a key never used."""
    nb["DESIGNS"][design]["fresh"]()
    return f"t10-{next(_keys)}"


def debits(nb, design: str) -> int:
    return (100 - nb["DESIGNS"][design]["balance"]()) // nb["PAYLOAD"]["amount"]


def charges(nb, design: str) -> int:
    return nb["DESIGNS"][design]["charges"]()


def table_state(nb):
    """What Postgres holds: the wallet's balance and every idempotency and outbox row."""
    return (nb["balance"](nb["WALLET"]), nb["rows"]("idempotency").to_dict("records"),
            nb["rows"]("outbox").to_dict("records"))


# --- lost answers ------------------------------------------------------------------------------------

class _Watched:
    """A psycopg connection that shows each statement's result to its owner's `after(conn, query, result)`."""

    def __init__(self, conn, owner: StandIn) -> None:
        self._conn, self._owner = conn, owner

    def execute(self, query, params=None):
        result = self._conn.execute(query, params)
        self._owner.after(self._conn, query, result)
        return result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._conn.close()

    def __getattr__(self, name):
        return getattr(self._conn, name)


class StandIn:
    """Stands in for the notebook's `pg`: what a subclass's `after` does follows each statement on its connections;
    everything else is `pg`'s own."""

    def __init__(self, pg) -> None:
        self.pg = pg

    def after(self, conn, query, result) -> None:
        pass

    def connect(self, **options):
        return _Watched(self.pg.connect(**options), self)

    def __getattr__(self, name):
        return getattr(self.pg, name)


class LosingPostgres(StandIn):
    """During one call, the first statement starting with `word` loses its answer: it reaches the server, then the
    line dies."""

    def __init__(self, pg, word: str) -> None:
        super().__init__(pg)
        self.word, self.lost = word, False
        self._lock = threading.Lock()

    def should_lose(self, query) -> bool:
        with self._lock:
            if self.lost or not str(query).lstrip().upper().startswith(self.word):
                return False
            self.lost = True
            return True

    def after(self, conn, query, result) -> None:
        if self.should_lose(query):
            self.pg.terminate(conn)                 # the server ends the session; its answer never came
            raise psycopg.OperationalError(f"the answer to {self.word} was lost")


# Which write loses its answer: Postgres's statement, and 06's write it stands for.
LOSABLE = {"INSERT": ("records", 0), "UPDATE": ("wallets", 0), "COMMIT": ("records", 1)}


class Run:
    """One schedule through one design, checking the invariants after every step."""

    def __init__(self, nb, design: str) -> None:
        self.nb, self.design = nb, design
        self.key = fresh(nb, design)
        self.pay = nb["DESIGNS"][design]["pay"]
        self.answers: list[dict] = []                      # what callers saw (errors and crashes: unknown)
        self.invocations = (f"inv-{i}" for i in itertools.count(1))

    def send(self, hook=lambda step: None, payload=None):
        """One caller's call; its answer is recorded, an error or a crash is an unknown outcome."""
        try:
            answer = self.pay(self.nb["USER"], self.key, payload or self.nb["PAYLOAD"], next(self.invocations), hook)
        except self.nb["Crash"]:
            return None
        except Exception:                                  # a lost answer: the caller cannot tell
            return None
        if payload is None:
            self.answers.append(answer)
        return answer

    def act(self, action) -> None:
        nb, kind = self.nb, action[0]
        if kind == "call":
            self.send(nb["crash_at"](action[1]) if action[1] else (lambda step: None))
        elif kind == "duplicate":
            _, at, stall, crash = action
            started = {}

            def hook(step):
                if step == at and not started:
                    if stall:
                        nb["db"].clock.advance(nb["lesson_06"]["LEASE_SECONDS"] + 1)
                    started["call"] = nb["Alongside"](lambda: self.send())
                    if crash:
                        nb["pg"].kill_this_threads_connections()
                        raise nb["Crash"](step)
            self.send(hook)
            if started:
                started["call"].result()
        elif kind == "lost":
            self.lose(action[1])
        elif kind == "worker":
            if self.design == POSTGRES:
                try:
                    nb["deliver_one"](nb["crash_at"](action[1]) if action[1] else (lambda step: None))
                except nb["Crash"]:
                    pass
        elif kind == "mismatch":
            if any(a["status"] == SUCCESS[self.design] for a in self.answers):   # the key is surely taken
                before = (debits(nb, self.design), charges(nb, self.design), self.outbox())
                other = self.send(payload={"wallet": nb["WALLET"], "amount": 99})
                assert other is not None and other["status"] == 422, other
                assert (debits(nb, self.design), charges(nb, self.design), self.outbox()) == before
        elif kind == "advance":
            nb["db"].clock.advance(action[1])
        self.check()

    def lose(self, where: str) -> None:
        nb = self.nb
        if where == "answer":                              # the call finished; its HTTP answer never arrived
            answers = list(self.answers)
            self.send()
            self.answers = answers
            return
        if self.design == POSTGRES:
            real = nb["pg"]
            nb["pg"] = LosingPostgres(real, where)
            try:
                self.send()
            finally:
                nb["pg"] = real
        else:
            table, offset = LOSABLE[where]
            lost = nb["lost_06"][table]
            lost.at = frozenset({lost.sent + offset})
            try:
                self.send()
            finally:
                lost.at = frozenset()

    def outbox(self) -> int:
        return len(self.nb["rows"]("outbox")) if self.design == POSTGRES else 0

    def check(self) -> None:
        nb, design = self.nb, self.design
        assert debits(nb, design) <= 1 and charges(nb, design) <= 1, "a second debit or a second charge"
        successes = [a for a in self.answers if a["status"] == SUCCESS[design]]
        if successes:                                      # no false success
            assert debits(nb, design) == 1, "a caller was told success, but nothing was debited"
            assert all(a == successes[0] for a in successes), "a replay differs from the first response"
            if design == DYNAMODB:
                assert charges(nb, design) == 1, "06 said 201 before the provider charged"
        others = [a for a in self.answers if a["status"] != SUCCESS[design]]
        if design == POSTGRES:
            assert not others, f"Postgres answered {others}"              # it never says 409
        else:
            assert all(a == nb["lesson_06"]["IN_PROGRESS"] for a in others), others

    def finish(self) -> None:
        """Every lease over, every outbox row delivered, one more retry: exactly one debit and one charge."""
        nb = self.nb
        nb["db"].clock.advance(nb["lesson_06"]["LEASE_SECONDS"] + 1)
        nb["DESIGNS"][self.design]["worker"]()
        final = self.send()
        nb["DESIGNS"][self.design]["worker"]()
        assert final is not None and final["status"] == SUCCESS[self.design], final
        self.check()
        assert debits(nb, self.design) == 1 and charges(nb, self.design) == 1
        if self.design == POSTGRES:
            outbox = nb["rows"]("outbox")
            assert len(outbox) == 1 and outbox["delivered_at"].notna().all()


STEPS = ["claimed", "debited", "charged", "saved"]
schedules = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.sampled_from([None, *STEPS])),            # runs through, or crashes there
        st.tuples(st.just("duplicate"), st.sampled_from(STEPS), st.booleans(), st.booleans()),  # stall?, crash?
        st.tuples(st.just("lost"), st.sampled_from(["answer", *LOSABLE])),
        st.tuples(st.just("worker"), st.sampled_from([None, "charged"])),       # Postgres's worker, maybe dying
        st.tuples(st.just("mismatch")),
        st.tuples(st.just("advance"), st.integers(0, 45)),
    ),
    max_size=7,
)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(schedule=schedules)
def test_property_both_designs_under_the_same_schedule_one_debit_one_charge_no_false_success(nb, schedule):
    for design in DESIGNS:
        run = Run(nb, design)
        for action in schedule:
            run.act(action)
        run.finish()


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("where", ["answer", *LOSABLE])
def test_every_lost_answer_then_a_retry_one_debit_one_charge(nb, design, where):
    run = Run(nb, design)
    run.act(("lost", where))
    run.finish()


@pytest.mark.parametrize("step", ["claimed", "debited", "saved"])     # the Postgres handler's steps
def test_a_duplicate_while_postgres_works_waits_then_replays_even_after_a_crash(nb, step):
    for crash in (False, True):
        run = Run(nb, POSTGRES)
        run.act(("duplicate", step, False, crash))
        assert [a["status"] for a in run.answers] == ([202] if crash else [202, 202])
        run.finish()


def test_the_schedules_catch_a_handler_without_its_claim(nb):
    """The checks can fail: a debit with no idempotency row, retried after a lost answer, debits twice."""
    def naive(user_id, key, payload, invocation, hook=lambda step: None):
        nb["check_payment"](user_id, key, payload, invocation)
        with nb["pg"].connect() as conn:
            conn.execute("BEGIN")
            conn.execute("UPDATE wallets SET balance = balance - %s WHERE wallet_id = %s",
                         (payload["amount"], payload["wallet"]))
            conn.execute("INSERT INTO outbox (user_id, idempotency_key, wallet_id, amount) VALUES (%s, %s, %s, %s)",
                         (user_id, key, payload["wallet"], payload["amount"]))
            conn.execute("COMMIT")
        return nb["accepted"](key, payload, invocation)
    run = Run(nb, POSTGRES)
    run.pay = naive
    run.act(("lost", "answer"))
    with pytest.raises(AssertionError, match="a second debit"):
        run.finish()


# --- concurrency -----------------------------------------------------------------------------------

@pytest.mark.parametrize("design", DESIGNS)
def test_many_threads_one_key_one_debit_one_charge(nb, design):
    key = fresh(nb, design)
    pay = nb["DESIGNS"][design]["pay"]
    answers = race(lambda i: pay(nb["USER"], key, nb["PAYLOAD"], f"inv-{i}"), threads=16)
    assert not [a for a in answers if isinstance(a, BaseException)], answers
    nb["DESIGNS"][design]["worker"]()
    successes = [a for a in answers if a["status"] == SUCCESS[design]]
    assert successes and all(a == successes[0] for a in successes)
    if design == POSTGRES:
        assert len(successes) == 16                       # every duplicate waited, none was told 409
    else:
        assert all(a == nb["lesson_06"]["IN_PROGRESS"] for a in answers if a not in successes)
    assert debits(nb, design) == 1 and charges(nb, design) == 1


def test_many_threads_many_payments_and_many_workers_each_once(nb):
    fresh(nb, POSTGRES)
    keys = [f"t10-many-{next(_keys)}" for _ in range(16)]
    answers = race(lambda i: nb["pay"](nb["USER"], keys[i], {"wallet": nb["WALLET"], "amount": 1}, f"inv-{i}"),
                   threads=16)
    assert [a["status"] for a in answers] == [202] * 16
    assert nb["balance"](nb["WALLET"]) == 100 - 16             # no debit lost, none doubled
    delivered = race(lambda i: nb["deliver_all"](), threads=8)
    assert sum(delivered) == 16 and nb["provider"].charges == 16
    assert sorted(c.idempotency_key for c in nb["provider"].made) == sorted(f"outbox-{i}" for i in range(1, 17))


# --- bad input and errors: a clear error, nothing written ---------------------------------------------

BAD = [
    ("alice", "k", {"wallet": "alice", "amount": -5}, "amount must be positive"),
    ("alice", "k", {"wallet": "alice", "amount": 0}, "amount must be positive"),
    ("alice", "k", {"wallet": "alice", "amount": 2.5}, "not a float"),
    ("alice", "k", {"wallet": "alice", "amount": True}, "whole number"),
    ("alice", "k", {"wallet": "alice", "amount": "10"}, "whole number"),
    ("alice", "k", {"wallet": "alice", "amount": 2**63}, "does not fit Postgres' bigint"),
    ("alice", "k", {"wallet": "alice"}, "exactly 'wallet' and 'amount'"),
    ("alice", "k", {"wallet": "alice", "amount": 10, "note": "x"}, "exactly 'wallet' and 'amount'"),
    ("alice", "k", None, "payload must be a dict"),
    ("alice", "", {"wallet": "alice", "amount": 10}, "request_id must not be empty"),
    ("alice", "k" * 37, {"wallet": "alice", "amount": 10}, "request_id is 37 bytes"),
    ("alice", "k\x00", {"wallet": "alice", "amount": 10}, "NUL"),
    ("", "k", {"wallet": "alice", "amount": 10}, "user_id must be a non-empty string"),
    ("   ", "k", {"wallet": "alice", "amount": 10}, "user_id must be a non-empty string"),
    ("u" * 65, "k", {"wallet": "alice", "amount": 10}, "at most 64 characters"),
    (None, "k", {"wallet": "alice", "amount": 10}, "user_id must be a non-empty string"),
    ("al\x00ice", "k", {"wallet": "alice", "amount": 10}, "NUL"),
]


@pytest.mark.parametrize("user_id, key, payload, message", BAD)
def test_bad_input_is_a_clear_error_and_writes_nothing(nb, user_id, key, payload, message):
    fresh(nb, POSTGRES)
    nb["pay"](nb["USER"], "t10-before", nb["PAYLOAD"], "inv-0")
    before = table_state(nb)
    nb["pg"].statements.reset()
    with pytest.raises(BadInput, match=message):
        nb["pay"](user_id, key, payload, "inv-1")
    assert nb["pg"].statements.round_trips == 0                 # refused before anything was sent
    assert table_state(nb) == before


def test_a_missing_wallet_rolls_back_the_work_and_keeps_the_claim(nb):
    fresh(nb, POSTGRES)
    with pytest.raises(WalletNotFound, match="'nobody' does not exist; no money moved; the claim keeps the key"):
        nb["pay"](nb["USER"], "t10-nobody", {"wallet": "nobody", "amount": 10}, "inv-1")   # not "nothing written"
    assert nb["balance"](nb["WALLET"]) == 100 and nb["rows"]("outbox").empty
    [claim] = nb["rows"]("idempotency").to_dict("records")          # bound to its payload, unanswered
    assert claim["idempotency_key"] == "t10-nobody" and pd_isna(claim["response_status_code"])
    assert nb["pay"](nb["USER"], "t10-somebody", nb["PAYLOAD"], "inv-2")["status"] == 202


def test_a_provider_failure_leaves_the_row_pending_and_the_next_run_charges_once(nb):
    fresh(nb, POSTGRES)
    nb["pay"](nb["USER"], "t10-down", nb["PAYLOAD"], "inv-1")
    nb["provider"].fail_next()
    assert nb["deliver_one"]() == "failed"                          # recorded, not raised
    [row] = nb["rows"]("outbox").to_dict("records")
    assert pd_isna(row["delivered_at"]) and row["attempts"] == 1 and "unavailable" in row["last_error"]
    assert nb["deliver_all"]() == 0                                 # not due yet: it backs off
    nb["db"].clock.advance(nb["BACKOFF_SECONDS"])
    assert nb["deliver_all"]() == 1 and nb["provider"].charges == 1


# --- the notebook's claims ------------------------------------------------------------------------------

def test_the_scenarios_one_debit_one_charge_except_after_the_retention_window(nb):
    for name in nb["SCENARIOS"]:
        for design in DESIGNS:
            row = nb["scenario"](name, design)
            expected = (2, 2) if name == "retry after 25 h" else (1, 1)
            assert (row["debits"], row["charges"]) == expected, (name, design, row)
            if design == POSTGRES:
                assert "409" not in row["caller saw"], row


def test_a_replay_is_byte_identical_and_costs_no_write(nb):
    fresh(nb, POSTGRES)
    first = nb["pay"](nb["USER"], "t10-bytes", nb["PAYLOAD"], "inv-1")
    before = table_state(nb)
    again = nb["pay"](nb["USER"], "t10-bytes", nb["PAYLOAD"], "inv-2")
    assert again == first and isinstance(again["body"], bytes) and json.loads(again["body"])["served_by"] == "inv-1"
    assert table_state(nb) == before


def test_a_crash_rolls_the_work_back_no_debit_no_outbox_no_response(nb):
    for step in ("claimed", "debited", "saved"):
        fresh(nb, POSTGRES)
        with pytest.raises(nb["Crash"]):
            nb["pay"](nb["USER"], f"t10-crash-{step}", nb["PAYLOAD"], "inv-1", nb["crash_at"](step))
        assert nb["balance"](nb["WALLET"]) == 100 and nb["rows"]("outbox").empty, step
        [claim] = nb["rows"]("idempotency").to_dict("records")      # only the committed claim, unanswered
        assert pd_isna(claim["response_status_code"]), step


def test_keys_are_scoped_per_user(nb):
    fresh(nb, POSTGRES)
    a = nb["pay"]("alice", "t10-shared", nb["PAYLOAD"], "inv-1")
    b = nb["pay"]("bob", "t10-shared", nb["PAYLOAD"], "inv-2")
    assert json.loads(a["body"])["served_by"] == "inv-1" and json.loads(b["body"])["served_by"] == "inv-2"
    assert nb["balance"](nb["WALLET"]) == 80


def test_the_wait_then_read_needs_read_committed(nb):
    """Under REPEATABLE READ the waiting lock ends in a serialization failure; under READ COMMITTED it reads the
    row as the first transaction committed it -- as the notebook says."""
    pg = nb["pg"]
    fresh(nb, POSTGRES)
    first, second = pg.connect(counted=False), pg.connect(counted=False)
    lock = "SELECT response_status_code FROM idempotency WHERE idempotency_key = 't10-iso' FOR UPDATE"
    # The first's COMMIT, sent from another thread while the second waits on the lock. That thread is joined before
    # `first` is closed: the server can answer the COMMIT (so the second goes on) before the thread has read the
    # answer, and closing a connection another thread is reading aborted a whole test worker once (a loaded run).
    commit = threading.Timer(0.2, lambda: first.execute("COMMIT"))
    try:
        first.execute("INSERT INTO idempotency (user_id, idempotency_key, payload_fingerprint, created_at, "
                      "expires_at) VALUES ('alice', 't10-iso', 'f', 0, 1)")
        first.execute("BEGIN")
        first.execute(lock)
        first.execute("UPDATE idempotency SET response_status_code = 202 WHERE idempotency_key = 't10-iso'")
        second.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        second.execute("SELECT 1 FROM wallets")               # its snapshot: taken before the first commits
        commit.start()
        with pytest.raises(psycopg.errors.SerializationFailure):
            second.execute(lock)
        second.execute("ROLLBACK")
        second.execute("BEGIN")                               # READ COMMITTED: the committed response
        assert second.execute(lock).fetchone() == (202,)
        second.execute("COMMIT")
    finally:
        if commit.is_alive():
            commit.join(timeout=30)
        first.close()
        second.close()


def measuring_cell(marker: str) -> str:
    """The source of notebook 10's one code cell containing `marker`."""
    [source] = [c.source for c in nbformat.read(NOTEBOOKS / NB, as_version=4).cells
                if c.cell_type == "code" and marker in c.source]
    return source


def test_costs_and_what_is_held_as_the_notebook_measures_them_twice(nb):
    for _ in range(2):                                        # run again, the figures hold (fresh keys each time)
        for marker in ("costs = []", "class LookingOn"):      # the measuring cells, run in the notebook's namespace
            exec(compile(measuring_cell(marker), f"{NB}[{marker}]", "exec"), nb)
        costs, held = nb["costs"], nb["held"]
        assert costs.loc[(POSTGRES, "new payment"), "round trips to the database"] == 14
        assert costs.loc[(POSTGRES, "replay"), "round trips to the database"] == 6
        assert costs.loc[(DYNAMODB, "new payment"), "round trips to the database"] == 4
        assert list(costs["provider calls"]) == [1, 0, 1, 0]
        assert list(held.loc[POSTGRES]["another payment from the wallet"]) == ["waits", "goes through"]
        assert list(held.loc[DYNAMODB]["the key's record, to others"]) == ["IN_PROGRESS, with a lease"] * 2
        assert list(held.loc[DYNAMODB]["open transactions"]) == [0, 0]


# --- the exercise --------------------------------------------------------------------------------------

def test_the_checker_passes_the_solution(nb):
    solution = lesson("solutions/10_postgres_shaped_solution.ipynb")
    verdict = check_outbox_worker(solution["my_deliver"], pg=nb["pg"])
    assert verdict.passed, verdict
    assert all(len(line) <= 100 for line in str(verdict).splitlines())


def test_the_checker_fails_the_starter_with_one_counterexample(nb):
    namespace = dict(nb)
    exec(cells(NB, "exercise")[0], namespace)
    verdict = check_outbox_worker(namespace["my_deliver"], pg=nb["pg"])
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    assert "never charged: that payment is lost" in verdict.message
    assert all(len(line) <= 100 for line in str(verdict).splitlines())


def test_the_checker_fails_a_worker_with_a_new_provider_key_per_attempt(nb):
    solution = lesson("solutions/10_postgres_shaped_solution.ipynb")
    attempts = itertools.count()

    def fresh_key_each_time(conn, provider):
        class Keyed:
            def charge(self, wallet_id, amount, idempotency_key):
                return provider.charge(wallet_id, amount, f"{idempotency_key}-{next(attempts)}")
        return solution["my_deliver"](conn, Keyed())
    verdict = check_outbox_worker(fresh_key_each_time, pg=nb["pg"])
    assert not verdict.passed and "was charged 2 times" in verdict.message


def test_the_checker_reports_a_worker_that_raises_and_one_that_never_stops(nb):
    def broken(conn, provider):
        raise RuntimeError("boom")
    assert "RuntimeError: boom" in check_outbox_worker(broken, pg=nb["pg"]).message
    assert "never returned False" in check_outbox_worker(lambda conn, provider: True, pg=nb["pg"]).message


# --- helpers.lessons -----------------------------------------------------------------------------------

def test_load_lesson_runs_the_notebooks_own_cells_and_keeps_our_display_settings():
    import pandas as pd
    with pd.option_context("display.width", 77, "display.max_colwidth", 33):
        namespace = load_lesson("06_saved_responses.ipynb")
        assert pd.get_option("display.width") == 77 and pd.get_option("display.max_colwidth") == 33
    assert callable(namespace["pay"]) and namespace["__name__"] == "lesson:06_saved_responses.ipynb"


@pytest.mark.parametrize("name", ["nope.ipynb", "06_saved_responses", "../README.md", None, 6])
def test_load_lesson_names_a_missing_notebook(name):
    with pytest.raises(LessonNotFound, match="no notebook"):
        load_lesson(name)


def test_call_with_passes_what_the_signature_names():
    def handler(key, payload, caller="shop"):
        return key, payload, caller
    assert call_with(handler, user_id="alice", key="k", payload={}, invocation="i") == ("k", {}, "alice")
    assert call_with(lambda key, payload: (key, payload), key="k", payload=1, user_id="u") == ("k", 1)

    def needs(key, mystery):
        return key
    with pytest.raises(TypeError, match="needs 'mystery'"):
        call_with(needs, key="k")


def test_the_notebook_uses_the_process_server_it_does_not_start_another(nb):
    from helpers.postgres import postgres
    assert nb["pg"] is postgres()


# --- the specification: once, bound to its payload, truthful, live (issue "One specification, one checker") ---

class VanishingRow(StandIn):
    """The key's row is deleted by someone else (a sweeper, a person) right after a claim that inserted nothing:
    it vanishes between the claim and the read that follows it."""

    def __init__(self, pg, key: str) -> None:
        super().__init__(pg)
        self.key, self.done = key, False

    def after(self, conn, query, result) -> None:
        text = str(query).lstrip().upper()
        if not self.done and text.startswith("INSERT INTO IDEMPOTENCY") and result.rowcount == 0:
            self.done = True
            with self.pg.admin() as admin:
                admin.execute("DELETE FROM idempotency WHERE idempotency_key = %s", (self.key,))


def test_a_row_that_vanishes_after_the_claim_is_never_read_as_ours(nb):
    """Old code: 'no row' read as claimed -- it debited, its UPDATE of the response matched 0 rows, it said 202,
    and the key was remembered nowhere, so the next retry debited a third time."""
    fresh(nb, POSTGRES)
    key = "t10-vanish"
    nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-1")
    real = nb["pg"]
    nb["pg"] = VanishingRow(real, key)
    try:
        answer = nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-2")
    finally:
        nb["pg"] = real
    assert nb["pg"] is real
    saved = nb["rows"]("idempotency")
    if answer["status"] == 202:                               # a success must be backed by a saved response
        assert list(saved["response_status_code"]) == [202], saved
    balance = nb["balance"](nb["WALLET"])
    again = nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-3")
    assert again == answer and nb["balance"](nb["WALLET"]) == balance, "a retry after a 202 debited again"


class Declines(Exception):
    """The provider refuses this charge, every time (a card limit): a poison row for the outbox."""


def declining_provider(nb, limit):
    from helpers.services.payment_provider import PaymentProvider

    class Declining(PaymentProvider):
        def charge(self, wallet_id, amount, idempotency_key):
            if amount > limit:
                self.calls += 1
                raise Declines(f"charge of {amount} declined")
            return super().charge(wallet_id, amount, idempotency_key)
    return Declining(nb["db"].clock)


def run_worker(nb):
    """One worker run, as an operator's cron would start it: whatever it raises ends this run only."""
    try:
        nb["deliver_all"]()
    except Exception:
        pass


def test_a_poison_row_does_not_stall_the_payments_behind_it(nb):
    """Old code: the worker always picked the oldest row and stopped at its failure: 0 of 4 healthy rows delivered
    over 3 runs (debited, never charged)."""
    fresh(nb, POSTGRES)
    nb["provider"] = provider = declining_provider(nb, limit=50)
    nb["pay"](nb["USER"], "t10-poison", {"wallet": nb["WALLET"], "amount": 60}, "inv-0")
    for i in range(4):
        nb["pay"](nb["USER"], f"t10-healthy-{i}", {"wallet": nb["WALLET"], "amount": 5}, f"inv-{i + 1}")
    for _ in range(3):
        run_worker(nb)
        nb["db"].clock.advance(3600)
    assert provider.charges == 4, f"{provider.charges} of 4 healthy payments charged"
    outbox = nb["rows"]("outbox").set_index("outbox_id")
    assert outbox.loc[2:, "delivered_at"].notna().all() and pd_isna(outbox.loc[1, "delivered_at"])


def pd_isna(value) -> bool:
    import pandas as pd
    return bool(pd.isna(value))


def test_a_poison_row_ends_dead_lettered_after_its_attempts_and_is_not_tried_again(nb):
    fresh(nb, POSTGRES)
    nb["provider"] = provider = declining_provider(nb, limit=50)
    nb["pay"](nb["USER"], "t10-poison", {"wallet": nb["WALLET"], "amount": 60}, "inv-0")
    for _ in range(nb["MAX_ATTEMPTS"] + 3):
        run_worker(nb)
        nb["db"].clock.advance(24 * 3600)
    row = nb["rows"]("outbox").iloc[0]
    assert row["attempts"] == nb["MAX_ATTEMPTS"] and not pd_isna(row["dead_at"]) and "declined" in row["last_error"]
    assert provider.calls == nb["MAX_ATTEMPTS"] and provider.charges == 0


SURROGATE = "k\ud800"


@pytest.mark.parametrize("field", ["user_id", "key", "wallet", "invocation"])
def test_a_lone_surrogate_is_bad_input_naming_the_field_before_anything_is_sent(nb, field):
    fresh(nb, POSTGRES)
    nb["pay"](nb["USER"], "t10-before", nb["PAYLOAD"], "inv-0")
    before = table_state(nb)
    nb["pg"].statements.reset()
    arguments = {"user_id": nb["USER"], "key": "t10-surrogate", "payload": dict(nb["PAYLOAD"]), "invocation": "inv-1"}
    if field == "wallet":
        arguments["payload"]["wallet"] = SURROGATE
    else:
        arguments[field] = SURROGATE
    with pytest.raises(BadInput, match=f"{'wallet_id' if field == 'wallet' else field}.*lone surrogate"):
        nb["pay"](arguments["user_id"], arguments["key"], arguments["payload"], arguments["invocation"])
    assert nb["pg"].statements.round_trips == 0
    assert table_state(nb) == before


@pytest.mark.parametrize("invocation", ["", None, 7])
def test_a_bad_invocation_is_bad_input(nb, invocation):
    fresh(nb, POSTGRES)
    with pytest.raises(BadInput, match="invocation"):
        nb["pay"](nb["USER"], "t10-inv", nb["PAYLOAD"], invocation)
    assert nb["rows"]("idempotency").empty


def test_a_failed_first_attempt_keeps_the_key_bound_to_its_payload(nb):
    """Old code: the ROLLBACK freed the key, and another payload under it was then applied."""
    fresh(nb, POSTGRES)
    with pytest.raises(WalletNotFound):
        nb["pay"](nb["USER"], "t10-bound", {"wallet": "nobody", "amount": 10}, "inv-1")
    other = nb["pay"](nb["USER"], "t10-bound", nb["PAYLOAD"], "inv-2")
    assert other == nb["MISMATCH"] and nb["balance"](nb["WALLET"]) == 100 and nb["rows"]("outbox").empty


@pytest.mark.parametrize("step", ["claimed", "debited", "saved"])
def test_after_a_crash_another_payload_is_refused_and_the_same_one_completes_forward(nb, step):
    """Old code: the crash rolled the claim back too, and the key then took effect for another payload."""
    fresh(nb, POSTGRES)
    with pytest.raises(nb["Crash"]):
        nb["pay"](nb["USER"], "t10-crashed", nb["PAYLOAD"], "inv-1", nb["crash_at"](step))
    assert nb["balance"](nb["WALLET"]) == 100 and nb["rows"]("outbox").empty       # the work rolled back
    other = nb["pay"](nb["USER"], "t10-crashed", {"wallet": nb["WALLET"], "amount": 99}, "inv-2")
    assert other == nb["MISMATCH"] and nb["balance"](nb["WALLET"]) == 100
    done = nb["pay"](nb["USER"], "t10-crashed", nb["PAYLOAD"], "inv-3")
    assert done["status"] == 202 and nb["balance"](nb["WALLET"]) == 90


def test_the_handlers_session_has_a_lease_idle_in_transaction_session_timeout(nb):
    """A host that vanishes mid-transaction is noticed only by a timeout: the handler's connection sets one."""
    with nb["connect"]() as conn:
        lease = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0]
    assert lease not in ("0", "0ms"), lease


def test_a_holder_gone_idle_in_transaction_is_ended_and_the_waiting_duplicate_completes(nb):
    fresh(nb, POSTGRES)
    key = "t10-idle"
    holder = nb["pg"].connect(counted=False)
    holder.execute("INSERT INTO idempotency (user_id, idempotency_key, payload_fingerprint, created_at, expires_at) "
                   "VALUES (%s, %s, %s, 0, %s)", (nb["USER"], key, nb["fingerprint"](nb["PAYLOAD"]), 10**12))
    holder.execute("BEGIN")
    holder.execute("SELECT 1 FROM idempotency WHERE idempotency_key = %s FOR UPDATE", (key,))
    duplicate = nb["Alongside"](lambda: nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-2"))
    assert duplicate.state == "waiting on a lock"
    holder.execute("SET idle_in_transaction_session_timeout = '200ms'")     # then the holder goes silent
    answer = duplicate.result()
    assert not isinstance(answer, BaseException), answer
    assert answer["status"] == 202 and json.loads(answer["body"])["served_by"] == "inv-2"
    with pytest.raises(psycopg.Error):
        holder.execute("SELECT 1")
    holder.close()


# --- issue 43: one clock, from the answer ----------------------------------------------------------------------------

def test_a_payment_finished_just_before_its_window_ends_is_remembered_a_day_from_its_answer(nb):
    """Claimed at t, answered 10 s before t + RETENTION_SECONDS (the attempt was slow), resent 11 s later: the resend
    gets the saved answer -- the window counts from the answer, not the claim -- so one debit, one charge."""
    key, late = fresh(nb, POSTGRES), nb["RETENTION_SECONDS"] - 10
    slow = lambda step: nb["db"].clock.advance(late) if step == "claimed" else None      # noqa: E731
    first = nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-1", slow)
    nb["db"].clock.advance(11)
    again = nb["pay"](nb["USER"], key, nb["PAYLOAD"], "inv-2")
    nb["deliver_all"]()
    assert again == first and (debits(nb, POSTGRES), charges(nb, POSTGRES)) == (1, 1)
    [row] = [r for r in nb["rows"]("idempotency").to_dict("records") if r["idempotency_key"] == key]
    assert row["expires_at"] == row["created_at"] + late + nb["RETENTION_SECONDS"]     # a day from the answer
