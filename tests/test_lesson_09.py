"""Notebook 09's own endpoint over real HTTP: every status of its Idempotency-Key contract, 32 concurrent
duplicates, bad input refused with nothing written, DynamoDB's failure answers, lost responses, and the
exercise checker -- all through the notebook's `imports` and `lesson` cells (tests/notebook_code.py), served
by uvicorn on 127.0.0.1 as in the notebook."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading

import pytest
import requests
from harness.endpoint import reset, served, tables
from requests.adapters import HTTPAdapter
from starlette.datastructures import Headers
from urllib3.util.retry import Retry

import helpers
from helpers.concurrency import race
from helpers.dynamodb_errors import CONFLICT, KINDS, THROTTLED, ErrorResponses, kinds_for
from helpers.exercises import check_retrying_client

from notebook_code import cells

NB = "09_over_http.ipynb"
SOLUTION = "solutions/09_over_http_solution.ipynb"
OPENED_WITH = 1000
_keys = (f"t09-{n}" for n in itertools.count())


@pytest.fixture(scope="module")
def nb():
    yield from served(NB)


@pytest.fixture
def fresh(nb):
    """A new provider, Alice's two wallets and Bob's at 1000, no response lost: the notebook's namespace."""
    return reset(nb, {"alice": "acct_alice", "bob": "acct_bob", "alice-2": "acct_alice"}, OPENED_WITH)


