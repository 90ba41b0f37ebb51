"""moto's expressions parsed once (helpers/fidelity/moto_speed.py) answer as stock moto's parsing does.

The same requests -- updates and conditions sent again with other values and other names, expressions moto
refuses (syntax, a missing or unused placeholder, a reserved word), a cancelled transaction, a query and a
scan with filters -- go once to stock moto and twice with the caches (the second time every expression is
already kept). The answers (or error code, message and returned item) and the table's items after each
request must be the same all three times.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.parsing.ast_nodes import Node

import helpers
from helpers.backends import backend_name
from helpers.fidelity import moto_speed

pytestmark = pytest.mark.skipif(backend_name() != "moto", reason="a patch of moto's own parsing")

DEBIT = "SET balance = balance - :a, last_rid = :rid"
GUARD = "balance >= :a AND (attribute_not_exists(last_rid) OR last_rid <> :rid)"


def _requests(t: str) -> list[tuple[str, dict[str, Any]]]:
    def debit(amount: int, rid: str, **extra: Any) -> tuple[str, dict[str, Any]]:
        return "update_item", {"TableName": t, "Key": {"pk": {"S": "alice"}}, "UpdateExpression": DEBIT,
                               "ConditionExpression": GUARD, "ReturnValues": "ALL_NEW",
                               "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                               "ExpressionAttributeValues": {":a": {"N": str(amount)}, ":rid": {"S": rid}}, **extra}

    def update(expression: str, condition: str | None = None, names: Any = None, values: Any = None):
        params: dict[str, Any] = {"TableName": t, "Key": {"pk": {"S": "alice"}}, "UpdateExpression": expression}
        if condition is not None:
            params["ConditionExpression"] = condition
        if names is not None:
            params["ExpressionAttributeNames"] = names
        if values is not None:
            params["ExpressionAttributeValues"] = values
        return "update_item", params

    put_once = {"TableName": t, "Item": {"pk": {"S": "bob"}, "balance": {"N": "5"}},
                "ConditionExpression": "attribute_not_exists(pk)"}
    return [
        ("put_item", {"TableName": t, "Item": {"pk": {"S": "alice"}, "balance": {"N": "100"},
                                               "tags": {"L": [{"S": "a"}, {"N": "1"}]}}}),
        debit(30, "r1"),
        debit(30, "r1"),                      # the same values: refused by the condition
        debit(500, "r2"),                     # the same texts, other values: refused
        debit(20, "r3"),                      # and accepted again
        update("SET #b = #b + :one", "#b > :zero", {"#b": "balance"}, {":one": {"N": "1"}, ":zero": {"N": "0"}}),
        update("SET #b = #b + :one", "#b > :zero", {"#b": "tags"}, {":one": {"N": "1"}, ":zero": {"N": "0"}}),
        update("SET #b = #b + :one", "#b > :zero", {"#b": "nothing"}, {":one": {"N": "1"}, ":zero": {"N": "0"}}),
        update("SET n = :v", "tags = :l", None, {":v": {"N": "1"}, ":l": {"L": [{"S": "a"}, {"N": "1"}]}}),
        update("SET n = :v", "tags = :l", None, {":v": {"N": "2"}, ":l": {"L": [{"S": "a"}, {"N": "2"}]}}),
        update("SET n = :v", "tags = :l", None, {":l": {"L": [{"S": "a"}, {"N": "1"}]}, ":v": {"N": "3"}}),
        update("SET balance = = :a", None, None, {":a": {"N": "1"}}),
        update("SET balance = = :a", None, None, {":a": {"N": "1"}}),
        update("SET balance = :a", "balance >>= :a", None, {":a": {"N": "1"}}),
        update("SET balance = :a", "balance >= :missing", None, {":a": {"N": "1"}}),
        update("SET balance = :a", "balance >= :a", {"#unused": "x"}, {":a": {"N": "1"}}),
        update("SET balance = :a", "status = :a", None, {":a": {"N": "1"}}),
        update("SET status = :a", None, None, {":a": {"N": "1"}}),
        update("SET #s = :a", "#s <> :a", {"#s": "status"}, {":a": {"N": "1"}}),
        update("SET #s = :a", "#s <> :a", {"#s": "status"}, {":a": {"N": "1"}}),
        update("REMOVE tags[0] SET n = n + :v", "size(tags) > :z", None, {":v": {"N": "1"}, ":z": {"N": "0"}}),
        # the validators that only look (kept once passed, under the same text, names and key attributes)
        update("SET #k = :a", None, {"#k": "n"}, {":a": {"N": "7"}}),
        update("SET #k = :a", None, {"#k": "pk"}, {":a": {"S": "x"}}),       # the key: refused, names differ
        update("SET #k = :a", None, {"#k": "n"}, {":a": {"N": "8"}}),
        update("SET pk = :a", None, None, {":a": {"S": "x"}}),
        update("SET n = :a, n = :b", None, None, {":a": {"N": "1"}, ":b": {"N": "2"}}),
        update("SET #a = :a, #b = :b", None, {"#a": "n", "#b": "m"}, {":a": {"N": "1"}, ":b": {"N": "2"}}),
        update("SET #a = :a, #b = :b", None, {"#a": "n", "#b": "n"}, {":a": {"N": "1"}, ":b": {"N": "2"}}),
        update("SET n = :a SET m = :a", None, None, {":a": {"N": "1"}}),
        update("ADD c :a ADD d :a", None, None, {":a": {"N": "1"}}),
        ("put_item", put_once),
        ("put_item", put_once),
        ("transact_write_items", {"TransactItems": [
            {"Update": {"TableName": t, "Key": {"pk": {"S": "bob"}}, "UpdateExpression": "SET balance = balance - :a",
                        "ConditionExpression": "balance >= :a", "ExpressionAttributeValues": {":a": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": t, "Key": {"pk": {"S": "alice"}}, "ConditionExpression": "balance > :x",
                                "ExpressionAttributeValues": {":x": {"N": "1000"}},
                                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}]}),
        ("transact_write_items", {"TransactItems": [
            {"Update": {"TableName": t, "Key": {"pk": {"S": "bob"}}, "UpdateExpression": "SET balance = balance - :a",
                        "ConditionExpression": "balance >= :a", "ExpressionAttributeValues": {":a": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": t, "Key": {"pk": {"S": "alice"}}, "ConditionExpression": "balance > :x",
                                "ExpressionAttributeValues": {":x": {"N": "0"}}}}]}),
        ("query", {"TableName": t, "KeyConditionExpression": "pk = :p", "FilterExpression": "balance > :b",
                   "ExpressionAttributeValues": {":p": {"S": "alice"}, ":b": {"N": "0"}}}),
        ("query", {"TableName": t, "KeyConditionExpression": "pk = :p", "FilterExpression": "balance > :b",
                   "ExpressionAttributeValues": {":p": {"S": "alice"}, ":b": {"N": "1000"}}}),
        ("scan", {"TableName": t, "FilterExpression": "begins_with(pk, :x) OR balance BETWEEN :lo AND :hi",
                  "ExpressionAttributeValues": {":x": {"S": "b"}, ":lo": {"N": "0"}, ":hi": {"N": "10"}}}),
        ("scan", {"TableName": t, "FilterExpression": "begins_with(pk, :x) OR balance BETWEEN :lo AND :hi",
                  "ExpressionAttributeValues": {":x": {"S": "a"}, ":lo": {"N": "0"}, ":hi": {"N": "10"}}}),
        ("delete_item", {"TableName": t, "Key": {"pk": {"S": "bob"}}, "ConditionExpression": "balance IN (:a, :b)",
                         "ExpressionAttributeValues": {":a": {"N": "1"}, ":b": {"N": "2"}}}),
        ("delete_item", {"TableName": t, "Key": {"pk": {"S": "bob"}}, "ConditionExpression": "balance IN (:a, :b)",
                         "ExpressionAttributeValues": {":a": {"N": "3"}, ":b": {"N": "4"}}}),
    ]


def _answers(client: Any, t: str) -> list[Any]:
    answers: list[Any] = []
    for operation, params in _requests(t):
        try:
            answer = getattr(client, operation)(**params)
            answer.pop("ResponseMetadata", None)
        except ClientError as error:
            answer = {"error": error.response["Error"], "item": error.response.get("Item"),
                      "reasons": error.response.get("CancellationReasons")}
        except Exception as error:  # noqa: BLE001 - moto's own crashes (a list compared with a number) count too
            answer = {"raised": type(error).__name__, "message": str(error)}
        items = sorted(client.scan(TableName=t, ConsistentRead=True)["Items"], key=lambda item: item["pk"]["S"])
        answers.append(repr((answer, items)).replace(t, "<table>"))
    return answers


def test_the_same_answers_as_stock_moto(db):
    client = db.client()
    with moto_speed.stock_moto():
        stock = _answers(client, helpers.fresh_table(db, "speed-stock").name)
    cached = _answers(client, helpers.fresh_table(db, "speed-cached").name)
    again = _answers(client, helpers.fresh_table(db, "speed-again").name)
    assert any("ValidationException" in answer for answer in stock)         # refusals are in the comparison
    assert any("ConditionalCheckFailed" in answer for answer in stock)
    assert cached == stock
    assert again == stock


def _shape(node: Any) -> Any:
    if isinstance(node, Node):
        return type(node).__name__, tuple(_shape(child) for child in node.children or ())
    return repr(node)


def test_a_kept_update_tree_is_not_changed_by_the_requests_that_use_it(db):
    table = helpers.fresh_table(db, "speed-tree")
    client = db.client()
    client.put_item(TableName=table.name, Item={"pk": {"S": "alice"}, "balance": {"N": "100"}})
    tree = moto_speed._update_ast(DEBIT)
    before = _shape(tree)
    balances = []
    for amount, rid in ((10, "a"), (25, "b"), (10, "c")):
        answer = client.update_item(TableName=table.name, Key={"pk": {"S": "alice"}}, UpdateExpression=DEBIT,
                                    ConditionExpression=GUARD, ReturnValues="ALL_NEW",
                                    ExpressionAttributeValues={":a": {"N": str(amount)}, ":rid": {"S": rid}})
        balances.append(answer["Attributes"]["balance"]["N"])
    assert balances == ["90", "65", "55"]
    assert moto_speed._update_ast(DEBIT) is tree
    assert _shape(tree) == before


def test_an_expression_moto_refuses_is_refused_the_same_way_every_time(db):
    table = helpers.fresh_table(db, "speed-refused")
    client = db.client()
    messages = []
    for _ in range(3):
        with pytest.raises(ClientError) as refused:
            client.update_item(TableName=table.name, Key={"pk": {"S": "alice"}}, UpdateExpression="SET balance = = :a",
                               ExpressionAttributeValues={":a": {"N": "1"}})
        messages.append((refused.value.response["Error"]["Code"], refused.value.response["Error"]["Message"]))
    with moto_speed.stock_moto(), pytest.raises(ClientError) as stock:
        client.update_item(TableName=table.name, Key={"pk": {"S": "alice"}}, UpdateExpression="SET balance = = :a",
                           ExpressionAttributeValues={":a": {"N": "1"}})
    assert messages == [(stock.value.response["Error"]["Code"], stock.value.response["Error"]["Message"])] * 3
    assert messages[0][0] == "ValidationException"


def test_a_dynamodb_request_reaches_moto_as_werkzeug_would_build_it(db, monkeypatch):
    """moto_speed writes a DynamoDB request's WSGI environ itself: the same keys and values (the body too) as
    werkzeug's EnvironBuilder gives for every request the helpers' clients send here, with and without SDK
    retries, a table name, keys and values outside ASCII, and binary values."""
    import moto.core.request as moto_request

    sent: list[tuple[Any, ...]] = []
    fast = moto_request.Request.from_primitives.__func__

    def noting(cls: type, method: str, url: str, headers: Any, body: Any = None) -> Any:
        sent.append((method, url, dict(headers), body))
        return fast(cls, method, url, headers, body)

    monkeypatch.setattr(moto_request.Request, "from_primitives", classmethod(noting))
    table = helpers.fresh_table(db, "speed-environ-é")
    for client in (db.client(), db.client(sdk_retries=True)):
        client.put_item(TableName=table.name, Item={"pk": {"S": "ålice ✓"}, "b": {"B": b"\x00\xff"}})
        client.get_item(TableName=table.name, Key={"pk": {"S": "ålice ✓"}}, ConsistentRead=True)
        client.describe_table(TableName=table.name)

    def environ(request: Any) -> tuple[dict[str, Any], bytes]:
        found = {k: v for k, v in request.environ.items() if k not in ("wsgi.input", "werkzeug.request")}
        return found, request.environ["wsgi.input"].read()

    assert len(sent) >= 6
    for method, url, headers, body in sent:
        assert fast is moto_speed._from_primitives
        assert environ(fast(moto_request.Request, method, url, headers, body)) == environ(
            moto_speed._stock_from_primitives(moto_request.Request, method, url, headers, body))


def test_dynamodb_answers_are_serialized_byte_for_byte_as_moto_does(db, monkeypatch):
    """moto_speed writes an AttributeValue (every value of every item) itself: each answer's body is the same
    bytes as moto's own serializer writes, for items of every type (nested maps and lists, sets, null, booleans,
    empty strings, text outside ASCII, and binaries, which moto's serializer keeps)."""
    import moto.core.responses as moto_responses

    bodies: list[bytes] = []
    stock_execute = moto_responses.ActionResult.execute_result

    def noting(self: Any, context: Any) -> Any:
        status, headers, body = stock_execute(self, context)
        bodies.append(body)
        return status, headers, body

    monkeypatch.setattr(moto_responses.ActionResult, "execute_result", noting)
    client = db.client()
    item = {"pk": {"S": "ålice ✓"}, "n": {"N": "-1.50"}, "empty": {"S": ""}, "none": {"NULL": True},
            "yes": {"BOOL": True}, "no": {"BOOL": False}, "ss": {"SS": ["b", "a", "✓"]}, "ns": {"NS": ["1", "2.5"]},
            "m": {"M": {"inner": {"M": {"deep": {"L": [{"S": "x"}, {"N": "1"}, {"M": {}}, {"L": []}]}}},
                        "b": {"B": b"\x00\xff"}}},
            "l": {"L": [{"NULL": True}, {"SS": ["z"]}, {"BS": [b"\x01"]}]}, "bin": {"B": b"raw"}}

    def answers(name: str) -> list[str]:
        t = helpers.fresh_table(db, name).name
        bodies.clear()
        client.put_item(TableName=t, Item=item)
        client.put_item(TableName=t, Item={"pk": {"S": "bob"}, "n": {"N": "2"}})
        client.get_item(TableName=t, Key={"pk": {"S": "ålice ✓"}})
        client.get_item(TableName=t, Key={"pk": {"S": "nobody"}})
        client.update_item(TableName=t, Key={"pk": {"S": "bob"}}, UpdateExpression="SET n = n + :one",
                           ExpressionAttributeValues={":one": {"N": "1"}}, ReturnValues="ALL_NEW")
        with pytest.raises(ClientError):
            client.put_item(TableName=t, Item=item, ConditionExpression="attribute_not_exists(pk)",
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        client.scan(TableName=t)
        client.query(TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "bob"}})
        client.batch_get_item(RequestItems={t: {"Keys": [{"pk": {"S": "bob"}}, {"pk": {"S": "ålice ✓"}}]}})
        client.transact_get_items(TransactItems=[{"Get": {"TableName": t, "Key": {"pk": {"S": "ålice ✓"}}}}])
        client.delete_item(TableName=t, Key={"pk": {"S": "bob"}}, ReturnValues="ALL_OLD")
        return [str(body).replace(t, "<table>") for body in bodies]

    with moto_speed.stock_moto():
        stock = answers("speed-bytes-stock")
    fast = answers("speed-bytes-fast")
    assert any("\"NULL\": true" in body for body in stock) and len(stock) >= 10
    assert fast == stock


