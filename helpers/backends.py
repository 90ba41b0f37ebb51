"""Where the DynamoDB calls go: one environment variable picks the backend.

    RETRY_BACKEND=moto            (default) moto inside this Python process
    RETRY_BACKEND=dynamodb-local  AWS's DynamoDB Local, started on 127.0.0.1,
                                  or the one at RETRY_DYNAMODB_ENDPOINT
    RETRY_BACKEND=aws             a real AWS account; also needs RETRY_AWS_OPT_IN=yes

A notebook never changes to switch: it calls `connect()` and gets clients.
SQS always comes from moto, whichever backend holds the tables.
"""

from __future__ import annotations

import atexit
import os
import uuid
from typing import Any

import boto3
import botocore.session
from botocore.config import Config

from .clock import VirtualClock
from .virtual_backoff import use_virtual_backoff

ENV_BACKEND = "RETRY_BACKEND"
ENV_ENDPOINT = "RETRY_DYNAMODB_ENDPOINT"
ENV_AWS_OPT_IN = "RETRY_AWS_OPT_IN"
BACKENDS = ("moto", "dynamodb-local", "aws")
REGION = "us-east-1"
SDK_MAX_ATTEMPTS = 3  # botocore's standard retry mode: the first try and two retries

_FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
_IGNORE_LOCAL_AWS_CONFIG = {
    # Read no profile, config file or configured endpoint from the environment:
    # the local backends must never pick up a real account's settings.
    "profile": (None, None, None, None),
    "config_file": (None, None, os.devnull, None),
    "credentials_file": (None, None, os.devnull, None),
    "ignore_configured_endpoint_urls": (None, None, True, None),
}


class UnknownBackend(ValueError):
    """The backend name is not one of `BACKENDS`."""


class AwsNotOptedIn(RuntimeError):
    """The `aws` backend was asked for without RETRY_AWS_OPT_IN=yes."""


class Backend:
    """A connection to one DynamoDB backend, with a virtual clock.

    Use `client()` / `resource()` / `table()` for DynamoDB and `sqs()` for SQS.
    """

    def __init__(self, name: str, endpoint_url: str | None, *, local: bool) -> None:
        self.name = name
        self.endpoint_url = endpoint_url
        self.clock = VirtualClock()
        self._local = local
        self._faithful = None
        self._server = None
        self._tables_created: list[str] = []
        self._suffix = "" if name != "aws" else "-" + uuid.uuid4().hex[:8]
        if local:
            session = botocore.session.Session(session_vars=_IGNORE_LOCAL_AWS_CONFIG)
            self._session = boto3.Session(botocore_session=session, region_name=REGION, **_FAKE_CREDENTIALS)
        else:
            self._session = boto3.Session(region_name=os.environ.get("AWS_REGION", REGION))
            self._session.get_credentials()  # resolve the real ones before moto fakes the environment
        _start_moto()  # SQS always comes from moto
        if name == "moto":
            from .faithful_moto import FaithfulMoto

            self._faithful = FaithfulMoto(self.clock)
            self.endpoint_url = f"https://dynamodb.{REGION}.amazonaws.com"

    # --- DynamoDB -----------------------------------------------------------
    def client(self, *, sdk_retries: bool = False, max_attempts: int = SDK_MAX_ATTEMPTS) -> Any:
        """A DynamoDB client. With `sdk_retries`, botocore's standard mode resends on timeouts."""
        config = Config(
            retries={"mode": "standard", "total_max_attempts": max_attempts if sdk_retries else 1},
            max_pool_connections=64,
            connect_timeout=5,
            read_timeout=30,
        )
        client = self._session.client("dynamodb", endpoint_url=self.endpoint_url, config=config)
        if self._faithful is not None:
            self._faithful.attach(client)
        elif self.name != "moto":
            from moto.core.models import botocore_stubber

            client.meta.events.unregister("before-send", botocore_stubber)
        use_virtual_backoff(client, self.clock)
        return client

    def resource(self, **client_options: Any) -> Any:
        """A DynamoDB resource whose client comes from `client(**client_options)`."""
        resource = self._session.resource("dynamodb", endpoint_url=self.endpoint_url)
        resource.meta.client = self.client(**client_options)
        return resource

    def table(self, name: str, **client_options: Any) -> Any:
        """A boto3 `Table` for an existing table (see `tables.py` to create one)."""
        return self.resource(**client_options).Table(self.table_name(name))

    def table_name(self, base: str) -> str:
        """The real table name: unique per run on `aws`, as given elsewhere."""
        return base + self._suffix

    def remember_table(self, name: str) -> None:
        """Record a table this run created, so `aws` can delete it afterwards."""
        if name not in self._tables_created:
            self._tables_created.append(name)

    # --- SQS (always moto) --------------------------------------------------
    def sqs(self) -> Any:
        """An SQS client answered by moto in this process (FIFO deduplication as AWS documents it)."""
        from .fifo_dedup import use_aws_deduplication

        use_aws_deduplication()
        session = botocore.session.Session(session_vars=_IGNORE_LOCAL_AWS_CONFIG)
        return boto3.Session(botocore_session=session, region_name=REGION, **_FAKE_CREDENTIALS).client("sqs")

    def close(self) -> None:
        """Delete the tables an `aws` run created; stop a DynamoDB Local this run started."""
        if self.name == "aws":
            client = self.client()
            for name in self._tables_created:
                try:
                    client.delete_table(TableName=name)
                except client.exceptions.ResourceNotFoundException:
                    pass
            self._tables_created.clear()
        if self._server is not None:
            self._server.stop()

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"


_moto_mock = None
_connections: dict[str, Backend] = {}


def _start_moto() -> Any:
    global _moto_mock
    if _moto_mock is None:
        from moto import mock_aws

        # moto builds boto3 sessions of its own, which would fail on (or read) a real profile.
        # In a process that mocks AWS, a real account's profile has no place: drop it.
        for variable in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
            os.environ.pop(variable, None)

        _moto_mock = mock_aws()
        _moto_mock.start()
    return _moto_mock


def backend_name(name: str | None = None) -> str:
    """The backend to use: `name`, else $RETRY_BACKEND, else ``"moto"``."""
    chosen = (name or os.environ.get(ENV_BACKEND) or "moto").strip().lower()
    if chosen not in BACKENDS:
        raise UnknownBackend(
            f"unknown backend {chosen!r}: set {ENV_BACKEND} to one of {', '.join(BACKENDS)}"
        )
    return chosen


def connect(name: str | None = None) -> Backend:
    """The backend for this process, started on first use and reused after.

    Re-running a notebook's setup cell returns the same connection.
    """
    chosen = backend_name(name)
    if chosen in _connections:
        return _connections[chosen]
    if chosen == "moto":
        backend = Backend("moto", None, local=True)
    elif chosen == "dynamodb-local":
        endpoint = os.environ.get(ENV_ENDPOINT)
        server = None
        if not endpoint:
            from .dynamodb_local import DynamoDBLocalServer

            server = DynamoDBLocalServer()
            endpoint = server.endpoint_url
        backend = Backend("dynamodb-local", endpoint, local=True)
        backend._server = server
    else:
        if os.environ.get(ENV_AWS_OPT_IN, "").lower() != "yes":
            raise AwsNotOptedIn(
                f"the aws backend uses a real AWS account and costs money: set {ENV_AWS_OPT_IN}=yes "
                "to opt in (tables get unique names, pay-per-request, and are deleted at exit)"
            )
        backend = Backend("aws", None, local=False)
    atexit.register(backend.close)
    _connections[chosen] = backend
    return backend
