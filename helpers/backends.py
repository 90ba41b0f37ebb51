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
import re
import types
import uuid
import weakref
from typing import Any

import boto3
import botocore.hooks
import botocore.session
from botocore.config import Config

from .clock import VirtualClock
from .fidelity.virtual_backoff import use_virtual_backoff

ENV_BACKEND = "RETRY_BACKEND"
ENV_ENDPOINT = "RETRY_DYNAMODB_ENDPOINT"
ENV_AWS_OPT_IN = "RETRY_AWS_OPT_IN"
RUN_SUFFIX_PREFIX = "-run"  # tables named `<base>-run<8 hex>` belong to one process (see `leftover_tables`)
BACKENDS = ("moto", "dynamodb-local", "aws")
REGION = "us-east-1"
# With `sdk_retries=True` the collection sets standard mode with total_max_attempts=3: the first try and two
# retries. That is botocore's general standard-mode default, but NOT its DynamoDB default: botocore 1.44.18, the
# version pinned in requirements.txt (_SERVICE_MAX_ATTEMPTS = {'dynamodb': 4, ...} in
# https://github.com/boto/botocore/blob/1.44.18/botocore/retries/standard.py), gives a DynamoDB client 4
# attempts (three retries) when no max_attempts is configured. A client here resends one time fewer than a
# stock boto3 DynamoDB client in standard mode.
SDK_MAX_ATTEMPTS = 3

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

    def __init__(self, name: str, endpoint_url: str | None, *, local: bool, shared: bool = False) -> None:
        self.name = name
        self.endpoint_url = endpoint_url
        self.clock = VirtualClock()
        self._local = local
        self._faithful = None
        self._resource_class: Any = None     # boto3's DynamoDB resource class, built once (see `resource`)
        self._table_class: Any = None        # and its Table class (see `table`)
        self._server = None
        self._tables_created: list[str] = []
        # On aws, and on a DynamoDB Local shared between kernels (RETRY_DYNAMODB_ENDPOINT, e.g. one server for a
        # workshop room), each process gets tables of its own: the same base name plus a per-process suffix.
        # Notebooks print base names only, so outputs are the same either way.
        self._shared = name == "aws" or (name == "dynamodb-local" and shared)
        self._suffix = RUN_SUFFIX_PREFIX + uuid.uuid4().hex[:8] if self._shared else ""
        if local:
            session = botocore.session.Session(session_vars=_IGNORE_LOCAL_AWS_CONFIG)
            self._session = boto3.Session(botocore_session=session, region_name=REGION, **_FAKE_CREDENTIALS)
        else:
            self._session = boto3.Session(region_name=os.environ.get("AWS_REGION", REGION))
            self._session.get_credentials()  # resolve the real ones before moto fakes the environment
        _start_moto()  # SQS always comes from moto
        if name == "moto":
            from .fidelity.faithful_moto import FaithfulMoto

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
            self._faithful.install(client)
            # moto answers in this process and never checks a signature (it takes the account from a missing one
            # as from the fake credentials: its default account), so SigV4 here would be work for nothing: about a
            # sixth of a request's CPU on moto (an UpdateItem and a GetItem, measured for issue 46). The request is
            # otherwise the same, botocore's retries included; DynamoDB Local and AWS are signed as always.
            client.meta.events.register_first("choose-signer.dynamodb", _unsigned_on_moto)
        elif self.name != "moto":
            from moto.core.models import botocore_stubber

            client.meta.events.unregister("before-send", botocore_stubber)
        use_virtual_backoff(client, self.clock)
        return client

    def resource(self, **client_options: Any) -> Any:
        """A DynamoDB resource whose client comes from `client(**client_options)`.

        boto3's `session.resource()` builds the resource class from its JSON model and a default client every
        time, both thrown away here (about a third of the cost of a fresh table on moto): the class is built once
        per backend, and each resource gets only the client asked for."""
        client = self.client(**client_options)
        if self._resource_class is None:
            self._resource_class = type(self._session.resource("dynamodb", endpoint_url=self.endpoint_url))
        return self._resource_class(client=client)

    def table(self, name: str, **client_options: Any) -> Any:
        """A boto3 `Table` for an existing table (see `tables.py` to create one).

        `resource().Table(name)` would build boto3's Table class from its JSON model on every call: here it is
        built once per backend, and each table is an instance of it with the client asked for (as `.Table`
        makes it: the table name, then ``client=``)."""
        if self._table_class is None:
            self._table_class = type(self.resource(**client_options).Table(self.table_name(name)))
        return self._table_class(self.table_name(name), client=self.client(**client_options))

    def emptied_in_process(self, name: str, key_names: list[str]) -> bool:
        """On moto, empty the existing table `name` (keyed exactly by `key_names`) in this process, as its
        requests would, and say so; False, with nothing done, where the requests must be sent (see `tables.py`)."""
        return self._faithful is not None and self._faithful.empty(REGION, name, key_names)

    def table_name(self, base: str) -> str:
        """The real table name: unique per process on `aws` and on a shared DynamoDB Local, as given elsewhere."""
        return base + self._suffix

    def remember_table(self, name: str) -> None:
        """Record a table this run created, so `aws` can delete it afterwards."""
        if name not in self._tables_created:
            self._tables_created.append(name)

    # --- SQS (always moto) --------------------------------------------------
    def sqs(self) -> Any:
        """An SQS client answered by moto in this process (FIFO deduplication as AWS documents it)."""
        from .fidelity.fifo_dedup import use_aws_deduplication

        use_aws_deduplication()
        session = botocore.session.Session(session_vars=_IGNORE_LOCAL_AWS_CONFIG)
        return boto3.Session(botocore_session=session, region_name=REGION, **_FAKE_CREDENTIALS).client("sqs")

    def close(self) -> None:
        """Delete the tables this process created on `aws` or a shared DynamoDB Local; stop one it started."""
        if self._shared:
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


