"""Cheaper DynamoDB requests on moto: each expression parsed once, not once per request; a filtered Scan copies
only what it returns; a request carried to moto's DynamoDB handler and its answer written back without the
general machinery moto keeps for every service.

moto (5.2.5) parses a request's expressions from scratch every time, and the lessons send the same few
expressions thousands of times. Measured on a loop of UpdateItem, conditional PutItem, TransactWriteItems and
GetItem, this takes about a fifth off moto's CPU per request. What is kept, and why it cannot change an answer:

* **UpdateExpression.** `UpdateExpressionParser.make(text)` turns the text into a tree that depends on the
  text alone (placeholders stay placeholders). moto substitutes names and values in `UpdateExpressionValidator`,
  which works on its own `deepcopy` of the tree (moto's `Validator.__init__`); the rest of moto only reads it
  (`find_clauses`). So one tree per text is handed out every time.
* **ConditionExpression (and filters).** `ConditionExpressionParser.parse` builds a tree of `Op`s that depends
  on the text, the ExpressionAttributeNames and the ExpressionAttributeValues, and nothing else (no item, no
  table); evaluating it (`Op.expr(item)`) changes nothing in it. It is kept under those three, exactly as sent
  (their JSON, in order), parsed from copies of the names and values so it holds nothing of the request's own
  dicts; the names and values it found (moto refuses unused ones) are kept with it. Under a text alone, its
  tokens are kept too (`_lex_condition_expression`: regular expressions over the text), rebuilt into fresh
  nodes for each parse.
* **Scan, filtered before it is copied.** moto's `Table.scan` deep-copies every item it reads, works out its size
  twice, and only then applies the FilterExpression, so a filtered Scan of a table of saved responses (11's
  recovery worker, the TTL sweep) spent most of its time copying items the filter then dropped. `_scan` is moto's
  own loop (no index, the case the collection sends; with an index moto's runs) with the filter tested on the
  stored item first (evaluating it changes nothing) and each size worked out once: the same items, in the same
  order, the same ScannedCount, the same pages (Limit and the 1 MB size still count the items before the filter,
  as moto counts them), each returned item still a copy.
* **DynamoDB's handler methods.** `method_names_from_class` (moto asks `inspect.getmembers` on every request
  which actions its handler has) is kept for moto's `DynamoHandler` only.

Then moto's own work on an UpdateExpression:

* **The kept tree's copy** for the validator is made from its pickle, not by `deepcopy` (the same nodes).
* **moto's traversals** (ten per UpdateExpression) work out once per processor class and node type which of the
  processor's functions applies; moto rebuilt the map and a tuple of its keys at every node.
* **The validators that only look** (too many clauses, overlapping paths, a key updated) raise or hand the tree
  back untouched, and what they find depends on the text, its ExpressionAttributeNames and the table's key
  attributes alone: once they have passed a kept tree under those, they are not run on it again.

And the way in and out, where moto's general machinery did the same thing for every service:

* **The route.** A request to DynamoDB's endpoint goes straight to moto's DynamoDB handler (`dynamodb_answer`),
  where moto's stubber would send it after matching the URL against every service's patterns (and rebuilding
  each service's URL table per request).
* **The request.** Its WSGI environ is written as werkzeug's `EnvironBuilder` writes it for a JSON POST (the
  builder took about 40 µs a request); anything else goes to moto's own `from_primitives`.
* **The answer.** Each AttributeValue of an item is written at once (`_attribute_value`); moto's serializer
  visited the shape's ten members, each under several names, for every value. Binaries, and anything not
  plainly one type, go through moto's serializer.

Profiled in a learner's kernel for issue 46, these last six took a GetItem and a guarded UpdateItem, in a loop,
from 2.5 ms to 1.7 ms the pair.

A text or a request moto refuses raises each time, as before: nothing is kept for it. The caches are bounded
(an expression made up per request, e.g. with a value inlined, would otherwise grow them forever). Nothing
here touches DynamoDB Local, SQS or any other service. tests/test_moto_speed.py sends the same requests with
and without all of this and compares the answers (the bytes of each answer's body, too), the request's environ
with werkzeug's, and the route with the stubber's.

`use_moto_speed()` installs the caches once; `helpers.fidelity.faithful_moto` does so (the moto backend only).
`stock_moto()` puts moto's own back for a while (tests compare both).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import pickle
import re
import sys
from collections import OrderedDict, deque
from collections.abc import Iterator
from typing import Any

import moto.core.request as moto_request
import moto.core.responses as moto_responses
import moto.core.serialize as moto_serialize
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.models import table as moto_table
from moto.dynamodb.parsing import validators as moto_validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.dynamodb.responses import DynamoHandler

# the URLs botocore sends DynamoDB requests to, here: the first moto's stubber finds is DynamoDB's (tested)
_DYNAMODB_ENDPOINT = re.compile(r"https://dynamodb\.[a-z0-9-]+\.amazonaws\.com/")
_CACHED = 1024  # distinct expression texts kept; the lessons use a few dozen

_stock_make = UpdateExpressionParser.make.__func__  # type: ignore[attr-defined]
_stock_lex = ConditionExpressionParser._lex_condition_expression
_stock_parse = ConditionExpressionParser.parse
_stock_method_names = moto_responses.method_names_from_class
_stock_scan = moto_table.Table.scan
_stock_from_primitives = moto_request.Request.from_primitives.__func__  # type: ignore[attr-defined]
_stock_json_serialize = moto_serialize.BaseJSONSerializer._serialize
_stock_traverse = DepthFirstTraverser.traverse_node_recursively
_stock_deepcopy = moto_validators.deepcopy
# `_scan` is moto 5.2.5's loop: used only while moto's Table.scan still takes these arguments and has the helpers it
# calls (another moto keeps its own scan, slower but right).
_SCAN_FITS = tuple(inspect.signature(_stock_scan).parameters) == (
    "self", "filters", "limit", "exclusive_start_key", "filter_expression", "index_name", "consistent_read",
    "projection_expression", "segments") and all(
    hasattr(moto_table.Table, name) for name in ("all_items", "_item_comes_before_dct", "_get_last_evaluated_key"))


@functools.lru_cache(maxsize=_CACHED)
def _update_ast(expression: str) -> Any:
    tree = _stock_make(UpdateExpressionParser, expression)
    _pickled.keep(id(tree), (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)))
    return tree


def _deepcopy(value: Any, memo: Any = None) -> Any:
    """moto's validators' `deepcopy`: a kept tree is copied from its pickle (the same nodes, five times faster)."""
    kept = _pickled.get(id(value))
    if memo is None and kept is not None and kept[0] is value:
        return pickle.loads(kept[1])
    return _stock_deepcopy(value, memo)


# (processor class, node type) -> None (not a Node), False (not processed), or the index of its processor in the
# class's processing map (moto's maps are fixed per class: the same kinds, in the same order, for every instance)
_plans: dict[tuple[type, type], Any] = {}


def _plan(kind: type, kinds: tuple[type, ...]) -> Any:
    if not issubclass(kind, Node):
        return None
    return next((i for i, key in enumerate(kinds) if issubclass(kind, key)), False)


def _traverse(self: Any, node: Any, child_id: int = -1) -> Any:
    """moto's `DepthFirstTraverser.traverse_node_recursively`, with what each kind of node gets worked out once
    (moto builds the processor's map, and a tuple of its keys, again at every node): the same nodes, visited in
    the same order, each processed by the same function."""
    processors = tuple(self._processing_map().items())
    kinds = tuple(kind for kind, _ in processors)
    processor_class = type(self)
    before_child = self.pre_processing_of_child

    def walk(node: Any, child_id: int) -> Any:
        key = (processor_class, type(node))
        plan = _plans[key] if key in _plans else _plans.setdefault(key, _plan(key[1], kinds))
        if plan is not None:
            parent_node = node.parent
            if node.children is not None:
                for i, child_node in enumerate(node.children):
                    before_child(node, i)
                    walk(child_node, i)
            if plan is not False:
                node = processors[plan][1](node)
                node.parent = parent_node
                if parent_node:
                    parent_node.children[child_id] = node
        return node

    return walk(node, child_id)


_stock_before_child = moto_validators.ExpressionAttributeResolvingProcessor.pre_processing_of_child
_ACTIONS = (moto_validators.UpdateExpressionSetAction, moto_validators.UpdateExpressionRemoveAction,
            moto_validators.UpdateExpressionDeleteAction, moto_validators.UpdateExpressionAddAction)
_is_action: dict[type, bool] = {}


def _before_child(self: Any, parent_node: Any, child_id: int) -> None:
    """moto's `ExpressionAttributeResolvingProcessor.pre_processing_of_child` (called for every child of every
    node), asking once per node type whether it is an action: resolving is on for an action's value, not its path."""
    kind = type(parent_node)
    if kind not in _is_action:
        _is_action[kind] = issubclass(kind, _ACTIONS)
    if _is_action[kind]:
        self.resolving = child_id != 0


