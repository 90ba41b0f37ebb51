"""Notebook 09's endpoint, black-box, against the Idempotency-Key contract it claims.

Each test drives the real server (uvicorn on 127.0.0.1, started by the notebook's own `lesson` cells)
through an HTTP client (httpx), with the rows of the notebook's own `CONTRACT` table: the table the
notebook shows is made of these same requests. Each row names what it checks in its `source`:

- draft-ietf-httpapi-idempotency-key-header-06, by section
  (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/06/):
  2.1 Syntax (an Item Structured Header whose value is a String), 2.2 Uniqueness, 2.3 Validity and
  Expiry (publish the expiry policy), 2.6 Idempotency Enforcement (a retry gets "the result of the
  previously completed operation, success or an error"; a concurrent one a conflict), 2.7 Error
  Handling (400 missing key, 422 another payload, 409 in progress, problem details with a link to
  documentation), 5 Security Considerations (composite lookup key; validate the key);
- Stripe, https://docs.stripe.com/api/idempotent_requests (keys up to 255 characters, kept at least
  24 hours, results saved once execution began, nothing saved for a failed validation or a concurrent
  conflict) and https://docs.stripe.com/api/errors (400 idempotency_error, 404, 409);
- RFC 9651 (Structured Fields: 3.3.3 String, 4.2 parsing joined field lines, 4.2.5 parsing a String),
  RFC 9457 (problem details), RFC 8259 section 4 (object member names SHOULD be unique),
  RFC 9110 section 10.2.3 (Retry-After).

Plus what the rows cannot say alone: a request refused before any work writes nothing (read back), a
replay is the first answer byte for byte, every error's `type` resolves on the server, the fingerprint
covers method, path and caller, and the published OpenAPI description states the policy.
"""

from __future__ import annotations

import itertools

import httpx
import pytest

from notebook_code import cells, lesson

NB = "09_over_http.ipynb"
_rows = itertools.count()


@pytest.fixture(scope="module")
def nb():
    namespace = lesson(NB)
    yield namespace
    namespace["server"].stop()


@pytest.fixture
def fresh(nb):
    from helpers.services.payment_provider import PaymentProvider

    nb["provider"] = PaymentProvider(nb["db"].clock)
    nb["lost"].restart()
    for wallet in ("alice", "bob"):
        nb["open_account_wallet"](nb["wallets"], wallet, 1000, owner=f"acct_{wallet}")
    return nb


def tables(nb):
    """Every item of both tables, read back (strongly consistent)."""
    return {name: sorted(nb[name].scan(ConsistentRead=True)["Items"], key=lambda item: item["pk"])
            for name in ("records", "wallets")}


REFUSED_BEFORE_WORK = {"idempotency_key_missing", "idempotency_key_invalid", "invalid_payment", "malformed_json",
                       "wallet_not_found", "unauthorized", "body_too_large"}


def _contract_rows():
    """The notebook's CONTRACT rows, from its own cells (the two that build the table's data)."""
    namespace: dict = {"ALICE": "sk_test_alice", "BOB": "sk_test_bob"}
    for source in cells(NB, "lesson"):
        if source.startswith(("Q = ", "CONTRACT += ")):
            exec(source, namespace)
    return namespace["CONTRACT"]


CONTRACT = _contract_rows()


@pytest.mark.parametrize("row", CONTRACT, ids=[f"{row[0]} [{row[5]}]" for row in CONTRACT])
def test_each_row_of_the_contract_over_http(fresh, row):
    """The row's last request gets the answer the row expects; a refusal writes nothing; errors are problems."""
    nb = fresh
    case, steps, expected, _draft, _stripe, source = row
    key = f"contract-test-{next(_rows)}"
    earlier = nb["run_steps"](steps[:-1], key)
    before = tables(nb)
    (answer,) = nb["run_steps"](steps[-1:], key)
    assert nb["outcome"](answer) == expected, (source, answer.text)
    if answer.status_code >= 400:
        problem = answer.json()
        assert answer.headers["content-type"] == "application/problem+json", source
        assert {"type", "title", "status", "detail"} <= set(problem) and problem["status"] == answer.status_code
        page = httpx.get(nb["server"].url + problem["type"], timeout=10)        # the link to the documentation
        assert page.status_code == 200 and page.json()["title"] == problem["title"]
        if problem["error"] in REFUSED_BEFORE_WORK:
            assert tables(nb) == before, f"{case}: a refused request wrote something"
    if answer.status_code in (409, 503):
        assert answer.headers["retry-after"] == "1", source
    if expected.endswith("replay"):
        assert answer.content == earlier[-1].content                           # byte for byte
        assert dict(answer.headers) == {**earlier[-1].headers, "idempotent-replayed": "true"}