_stock_accepts_kwargs = botocore.hooks.accepts_kwargs
_varkw: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _accepts_kwargs(handler: Any) -> Any:
    """botocore's check that an event handler takes ``**kwargs`` (`inspect.getfullargspec` on every handler of
    every new client, a fifth of a client's making), answered once per function: a bound method takes them
    exactly when its function does."""
    function = handler.__func__ if isinstance(handler, types.MethodType) else handler
    if not isinstance(function, types.FunctionType):
        return _stock_accepts_kwargs(handler)
    if function not in _varkw:
        _varkw[function] = _stock_accepts_kwargs(function)
    return _varkw[function]


botocore.hooks.accepts_kwargs = _accepts_kwargs


def _unsigned_on_moto(**_: Any) -> Any:
    """botocore's `choose-signer` answer for a moto client: no signature (see `Backend.client`)."""
    return botocore.UNSIGNED


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
    # Surrounding spaces are ignored everywhere (here and in RETRY_AWS_OPT_IN); blank means "not set".
    chosen = (name or "").strip().lower() or os.environ.get(ENV_BACKEND, "").strip().lower() or "moto"
    if chosen not in BACKENDS:
        raise UnknownBackend(
            f"unknown backend {chosen!r}: set {ENV_BACKEND} to one of {', '.join(BACKENDS)}"
        )
    return chosen


def aws_opted_in() -> bool:
    """RETRY_AWS_OPT_IN is ``yes`` (any case, surrounding spaces ignored)."""
    return os.environ.get(ENV_AWS_OPT_IN, "").strip().lower() == "yes"


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
            from .fidelity.dynamodb_local import DynamoDBLocalServer

            server = DynamoDBLocalServer()
            endpoint = server.endpoint_url
        backend = Backend("dynamodb-local", endpoint, local=True, shared=server is None)
        backend._server = server
    else:
        if not aws_opted_in():
            raise AwsNotOptedIn(
                f"the aws backend uses a real AWS account and costs money: set {ENV_AWS_OPT_IN}=yes "
                "to opt in (tables get unique names, pay-per-request, and are deleted at exit)"
            )
        backend = Backend("aws", None, local=False)
    atexit.register(backend.close)
    _connections[chosen] = backend
    return backend


_RUN_TABLE = re.compile(re.escape(RUN_SUFFIX_PREFIX) + r"[0-9a-f]{8}$")


def leftover_tables(backend: Backend) -> list[str]:
    """Tables named like one process's (``<base>-run<8 hex>``) that this process did not create."""
    return [n for n in all_tables(backend) if of_another_process(backend, n)]


def all_tables(backend: Backend) -> list[str]:
    """Every table's name on the backend's server (every page of ListTables)."""
    pages = backend.client().get_paginator("list_tables").paginate()
    return [name for page in pages for name in page["TableNames"]]


def of_another_process(backend: Backend, name: str) -> bool:
    """A table named like one process's (``<base>-run<8 hex>``), not this backend's."""
    return bool(_RUN_TABLE.search(name)) and not name.endswith(backend._suffix or "\0")


def main(argv: list[str] | None = None) -> int:
    """`python -m helpers.backends --delete-leftovers [--dry-run]`: delete tables killed kernels left behind.

    A kernel deletes its tables at exit; one killed with SIGKILL cannot. Run this when no notebook is open
    on the same account (or DynamoDB Local): it deletes every table named like a kernel's.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--delete-leftovers", action="store_true", required=True)
    parser.add_argument("--dry-run", action="store_true", help="list them, delete nothing")
    args = parser.parse_args(argv)
    backend = connect()
    if not backend._shared:
        print(f"{backend.name}: tables live and die with the process; nothing can be left behind")
        return 0
    leftovers = leftover_tables(backend)
    client = backend.client()
    for name in leftovers:
        print(("would delete " if args.dry_run else "deleting ") + name)
        if not args.dry_run:
            try:
                client.delete_table(TableName=name)
            except client.exceptions.ResourceNotFoundException:
                pass
    print(f"{len(leftovers)} leftover table(s) on {backend.name}" + (" (dry run)" if args.dry_run else " deleted"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