class _Keywords(list):  # type: ignore[type-arg]
    """DynamoDB's reserved words, moto's list as it is, looked up in a set (moto asks `word in the list` for every
    name in every expression; the list holds some 570 words)."""

    def __init__(self, words: list[str]) -> None:
        super().__init__(words)
        self._words = frozenset(words)

    def __contains__(self, word: object) -> bool:
        return word in self._words


_stock_keywords = ReservedKeywords.get_reserved_keywords()
_keywords = _Keywords(_stock_keywords)

# The validators that only look: each raises or hands back the tree as it was, and what it finds depends on the
# expression's text, its ExpressionAttributeNames and the table's key attributes alone (not on the item or the
# values). Once they have passed a kept tree under those names and keys, they pass it every time.
_LOOKING = (moto_validators.ActionCountValidator, moto_validators.OverlappingPathsValidator,
            moto_validators.UpdateHashRangeKeyValidator)
_stock_validator_init = moto_validators.UpdateExpressionValidator.__init__
_stock_validate = moto_validators.Validator.validate


def _validator_init(self: Any, expression: Any, *args: Any, **kwargs: Any) -> None:
    _stock_validator_init(self, expression, *args, **kwargs)
    self.speed_tree = expression


def _validate(self: Any) -> Any:
    """moto's `Validator.validate`, leaving out the looking validators where they have passed this tree before."""
    tree = getattr(self, "speed_tree", None)
    entry = _pickled.get(id(tree))
    if entry is None or entry[0] is not tree:
        return _stock_validate(self)
    try:
        key = (id(tree), json.dumps(self.expression_attribute_names), tuple(self.table.table_key_attrs))
    except (TypeError, ValueError):
        return _stock_validate(self)
    passed = _looked.get(key) is tree
    looking = sum(type(processor) in _LOOKING for processor in self.processors)
    n = self.node_to_validate
    for processor in self.processors:
        if type(processor) in _LOOKING:
            if passed:
                continue
            n = processor.traverse(n)
            looking -= 1
            if looking == 0:
                _looked.keep(key, tree)
        else:
            n = processor.traverse(n)
    return n