def test_a_dynamodb_request_goes_where_motos_stubber_would_send_it(db, monkeypatch):
    """moto_speed sends a DynamoDB request straight to moto's DynamoDB handler: the first service moto's stubber
    matches for the client's URL is DynamoDB, and its first URL pattern that matches leads to that handler. And
    the direct route is taken for every request the helpers' clients send here (the comparisons above with stock
    moto run both routes)."""
    import re

    import moto.backend_index as backend_index
    from moto.backends import get_backend
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.responses import DynamoHandler

    client = db.client()
    url = client.meta.endpoint_url.rstrip("/") + "/"
    assert moto_speed._DYNAMODB_ENDPOINT.fullmatch(url)
    service = next(name for name, pattern in backend_index.backend_url_patterns if pattern.match(url))
    assert service == "dynamodb"
    urls = get_backend(service)[DEFAULT_ACCOUNT_ID]["us-east-1"].urls
    handler = next(h for pattern, h in urls.items() if re.compile(pattern).match(url))
    assert handler == DynamoHandler.dispatch

    routes: list[bool] = []
    direct = moto_speed.dynamodb_answer

    def noting(request: Any) -> Any:
        answer = direct(request)
        routes.append(answer is not None)
        return answer

    monkeypatch.setattr(moto_speed, "dynamodb_answer", noting)
    table = helpers.fresh_table(db, "speed-route")
    client.put_item(TableName=table.name, Item={"pk": {"S": "alice"}})
    with pytest.raises(ClientError):
        client.get_item(TableName="no-such-table", Key={"pk": {"S": "alice"}})
    assert routes and all(routes)
    with moto_speed.stock_moto():
        routes.clear()
        client.get_item(TableName=table.name, Key={"pk": {"S": "alice"}})
        assert routes == [False]