def post(nb, headers, body, path="/payments", timeout=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(nb["server"].url + path, data=data, headers=headers, timeout=timeout or nb["TIMEOUT"])


def headers(nb, key=None, api_key="sk_test_alice"):
    return nb["headers_for"](api_key, key=key)


def debits(nb, wallet="alice"):
    return (OPENED_WITH - helpers.read_balance(nb["wallets"], wallet)) // 10


def request_of(payment, caller="acct_alice"):
    """What the handler fingerprints: the method, the path, the caller and the payment."""
    return {"method": "POST", "path": "/payments", "caller": caller, "payment": payment}


def record(nb, account, key):
    return helpers.read_item(nb["records"], {"pk": f"{account}#{key}"})


# --- the contract's statuses: test_http_contract.py, row by row of the notebook's own table -------------------------

PAYMENT = {"wallet": "alice", "amount": 10}


def test_an_expired_lease_is_taken_over_and_the_payment_made_once(fresh):
    nb, key = fresh, next(_keys)
    nb["claim"](f"acct_alice#{key}", request_of(PAYMENT), "crashed-attempt")
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    answer = post(nb, headers(nb, key), PAYMENT)
    assert answer.status_code == 201 and "idempotent-replayed" not in answer.headers
    assert (debits(nb), nb["provider"].charges) == (1, 1)


@pytest.mark.parametrize("length, status", [(10, 201), (255, 201), (256, 400), (1000, 400)])
def test_keys_are_at_most_255_characters(fresh, length, status):
    nb, before = fresh, tables(fresh)
    key = next(_keys)
    answer = post(nb, headers(nb, key + "k" * (length - len(key))), PAYMENT)
    assert answer.status_code == status, answer.text
    if status == 400:
        assert answer.json()["error"] == "idempotency_key_invalid" and f"{length} characters" in answer.json()["detail"]
        assert tables(nb) == before
    else:
        assert (debits(nb), nb["provider"].charges) == (1, 1)


def test_the_replay_survives_a_lost_response_byte_for_byte(fresh):
    """A closed connection after the commit: the resend gets exactly the 201 the client never saw."""
    nb, key = fresh, next(_keys)
    nb["lost"].restart(at=[0], how="close")
    with pytest.raises(requests.ConnectionError):
        post(nb, headers(nb, key), PAYMENT)
    nb["lost"].settle()
    assert (debits(nb), nb["provider"].charges, nb["lost"].dropped) == (1, 1, 1)
    saved = record(nb, "acct_alice", key)
    again = post(nb, headers(nb, key), PAYMENT)
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.content == saved["response_body"].value
    assert again.json()["id"] == nb["provider"].made[-1].charge_id
    assert (debits(nb), nb["provider"].charges) == (1, 1)


def test_a_held_response_times_out_the_client_and_the_work_is_done(fresh):
    nb, key = fresh, next(_keys)
    nb["lost"].restart(at=[0], how="hold")
    with pytest.raises(requests.ReadTimeout):
        post(nb, headers(nb, key), PAYMENT, timeout=(2.0, nb["READ_TIMEOUT"]))
    nb["lost"].settle()
    assert (debits(nb), nb["provider"].charges, nb["lost"].dropped, nb["lost"].delivered_late) == (1, 1, 1, 0)
    assert post(nb, headers(nb, key), PAYMENT).headers["idempotent-replayed"] == "true"


# --- 32 at once -------------------------------------------------------------------------------------------------

def test_32_concurrent_posts_with_one_key_run_the_work_once(fresh):
    nb, key = fresh, next(_keys)
    session_headers = headers(nb, key)
    burst = race(lambda i: post(nb, session_headers, PAYMENT), threads=32)
    assert not [r for r in burst if isinstance(r, Exception)], burst
    fresh_201s = [r for r in burst if r.status_code == 201 and "idempotent-replayed" not in r.headers]
    assert len(fresh_201s) == 1
    for answer in burst:
        if answer is fresh_201s[0]:
            continue
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            assert answer.headers["idempotent-replayed"] == "true" and answer.content == fresh_201s[0].content
        else:
            assert answer.json()["error"] == "request_in_progress"
    assert (debits(nb), nb["provider"].charges) == (1, 1)
    assert record(nb, "acct_alice", key)["debited"] is True      # the payment's one record says so


# --- bad input: a 4xx naming the problem, and nothing written -------------------------------------------------

# The requests the notebook's CONTRACT rows send (no key, a bare key, a bad escape, a 256-character key, a member
# sent twice, Bob naming Alice's wallet) are test_http_contract.py's; these are the others.
BAD = [
    # (case, headers: key / api key / raw header dict, body, status, error, words the detail must contain)
    ("empty key", {"key": ""}, PAYMENT, 400, "idempotency_key_invalid", "empty"),
    ("non-ASCII key", {"key": "clé".encode().decode("latin-1")}, PAYMENT, 400, "idempotency_key_invalid",
     "printable ASCII"),
    ("no API key", {"raw": {"Idempotency-Key": '"k-1"'}}, PAYMENT, 401, "unauthorized", "API key"),
    ("unknown API key", {"api_key": "sk_test_mallory"}, PAYMENT, 401, "unauthorized", "API key"),
    ("malformed JSON", {}, b'{"wallet": "alice"', 400, "malformed_json", "not valid JSON"),
    ("not UTF-8", {}, b'{"wallet": "\xff", "amount": 10}', 400, "malformed_json", "not valid JSON"),
    ("empty body", {}, b"", 400, "malformed_json", "not valid JSON"),
    ("a JSON list", {}, [PAYMENT], 400, "invalid_payment", "JSON object"),
    ("amount missing", {}, {"wallet": "alice"}, 400, "invalid_payment", "'amount' is missing"),
    ("wallet missing", {}, {"amount": 10}, 400, "invalid_payment", "'wallet' is missing"),
    ("amount as a string", {}, {"wallet": "alice", "amount": "10"}, 400, "invalid_payment", "amount"),
    ("amount as a float", {}, {"wallet": "alice", "amount": 10.5}, 400, "invalid_payment", "float"),
    ("amount true", {}, {"wallet": "alice", "amount": True}, 400, "invalid_payment", "amount"),
    ("amount null", {}, {"wallet": "alice", "amount": None}, 400, "invalid_payment", "amount"),
    ("amount zero", {}, {"wallet": "alice", "amount": 0}, 400, "invalid_payment", "positive"),
    ("amount negative", {}, {"wallet": "alice", "amount": -10}, 400, "invalid_payment", "positive"),
    ("amount of 40 digits", {}, {"wallet": "alice", "amount": 10**40}, 400, "invalid_payment", "digits"),
    ("wallet as a number", {}, {"wallet": 7, "amount": 10}, 400, "invalid_payment", "wallet"),
    ("wallet empty", {}, {"wallet": "", "amount": 10}, 400, "invalid_payment", "wallet"),
    ("wallet too long", {}, {"wallet": "w" * 65, "amount": 10}, 400, "invalid_payment", "65 characters"),
    ("an extra field", {}, {**PAYMENT, "currency": "eur"}, 400, "invalid_payment", "'currency'"),
    ("body over 1 KB", {}, {**PAYMENT, "note": "x" * 1100}, 413, "body_too_large", "bytes"),
    ("a lone surrogate in the wallet", {}, b'{"wallet": "\\ud800", "amount": 10}', 400, "invalid_payment",
     "lone surrogate"),
    ("a wallet nobody has", {}, {"wallet": "nobody", "amount": 10}, 404, "wallet_not_found", "'nobody'"),
]


@pytest.mark.parametrize("case, how, body, status, error, words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_naming_the_problem_and_writes_nothing(fresh, case, how, body, status, error, words):
    nb, before = fresh, tables(fresh)
    if "raw" in how:
        request_headers = how["raw"]
    else:
        request_headers = headers(nb, how.get("key", next(_keys)), how.get("api_key", "sk_test_alice"))
    answer = post(nb, request_headers, body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert set(answer.json()) == {"type", "title", "status", "detail", "error"} and answer.json()["error"] == error
    assert answer.json()["status"] == status and answer.json()["type"] == f"/problems/{error}"
    assert words in answer.json()["detail"], answer.json()["detail"]
    # read the tables back: no record, no debit marker, both wallets untouched; the provider never called
    assert tables(nb) == before
    assert (debits(nb, "alice"), debits(nb, "bob"), nb["provider"].calls, nb["provider"].charges) == (0, 0, 0, 0)


def test_the_endpoint_without_a_key_refuses_bad_input_too(fresh):
    nb, before = fresh, tables(fresh)
    answer = post(nb, headers(nb), {"wallet": "alice", "amount": "10"}, path="/v0/payments")
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_payment")
    assert tables(nb) == before and nb["provider"].calls == 0


# --- DynamoDB's failure answers behind the endpoint ----------------------------------------------------------

WRITES = [(0, "claim", "PutItem"), (1, "debit", "TransactWriteItems"), (2, "renewal", "UpdateItem"),
          (3, "completion", "UpdateItem")]


@pytest.mark.parametrize("kind, n, step", [(kind, n, step) for n, step, operation in WRITES
                                           for kind in kinds_for(operation, KINDS)])
def test_a_failure_answer_is_never_a_false_201_and_the_same_key_finishes_once(fresh, kind, n, step):
    nb, key = fresh, next(_keys)
    errors = ErrorResponses(at={n: kind}).install(nb["records"])
    errors.install(nb["wallets"])
    try:
        first = post(nb, headers(nb, key), PAYMENT)
    finally:
        errors.uninstall()
    assert errors.answered, "nothing was injected"
    if first.status_code == 201:
        assert (debits(nb), nb["provider"].charges) == (1, 1)     # botocore's own resend got through, once
    else:
        assert (first.status_code, first.headers["retry-after"]) == (503, "1")
        if step == "claim":                                        # nothing written
            assert first.json()["error"] == "try_again" and record(nb, "acct_alice", key) is None
        else:                                                      # the key stays bound; our lease ended
            assert first.json()["error"] == "payment_incomplete"
            assert (record(nb, "acct_alice", key)["status"], record(nb, "acct_alice", key)["lease_expires_at"]) == (
                "IN_PROGRESS", 0)
    again = post(nb, headers(nb, key), PAYMENT)
    assert again.status_code == 201
    assert (debits(nb), nb["provider"].charges) == (1, 1)
    if first.status_code == 201:
        assert again.content == first.content and again.headers["idempotent-replayed"] == "true"


def test_a_conflict_on_the_debit_is_a_503_with_nothing_debited(fresh):
    nb, key = fresh, next(_keys)
    errors = ErrorResponses(at={1: CONFLICT}).install(nb["records"])
    errors.install(nb["wallets"])
    try:
        first = post(nb, headers(nb, key), PAYMENT)
    finally:
        errors.uninstall()
    assert first.status_code == 503 and first.json()["detail"].startswith("TransactionCanceledException: resend")
    assert (debits(nb), nb["provider"].charges, "debited" in record(nb, "acct_alice", key)) == (0, 0, False)
    assert record(nb, "acct_alice", key)["lease_expires_at"] == 0          # kept, bound to this payment


# --- the clients: what their retries do -------------------------------------------------------------------------

def session_with(retry):
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


def test_urllib3_does_not_resend_a_post_by_default_and_does_when_told(fresh):
    nb = fresh
    assert "POST" not in Retry.DEFAULT_ALLOWED_METHODS
    post_too = Retry.DEFAULT_ALLOWED_METHODS | {"POST"}
    for retry, path, key, sent, charges in [
        (Retry(total=3), "/payments", next(_keys), 1, 1),
        (Retry(total=3, allowed_methods=post_too), "/v0/payments", None, 2, 2),      # the double charge
        (Retry(total=3, allowed_methods=post_too), "/payments", next(_keys), 2, 1),  # the key: once
    ]:
        nb["lost"].restart(at=[0], how="close")
        before = nb["provider"].charges
        try:
            session_with(retry).post(nb["server"].url + path, json=PAYMENT, headers=headers(nb, key),
                                          timeout=nb["TIMEOUT"])
        except requests.ConnectionError:
            pass
        nb["lost"].settle()
        assert (nb["lost"].sent, nb["provider"].charges - before) == (sent, charges), (retry, path)


def test_tenacity_with_the_key_made_inside_charges_twice_and_made_once_charges_once(fresh):
    nb = fresh
    for pay, charges in [(nb["pay_key_inside"], 2), (nb["pay_key_once"], 1)]:
        nb["lost"].restart(at=[0], how="close")
        before = nb["provider"].charges
        assert pay(PAYMENT).status_code == 201
        assert nb["provider"].charges - before == charges


# --- the exercise -------------------------------------------------------------------------------------------

def check(nb, pay):
    return check_retrying_client(pay, url=nb["server"].url, faults=nb["lost"], wallets=nb["wallets"],
                                 provider=nb["provider"])


def with_cell(nb, notebook, tag):
    exec(cells(notebook, tag)[0], nb)
    return nb["my_pay"]


def test_the_checker_passes_the_solution(fresh):
    verdict = check(fresh, with_cell(fresh, SOLUTION, "lesson"))
    assert verdict.passed, verdict


def test_the_checker_fails_the_starter_with_a_counterexample(fresh):
    verdict = check(fresh, with_cell(fresh, NB, "exercise"))
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    assert "debited 2 times" in verdict.message and "charge 2 of the 2" in verdict.message


def keyed_client(nb, sends, answered):
    """A client that makes one key per payment and sends it up to `sends` times, resending after a connection error;
    `answered(response)` returns the payment, raises, or returns None to send again."""
    def pay(url, payment, api_key):
        key = str(nb["keys"]())
        for _ in range(sends):
            try:
                response = requests.post(url + "/payments", json=payment, timeout=nb["TIMEOUT"],
                                         headers={"Authorization": f"Bearer {api_key}", "Idempotency-Key": f'"{key}"'})
            except requests.RequestException:
                continue
            result = answered(response)
            if result is not None:
                return result
        raise RuntimeError("gave up")
    return pay


def test_the_checker_fails_a_client_that_gives_up_on_a_503(fresh):
    no_retry_on_503 = keyed_client(fresh, 6, lambda response: response.raise_for_status() or response.json())
    verdict = check(fresh, no_retry_on_503)
    assert not verdict.passed and "TransactionConflict" in verdict.message


def test_the_checker_fails_a_client_that_resends_a_400(fresh):
    resends_everything = keyed_client(fresh, 3, lambda answer: answer.json() if answer.status_code == 201 else None)
    verdict = check(fresh, resends_everything)
    assert not verdict.passed and "refused with a 400" in verdict.message


def test_the_checker_reports_a_client_that_raises(fresh):
    def broken(url, payment, api_key):
        raise RuntimeError("boom")

    verdict = check(fresh, broken)
    assert not verdict.passed and "RuntimeError" in verdict.message


# --- the handler without HTTP: the same bytes ---------------------------------------------------------------

def test_handle_called_directly_answers_what_the_wire_carries(fresh):
    nb, key = fresh, next(_keys)
    direct = nb["handle"](Headers({"authorization": "Bearer sk_test_alice", "idempotency-key": f'"{key}"'}),
                          json.dumps(PAYMENT).encode())
    wire = post(nb, headers(nb, key), PAYMENT)
    assert direct.status_code == wire.status_code == 201
    assert wire.headers["idempotent-replayed"] == "true" and wire.content == direct.body


# --- a closed connection teaches what a held answer does ----------------------------------------------------

HELD_READ_TIMEOUT = 0.5   # the impatient clients' read timeout here: long enough for any answer that is not lost


@pytest.mark.parametrize("client", ["Retry() default", "Retry(+POST), no key", "Retry(+POST), key once",
                                    "httpx retries=3", "tenacity, key inside", "tenacity, key once"])
def test_every_client_does_the_same_whether_the_answer_is_held_or_the_connection_closed(fresh, client):
    """The notebook loses most responses by closing the connection (no waiting); the outcome is the read timeout's."""
    import httpx

    nb = fresh
    post_too = Retry.DEFAULT_ALLOWED_METHODS | {"POST"}

    def pay(read_timeout):
        url, timeout = nb["server"].url, (2.0, read_timeout)
        if client.startswith("Retry"):
            retry = Retry(total=3) if client == "Retry() default" else Retry(total=3, allowed_methods=post_too)
            path, key = ("/v0/payments", None) if "no key" in client else ("/payments", next(_keys))
            return session_with(retry).post(url + path, json=PAYMENT, headers=headers(nb, key), timeout=timeout)
        if client.startswith("httpx"):
            with httpx.Client(transport=httpx.HTTPTransport(retries=3),
                              timeout=httpx.Timeout(2.0, read=read_timeout)) as http:
                return http.post(url + "/payments", json=PAYMENT, headers=headers(nb, next(_keys)))
        generous, nb["TIMEOUT"] = nb["TIMEOUT"], timeout     # the tenacity payers read it when they send
        try:
            return nb["pay_key_inside" if "inside" in client else "pay_key_once"](PAYMENT)
        finally:
            nb["TIMEOUT"] = generous

    outcomes = {}
    for how, read_timeout in [("hold", HELD_READ_TIMEOUT), ("close", 10.0)]:
        nb["lost"].restart(at=[0], how=how)
        before = nb["provider"].charges
        try:
            seen = str(pay(read_timeout).status_code)
        except (requests.RequestException, httpx.TransportError):
            seen = "no answer"
        nb["lost"].settle()
        outcomes[how] = (seen, nb["lost"].sent, nb["provider"].charges - before)
        assert nb["lost"].slowest_seconds < HELD_READ_TIMEOUT, "an answer that was not lost came too late"
    nb["lost"].restart()
    assert outcomes["hold"] == outcomes["close"], outcomes


# --- the key stays bound to its payload after a failure (issue "One specification, one checker") ------------

def test_a_key_reused_with_another_payload_after_the_provider_failed_is_refused(fresh):
    """The debit landed, the provider was down: the key is not given back; amount 99 under it is a 422."""
    nb, key = fresh, next(_keys)
    nb["provider"].fail_next(1)
    first = post(nb, headers(nb, key), PAYMENT)
    assert (debits(nb), nb["provider"].charges) == (1, 0)                   # half done: debited, not charged
    other = post(nb, headers(nb, key), {"wallet": "alice", "amount": 99})
    assert (debits(nb), nb["provider"].charges) == (1, 0)                   # nothing charged for 99
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused", other.text
    again = post(nb, headers(nb, key), PAYMENT)                              # the same request: finished forward
    assert again.status_code == 201 and again.json()["amount"] == 10
    assert [c.amount for c in nb["provider"].made] == [10] and debits(nb) == 1
    replay = post(nb, headers(nb, key), PAYMENT)
    assert replay.headers["idempotent-replayed"] == "true" and replay.content == again.content
    # the first answer: a defined JSON problem that tells the client what to do next
    assert first.status_code == 503 and first.headers["content-type"] == "application/problem+json", first.text
    assert (first.json()["error"], first.headers["retry-after"]) == ("payment_incomplete", "1")
    assert "resend this request with the same key" in first.json()["detail"]


def test_a_saved_response_lost_to_throttling_is_finished_forward_not_replaced(fresh):
    """The completion is throttled past botocore's retries after the charge: no other body may use the key."""
    nb, key = fresh, next(_keys)
    errors = ErrorResponses(at={3: THROTTLED, 4: THROTTLED, 5: THROTTLED}).install(nb["records"])
    errors.install(nb["wallets"])
    try:
        first = post(nb, headers(nb, key), PAYMENT)
    finally:
        errors.uninstall()
    assert first.status_code == 503 and (debits(nb), nb["provider"].charges) == (1, 1)   # done, not saved
    other = post(nb, headers(nb, key), {"wallet": "alice", "amount": 99})
    assert (other.status_code, other.headers["content-type"]) == (422, "application/problem+json"), other.text
    assert first.json()["error"] == "payment_incomplete"                    # not "nothing was written"
    assert record(nb, "acct_alice", key)["payload_fingerprint"] == nb["fingerprint"](request_of(PAYMENT))
    again = post(nb, headers(nb, key), PAYMENT)                              # the original client resends
    assert again.status_code == 201 and again.json()["id"] == nb["provider"].made[0].charge_id
    assert (debits(nb), nb["provider"].charges) == (1, 1)
    assert post(nb, headers(nb, key), PAYMENT).headers["idempotent-replayed"] == "true"


def test_the_debit_is_fenced_on_the_records_lease_and_made_once(fresh):
    """The debit marks the payment's record in its own transaction: under our lease once (True), then 'debited
    before' (False); under a lease that is not the record's, LeaseLost and nothing moves."""
    nb, key = fresh, f"acct_alice#{next(_keys)}"
    nb["claim"](key, request_of(PAYMENT), "ours")
    with pytest.raises(nb["LeaseLost"]):
        nb["debit"](key, "not-ours", "alice", 10, "acct_alice")
    assert debits(nb) == 0
    assert nb["debit"](key, "ours", "alice", 10, "acct_alice") is True
    assert nb["debit"](key, "ours", "alice", 10, "acct_alice") is False       # this very payment, before
    assert debits(nb) == 1 and record(nb, "acct_alice", key.split("#", 1)[1])["debited"] is True


def test_a_payment_from_someone_elses_wallet_is_refused_before_anything_is_written(fresh):
    """Authorization before idempotency: Bob, authenticated, names Alice's wallet; a 404, nothing written."""
    nb, before = fresh, tables(fresh)
    answer = post(nb, headers(nb, next(_keys), "sk_test_bob"), PAYMENT)
    assert (answer.status_code, answer.json()["error"]) == (404, "wallet_not_found")
    assert answer.json() == post(nb, headers(nb, next(_keys)), {"wallet": "nobody", "amount": 10}).json() | {
        "detail": "you have no wallet 'alice'"}                                # the same answer as no wallet at all
    assert tables(nb) == before and nb["provider"].calls == 0


def test_lease_tokens_differ_per_attempt(fresh):
    nb, key = fresh, next(_keys)
    nb["provider"].fail_next(1)
    post(nb, headers(nb, key), PAYMENT)
    first_token = record(nb, "acct_alice", key)["lease_token"]
    nb["provider"].fail_next(1)
    post(nb, headers(nb, key), PAYMENT)
    assert record(nb, "acct_alice", key)["lease_token"] != first_token


def test_a_crash_after_the_debit_leaves_a_lease_that_runs_out_then_the_same_request_finishes(fresh):
    """A crash ends nothing: 409 (Retry-After) while the dead attempt's lease runs, then one debit, one charge."""
    nb, key = fresh, next(_keys)
    work, end_lease = nb["work"], nb["end_lease"]

    def crash_after_the_debit(record_key, lease, payment, account, started_at):
        nb["debit"](record_key, lease, payment["wallet"], payment["amount"], account)
        raise RuntimeError("the process died here")

    nb["work"], nb["end_lease"] = crash_after_the_debit, lambda record_key, lease: None   # a crash ends no lease
    try:
        first = post(nb, headers(nb, key), PAYMENT)
    finally:
        nb["work"], nb["end_lease"] = work, end_lease
    assert first.status_code == 500 and (debits(nb), nb["provider"].charges) == (1, 0)
    during = post(nb, headers(nb, key), PAYMENT)
    assert (during.status_code, during.headers["retry-after"]) == (409, "1")
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
    after = post(nb, headers(nb, key), PAYMENT)
    assert after.status_code == 201 and (debits(nb), nb["provider"].charges) == (1, 1)


# --- issue 33: the world changing, the limits, one clock for one payment -------------------------------------------

def test_a_payment_that_went_through_is_replayed_after_its_wallet_closed(fresh):
    """The owner check refuses only a key that never ran: the resend gets the saved 201, not a 404."""
    nb, key = fresh, next(_keys)
    first = post(nb, headers(nb, key), PAYMENT)
    nb["wallets"].delete_item(Key={"pk": "alice"})                       # the wallet closes
    again = post(nb, headers(nb, key), PAYMENT)
    assert first.status_code == 201 and again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert post(nb, headers(nb, next(_keys)), PAYMENT).status_code == 404   # a new key: refused, nothing saved


@pytest.mark.parametrize("amount, status, error", [(5000, 402, "insufficient_funds"),
                                                    (10**37, 400, "invalid_payment")], ids=["overdraft", "1e37"])
def test_an_overdraft_and_an_amount_over_the_limit_are_named_refusals_with_nothing_debited(fresh, amount, status,
                                                                                          error):
    nb, key = fresh, next(_keys)
    answer = post(nb, headers(nb, key), {"wallet": "alice", "amount": amount})
    assert (answer.status_code, answer.json()["error"]) == (status, error), answer.text
    assert helpers.read_balance(nb["wallets"], "alice") == OPENED_WITH and nb["provider"].charges == 0


def crash_after_the_charge(nb, key):
    """One payment whose process dies after the charge, before the completion (a crash ends no lease): a 500."""
    work, end_lease = nb["work"], nb["end_lease"]

    def crashing(*args):
        work(*args)
        raise RuntimeError("the process died after the charge")

    nb["work"], nb["end_lease"] = crashing, lambda record_key, lease: None
    try:
        assert post(nb, headers(nb, key), PAYMENT).status_code == 500
    finally:
        nb["work"], nb["end_lease"] = work, end_lease


def test_a_payment_finished_past_the_providers_window_is_looked_up_not_charged_again(fresh):
    """A crash after the charge, the same request a day and a minute later: the provider has forgotten its key, so
    the handler looks the charge up (one charge), and the record's `debited` stops a second debit (the record,
    unfinished, has no expires_at: it never expires into a new payment)."""
    nb, key = fresh, next(_keys)
    crash_after_the_charge(nb, key)
    nb["db"].clock.advance(nb["PROVIDER_WINDOW"] + 60)
    after = post(nb, headers(nb, key), PAYMENT)
    assert after.status_code == 201 and (debits(nb), nb["provider"].charges) == (1, 1), after.text


# --- issue 35: a payment whose caller never resends, finished by 09's recovery worker ----------------------------

def charged_for(nb, key, account="acct_alice"):
    """The provider's charge for this payment (its key made from the record's key and started_at), or None."""
    started_at = int(record(nb, account, key)["started_at"])
    return nb["provider"].find(nb["provider_key"](f"{account}#{key}@{started_at}"))


def test_a_departed_callers_payment_stays_half_done_without_the_worker_and_is_finished_with_it(fresh):
    nb, key = fresh, next(_keys)
    nb["provider"].fail_next()
    assert post(nb, headers(nb, key), PAYMENT).status_code == 503          # ... and the caller never resends
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + nb["RECOVERY_GRACE_SECONDS"] + 1)
    assert (debits(nb), charged_for(nb, key), record(nb, "acct_alice", key)["status"]) == (1, None, "IN_PROGRESS")
    assert nb["recover_unfinished"]()[f"acct_alice#{key}"] == 201
    assert (debits(nb), charged_for(nb, key).amount, record(nb, "acct_alice", key)["status"]) == (1, 10, "COMPLETED")
    assert f"acct_alice#{key}" not in nb["recover_unfinished"]()                  # run twice: nothing to do
    back = post(nb, headers(nb, key), PAYMENT)
    assert back.status_code == 201 and back.headers["idempotent-replayed"] == "true"
    assert back.json()["id"] == charged_for(nb, key).charge_id and debits(nb) == 1


def test_the_worker_leaves_a_payment_with_no_debit_and_steps_aside_for_a_resend(fresh):
    nb, key, other = fresh, next(_keys), next(_keys)
    nb["claim"](f"acct_alice#{key}", request_of(PAYMENT), "crashed-before-the-debit")
    nb["provider"].fail_next()
    assert post(nb, headers(nb, other), PAYMENT).status_code == 503
    nb["db"].clock.advance(nb["LEASE_SECONDS"] + nb["RECOVERY_GRACE_SECONDS"] + 1)
    stale = {r["pk"]: r for r in nb["records"].scan(ConsistentRead=True)["Items"]}[f"acct_alice#{other}"]
    assert post(nb, headers(nb, other), PAYMENT).status_code == 201            # the caller resends first ...
    assert nb["finish_left"](stale) == "taken"                                 # ... the worker's fence refuses it
    assert nb["recover_unfinished"]()[f"acct_alice#{key}"] == "nothing debited"
    assert (debits(nb), charged_for(nb, other).amount, charged_for(nb, key)) == (1, 10, None)


def test_the_worker_past_the_providers_window_looks_the_charge_up_and_never_charges_again(fresh):
    """The window rule (issue 35, step 2) for 09: the charge made, the process gone before the completion; the
    worker runs a day and a minute later, when the provider has forgotten its key: no charge request is sent."""
    nb, key, asked = fresh, next(_keys), []
    crash_after_the_charge(nb, key)
    nb["db"].clock.advance(nb["PROVIDER_WINDOW"] + 60)
    charge, first = nb["provider"].charge, charged_for(nb, key)
    nb["provider"].charge = lambda *args, **kwargs: asked.append(kwargs["idempotency_key"]) or charge(*args, **kwargs)
    assert nb["recover_unfinished"]()[f"acct_alice#{key}"] == 201           # (and any other test's leftovers)
    assert first.idempotency_key not in asked and debits(nb) == 1
    assert [c.idempotency_key for c in nb["provider"].made].count(first.idempotency_key) == 1


# --- issue 43: one payment, one record; every step that moves money fenced on the lease -----------------------------

@contextlib.contextmanager
def stalled_before(nb, name, meanwhile):
    """The attempt in this thread stalls just before its first call of the route's `name` (a global of the notebook),
    and `meanwhile()` runs -- other requests, over HTTP, served by the server's threads -- before it wakes."""
    here, original, woken = threading.get_ident(), nb[name], []

    def stalling(*args, **kwargs):
        if threading.get_ident() == here and not woken:
            meanwhile()
            woken.append(True)
        return original(*args, **kwargs)

    nb[name] = stalling
    try:
        yield woken
    finally:
        nb[name] = original


def direct(nb, key, payment=PAYMENT):
    """The route's handler called in this thread (the stalled attempt), as the server calls it."""
    return nb["handle"](Headers({"authorization": "Bearer sk_test_alice", "idempotency-key": f'"{key}"'}),
                        json.dumps(payment).encode())


def said(answer):
    """(status, error code) of an answer, sent over HTTP or returned by `handle`."""
    body = answer.content if hasattr(answer, "content") else answer.body
    return answer.status_code, json.loads(body).get("error", "")


@pytest.mark.parametrize("world", ["too little", "closed"])
def test_a_stalled_attempt_after_a_refused_takeover_moves_no_money_and_replays_the_refusal(fresh, world):
    """Issue 43's history for 09: A1 claims and stalls past its lease; A2 takes the payment over and is refused (the
    wallet holds 5, or is closed), saved; the wallet is topped up (reopened); A3 resends. A1 wakes: it must move no
    money -- every answer says nothing was written, and nothing was."""
    nb, key, answers = fresh, next(_keys), []
    if world == "too little":
        nb["open_account_wallet"](nb["wallets"], "alice", 5, owner="acct_alice")

    def meanwhile():
        nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
        if world == "closed":
            nb["wallets"].delete_item(Key={"pk": "alice"})
        answers.append(post(nb, headers(nb, key), PAYMENT))                 # A2: takes over, refused, saved
        nb["open_account_wallet"](nb["wallets"], "alice", OPENED_WITH, owner="acct_alice")
        answers.append(post(nb, headers(nb, key), PAYMENT))                 # A3: the caller resends

    with stalled_before(nb, "work", meanwhile):                             # A1: claimed, then stalls
        answers.append(direct(nb, key))                                     # ... and wakes
    answers.append(post(nb, headers(nb, key), PAYMENT))                     # any later resend
    refused = (402, "insufficient_funds") if world == "too little" else (404, "wallet_not_found")
    assert [said(a) for a in answers] == [refused] * 4
    assert (debits(nb), nb["provider"].calls, nb["provider"].charges) == (0, 0, 0)


# The route's steps, as 06's hook names them, and the route's call that comes right after each: an attempt stalled
# there wakes into that call.
STEPS = {"claimed": "debit", "debited": "set_lease", "charged": "complete"}


@pytest.mark.parametrize("who", ["the route", "the recovery worker"])
@pytest.mark.parametrize("step", STEPS)
def test_a_stalled_attempt_whose_lease_was_taken_moves_no_money_and_calls_no_provider_when_it_wakes(fresh, step,
                                                                                                    who):
    """A1 -- the route, or the worker finishing a payment whose caller left -- stalls at `step` past its lease; the
    caller's resend takes the payment over and finishes it. A1 wakes: no debit, no provider call; it answers what
    the record holds (the resend's 201). One debit, one charge in all."""
    nb, key, woke_calls = fresh, next(_keys), []
    provider = nb["provider"]
    if who == "the recovery worker":                       # a payment debited, its provider down, its caller gone
        provider.fail_next()
        assert post(nb, headers(nb, key), PAYMENT).status_code == 503
        nb["db"].clock.advance(nb["LEASE_SECONDS"] + nb["RECOVERY_GRACE_SECONDS"] + 1)
    resent = []

    def meanwhile():
        nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
        resent.append(post(nb, headers(nb, key), PAYMENT))
        here = threading.get_ident()
        for name in ("charge", "find"):                    # from now on: any provider call A1 makes
            original = getattr(provider, name)
            setattr(provider, name, lambda *a, _o=original, **k: (
                threading.get_ident() == here and woke_calls.append(name)) or _o(*a, **k))

    with stalled_before(nb, STEPS[step], meanwhile) as woken:
        if who == "the route":
            answer = direct(nb, key)
            assert answer.body == resent[0].content and answer.headers["idempotent-replayed"] == "true"
        else:
            assert nb["finish_left"](record(nb, "acct_alice", key)) == 201     # the record's answer: the resend's
    assert woken and resent[0].status_code == 201, resent[0].text
    assert woke_calls == []                                                  # no provider call after waking
    assert (debits(nb), provider.charges) == (1, 1)
    assert record(nb, "acct_alice", key)["status"] == "COMPLETED"
    assert post(nb, headers(nb, key), PAYMENT).content == resent[0].content


def test_a_stalled_attempt_meeting_an_unfinished_takeover_calls_no_provider(fresh):
    """A1 stalls after its debit; A2 takes over and fails (the provider down), ending its own lease: the record is
    IN_PROGRESS under A2's token. A1 wakes: its renewal is fenced on its own token, so it calls no provider and
    answers 409; the same request resent then finishes the payment, once."""
    nb, key, seen = fresh, next(_keys), []

    def meanwhile():
        nb["db"].clock.advance(nb["LEASE_SECONDS"] + 1)
        nb["provider"].fail_next()
        seen.append(post(nb, headers(nb, key), PAYMENT))                    # A2: 503 payment_incomplete
        seen.append(nb["provider"].calls)

    with stalled_before(nb, "set_lease", meanwhile):
        woke = direct(nb, key)
    assert said(seen[0]) == (503, "payment_incomplete") and nb["provider"].calls == seen[1]   # A1: no call
    assert said(woke) == (409, "request_in_progress")
    assert post(nb, headers(nb, key), PAYMENT).status_code == 201
    assert (debits(nb), nb["provider"].charges) == (1, 1)