def test_a_retry_after_the_provider_failed_charges_once_and_never_another_amount(fresh):
    """draft 2.2 (a key is never reused with another payload), 2.6 (the retry gets the result)."""
    nb = fresh
    steps = ["provider down", (nb["ALICE"], nb["Q"], nb["PAY"]), (nb["ALICE"], nb["Q"], nb["PAY_99"]),
             (nb["ALICE"], nb["Q"], nb["PAY"]), (nb["ALICE"], nb["Q"], nb["PAY"])]
    answers = nb["run_steps"](steps, "provider-down-test")
    assert [nb["outcome"](a) for a in answers] == [
        "503 payment_incomplete", "422 idempotency_key_reused", "201", "201 replay"]
    assert [(c.wallet_id, c.amount) for c in nb["provider"].made] == [("alice", 10)]
    assert nb["read_balance"](nb["wallets"], "alice") == 990


def test_the_fingerprint_covers_method_path_and_caller(fresh):
    """A second keyed route could never replay this one's answer: the same key and body on another path is a 422."""
    nb = fresh
    from starlette.datastructures import Headers

    headers = Headers({"authorization": "Bearer sk_test_alice", "idempotency-key": '"route-test"'})
    body = b'{"wallet": "alice", "amount": 10}'
    assert nb["handle"](headers, body).status_code == 201
    other_route = nb["handle"](headers, body, path="/refunds")
    assert other_route.status_code == 422 and b"idempotency_key_reused" in other_route.body
    base = {"method": "POST", "path": "/payments", "caller": "acct_alice", "payment": {"wallet": "alice", "amount": 10}}
    prints = {nb["fingerprint"]({**base, field: value})
              for field, value in [("method", "POST"), ("method", "PUT"), ("path", "/refunds"), ("caller", "acct_bob")]}
    assert len(prints) == 4


def test_parameters_on_the_key_are_ignored_and_the_string_is_the_key(fresh):
    """Parameters belong to the Item (RFC 9651); the draft defines none for this field: the key is the String."""
    nb = fresh
    first = nb["send"](nb["ALICE"], nb["Q"], nb["PAY"], key="params-test")
    again = nb["send"](nb["ALICE"], '"{key}";a=1', nb["PAY"], key="params-test")
    assert (nb["outcome"](first), nb["outcome"](again)) == ("201", "201 replay")


def test_the_policy_is_published_in_the_openapi_description(fresh):
    """draft 2.3 and 2.5.2: the resource publishes its idempotency specification, with its expiry policy;
    draft 5: a fixed, published key format."""
    nb = fresh
    published = httpx.get(nb["server"].url + "/openapi.json", timeout=10).json()
    policy = published["info"]["description"]
    assert f"kept {nb['RETENTION_SECONDS'] // 3600} hours" in policy and "422" in policy and "409" in policy
    assert f"1 to {nb['MAX_KEY_LENGTH']} printable ASCII" in policy
    (key_field,) = [p for p in published["paths"]["/payments"]["post"]["parameters"] if p["name"] == "Idempotency-Key"]
    assert key_field["in"] == "header" and key_field["required"] is True


def test_urllib3_retries_a_refused_post_with_the_default_allowed_methods():
    """urllib3's `allowed_methods` gates read and status retries only: a connection error is retried for a POST."""
    import socket

    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    tries = []

    class Counting(Retry):
        def increment(self, *args, **kwargs):
            tries.append(1)
            return super().increment(*args, **kwargs)

    nothing_there = socket.socket()
    nothing_there.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{nothing_there.getsockname()[1]}/payments"
    nothing_there.close()
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=Counting(total=3)))
    with pytest.raises(requests.ConnectionError):
        session.post(url, json={"wallet": "alice", "amount": 10}, timeout=5)
    assert "POST" not in Retry.DEFAULT_ALLOWED_METHODS and len(tries) == 4   # 1 try + 3 retries, all POSTs


def test_a_bare_tenacity_retry_retries_any_exception_forever_without_waiting():
    import tenacity

    defaults = tenacity.Retrying()
    assert isinstance(defaults.retry, tenacity.retry_if_exception_type)
    assert defaults.retry.predicate(RuntimeError()) is True
    assert type(defaults.stop).__name__ == "_stop_never" and isinstance(defaults.wait, tenacity.wait_none)