def _make(cls: type, expression_str: str) -> Any:
    if cls is not UpdateExpressionParser or not isinstance(expression_str, str):
        return _stock_make(cls, expression_str)
    return _update_ast(expression_str)


@functools.lru_cache(maxsize=_CACHED)
def _condition_tokens(expression: str) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(node) for node in _stock_lex(ConditionExpressionParser(expression, None, None)))


def _lex(self: ConditionExpressionParser) -> deque[Any]:
    expression = self.condition_expression
    if type(self) is not ConditionExpressionParser or not isinstance(expression, str):
        return _stock_lex(self)
    node = self.Node
    return deque(node(nonterminal, kind, text, value, []) for nonterminal, kind, text, value, _ in
                 _condition_tokens(expression))


class _Bounded(OrderedDict):  # type: ignore[type-arg]
    """A dict that forgets its oldest entry beyond `_CACHED` entries."""

    def keep(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > _CACHED:
            self.popitem(last=False)


_conditions = _Bounded()
# id(tree) -> (tree, its pickle): how a kept UpdateExpression tree is copied for moto's validator. The entry holds
# the tree, so its id is not reused while the entry lives.
_pickled = _Bounded()
# (id(tree), names, key attributes) -> tree: the looking validators passed it (see `_validate`)
_looked = _Bounded()


def _parse(self: ConditionExpressionParser) -> Any:
    if type(self) is not ConditionExpressionParser or not isinstance(self.condition_expression, str):
        return _stock_parse(self)
    try:
        key = (self.condition_expression, json.dumps(self.expression_attribute_names),
               json.dumps(self.expression_attribute_values))
    except (TypeError, ValueError):
        return _stock_parse(self)
    kept = _conditions.get(key)
    if kept is None:
        # parsed from copies of the names and values: the kept tree holds no reference to this request's dicts
        fresh = ConditionExpressionParser(key[0], json.loads(key[1]), json.loads(key[2]))
        kept = (_stock_parse(fresh), tuple(fresh.expr_attr_names_found), tuple(fresh.expr_attr_values_found))
        _conditions.keep(key, kept)
    op, names_found, values_found = kept
    self.expr_attr_names_found.extend(names_found)
    self.expr_attr_values_found.extend(values_found)
    return op


@functools.lru_cache(maxsize=8)
def _dynamodb_method_names(clazz: type) -> tuple[str, ...]:
    return tuple(_stock_method_names(clazz))


def _method_names(clazz: Any) -> Any:
    if clazz is DynamoHandler:
        return _dynamodb_method_names(clazz)
    return _stock_method_names(clazz)


def _scan(self: Any, filters: dict[str, Any], limit: int, exclusive_start_key: dict[str, Any],
          filter_expression: Any = None, index_name: str | None = None, consistent_read: bool = False,
          projection_expression: list[list[str]] | None = None,
          segments: tuple[None, None] | tuple[int, int] = (None, None)) -> Any:
    """moto 5.2.5's `Table.scan` without an index, each item's filter tested before it is copied."""
    if index_name:
        return _stock_scan(self, filters, limit, exclusive_start_key, filter_expression, index_name,
                           consistent_read, projection_expression, segments)
    hash_attrs, range_attrs = [self.hash_key_attr], [self.range_key_attr]
    results: list[Any] = []       # what the page returns: copies of the items that pass every filter
    passed, last_passed = 0, None  # moto's own page: the items that pass the legacy ScanFilter (before the expression)
    result_size = scanned_count = 0
    last_evaluated_key = None
    processing_previous_page = exclusive_start_key is not None
    for item in self.all_items():
        if not item.is_within_segment(segments):
            continue
        if processing_previous_page:
            if self._item_comes_before_dct(item, exclusive_start_key, hash_attrs, range_attrs, True):
                continue
            processing_previous_page = False
        size = item.size()
        if passed == limit or result_size + size > moto_table.RESULT_SIZE_LIMIT:
            last_evaluated_key = self._get_last_evaluated_key(last_passed, index_name)
            break
        passes_all_conditions = True
        for attribute_name in filters:
            attribute = item.attrs.get(attribute_name)
            comparison_operator, comparison_objs = filters[attribute_name]
            if attribute:
                if not attribute.compare(comparison_operator, comparison_objs):
                    passes_all_conditions = False
                    break
            elif comparison_operator == "NULL":
                continue
            else:
                passes_all_conditions = False
                break
        if passes_all_conditions:
            passed, last_passed = passed + 1, item
            if filter_expression is None or filter_expression.expr(item):
                results.append(moto_table.copy.deepcopy(item))
            result_size += size
        scanned_count += 1
    if projection_expression:
        results = [r.project(projection_expression) for r in results]
    return results, scanned_count, last_evaluated_key


def _from_primitives(cls: type, method: str, url: str, headers: Any, body: Any = None) -> Any:
    """moto's `Request.from_primitives` for a DynamoDB request (a POST of a JSON body to the region's endpoint),
    with the WSGI environ written out as werkzeug's `EnvironBuilder.get_environ` writes it for these arguments
    (the builder took about 40 µs a request). Anything else goes to moto's own."""
    host = url[8:-1]
    if (cls is not moto_request.Request or method != "POST" or not isinstance(body, bytes) or not body
            or not url.startswith("https://dynamodb.") or not url.endswith(".amazonaws.com/")
            or any(c in host for c in "/:?#@%")):
        return _stock_from_primitives(cls, method, url, headers, body)
    header_items = [(key, value.decode("utf-8") if isinstance(value, bytes) else value)
                    for key, value in headers.items() if key.lower() not in ["transfer-encoding"]]
    if any(not isinstance(k, str) or not isinstance(v, str) or "\n" in v or "\r" in v for k, v in header_items):
        return _stock_from_primitives(cls, method, url, headers, body)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST", "SCRIPT_NAME": "", "PATH_INFO": "/", "QUERY_STRING": "", "REQUEST_URI": "/",
        "RAW_URI": "/", "SERVER_NAME": host, "SERVER_PORT": "443", "HTTP_HOST": host, "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "https", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    content_type = next((v for k, v in header_items if k.lower() == "content-type"), None)
    if content_type is not None:
        environ["CONTENT_TYPE"] = content_type
    environ["CONTENT_LENGTH"] = str(len(body))
    combined: dict[str, list[str]] = {}
    for key, value in header_items:
        if key.lower() not in ("content-type", "content-length"):
            combined.setdefault(f"HTTP_{key.upper().replace('-', '_')}", []).append(value)
    environ.update((key, ", ".join(values)) for key, values in combined.items())
    request = cls(environ)
    request.environ[moto_request.PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {
        moto_request.environ_key_for_header(key): key
        for key, _ in header_items if moto_request.should_preserve_original_header_name(key)
    }
    request.environ.setdefault("CONTENT_LENGTH", "0")
    return request


_NOT_PLAIN = object()
_STRINGS, _BOOLEANS, _STRING_LISTS = frozenset({"S", "N"}), frozenset({"NULL", "BOOL"}), frozenset({"SS", "NS"})


def _attribute_value(value: Any) -> Any:
    """A DynamoDB AttributeValue as moto's JSON serializer writes it, or _NOT_PLAIN where that is not sure (a
    binary, anything but a dict of one type): moto's serializer visits the shape's ten members, each tried under
    several names, for every value of every item, and writes back the one the dict holds."""
    if type(value) is not dict or len(value) != 1:
        return _NOT_PLAIN
    (kind, inner), = value.items()
    if kind in _STRINGS:
        return {kind: str(inner)} if isinstance(inner, str) else _NOT_PLAIN
    if kind in _BOOLEANS:
        return {kind: inner} if type(inner) is bool else _NOT_PLAIN
    if kind in _STRING_LISTS:
        ok = type(inner) is list and all(isinstance(v, str) and v not in ([], {}) for v in inner)
        return {kind: [str(v) for v in inner]} if ok else _NOT_PLAIN
    if kind == "M" and type(inner) is dict and all(isinstance(k, str) for k in inner):
        members = {k: _attribute_value(v) for k, v in inner.items()}
        return _NOT_PLAIN if _NOT_PLAIN in members.values() else {kind: members}
    if kind == "L" and type(inner) is list:
        items = [_attribute_value(v) for v in inner]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else {kind: items}
    return _NOT_PLAIN


def _json_serialize(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
    """moto's JSON `_serialize`, with a DynamoDB AttributeValue written at once where `_attribute_value` can."""
    if (key and shape.name == "AttributeValue" and not shape.serialization
            and self.operation_model.service_model.service_name == "dynamodb"):
        plain = _attribute_value(value)
        if plain is not _NOT_PLAIN:
            serialized[key] = plain
            return
    _stock_json_serialize(self, serialized, value, shape, key)


def dynamodb_answer(request: Any) -> Any:
    """moto's answer to a DynamoDB request, as `botocore_stubber` gives it, without its search of every service's
    URL patterns for the one that names DynamoDB (each request rebuilt and matched some sixty of them): the
    request goes to moto's DynamoDB handler as the stubber sends it there, recorded as the stubber records it.
    None where the stubber would decide otherwise: stock moto, the stubber off, another URL."""
    from moto.core.models import botocore_stubber

    if not _fast or not botocore_stubber.enabled or not isinstance(request.url, str) \
            or not _DYNAMODB_ENDPOINT.fullmatch(request.url):
        return None
    from moto.core.exceptions import HTTPException
    from moto.moto_api import recorder

    normalized = moto_request.normalize_request(request)
    try:
        recorder._record_request(normalized)
        status, headers, body = DynamoHandler.dispatch(normalized, normalized.raw_url, normalized.headers)
    except HTTPException as error:
        status, headers, body = error.code, error.get_headers(), error.get_body()
    return AWSResponse(request.url, status, headers, MockRawResponse(body))


_installed = False
_fast = False   # what is in place now: moto_speed's, or stock moto's (`stock_moto`)


def _install(fast: bool) -> None:
    global _fast
    _fast = fast
    UpdateExpressionParser.make = classmethod(_make if fast else _stock_make)
    ConditionExpressionParser._lex_condition_expression = _lex if fast else _stock_lex  # type: ignore[method-assign]
    ConditionExpressionParser.parse = _parse if fast else _stock_parse  # type: ignore[method-assign]
    moto_responses.method_names_from_class = _method_names if fast else _stock_method_names
    moto_table.Table.scan = _scan if fast and _SCAN_FITS else _stock_scan  # type: ignore[method-assign]
    DepthFirstTraverser.traverse_node_recursively = _traverse if fast else _stock_traverse  # type: ignore
    moto_validators.deepcopy = _deepcopy if fast else _stock_deepcopy
    moto_request.Request.from_primitives = classmethod(_from_primitives if fast else _stock_from_primitives)
    moto_serialize.BaseJSONSerializer._serialize = _json_serialize if fast else _stock_json_serialize  # type: ignore
    moto_validators.UpdateExpressionValidator.__init__ = _validator_init if fast else _stock_validator_init
    moto_validators.UpdateExpressionValidator.validate = _validate if fast else _stock_validate
    moto_validators.ExpressionAttributeResolvingProcessor.pre_processing_of_child = (  # type: ignore[method-assign]
        _before_child if fast else _stock_before_child)
    ReservedKeywords.KEYWORDS = _keywords if fast else _stock_keywords


def use_moto_speed() -> None:
    """Install the caches in moto (idempotent)."""
    global _installed
    if not _installed:
        _install(True)
        _installed = True


@contextlib.contextmanager
def stock_moto() -> Iterator[None]:
    """Stock moto's parsing for the duration (tests compare both ways); the caches come back after."""
    _install(False)
    try:
        yield
    finally:
        _install(_installed)
