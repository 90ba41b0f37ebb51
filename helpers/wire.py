"""The wire: every request a boto3 client sends, and the one place faults and watchers hook in.

botocore sends each attempt through one private method of the client's endpoint,
``Endpoint._do_get_response(request, operation_model, context)``, which returns what the caller's side
of the wire got: ``((http_response, parsed), None)`` for an answer, ``(None, exception)`` for none.
This module is the only code that replaces it: one `Wire` per endpoint, which runs the registered
layers around botocore's own method in one fixed order, outermost (nearest the caller) first:

    WATCHER         watch_answers(), meter's counters: see what the caller sees
    FAILURE_ANSWER  ErrorResponses: one of DynamoDB's failure answers instead of the table's own
    LOST_RESPONSE   LostResponses: the table answered, and the answer never arrives

So a watcher sees the injected answers and the lost ones, whatever order things were installed in; a
failure answer decides before a lost response (LostResponses numbers only the writes that reach the
table, and loses an answer the table gave). Within one rank the layer registered last is outermost.

Each layer is undoable: ``layer.install(target)`` returns the layer, ``layer.uninstall()`` removes it
from every client it was installed on (in any order: the other layers stay), and ``with layer.install(t):``
does both. When the last layer of an endpoint goes, botocore's own method is back.

`Between(other)` runs another request to completion on the wire, just before the caller's first write is sent
(after any read it made): the race a read-then-write loses, made to happen every time, with no threads and no
timing (the exercises' checkers use it).

`watch_answers(target, clock)` keeps the answer to each request on the wire, botocore's own resends included
(`Answer`: attempt number, HTTP status, error code, CancellationReasons, virtual time; writes only, unless
`operations=` names others), and calls `on_answer(answer)` as each arrives, if given (notebook 00's timeline,
notebook 06's scenario logs).

>>> ORDER
('watcher', 'failure answer', 'lost response')
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .clock import VirtualClock

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})

WATCHER, FAILURE_ANSWER, LOST_RESPONSE = "watcher", "failure answer", "lost response"
ORDER = (WATCHER, FAILURE_ANSWER, LOST_RESPONSE)       # outermost (nearest the caller) first

Result = tuple[Any, Any]   # ((http_response, parsed), None), or (None, exception)


def client_of(target: Any) -> Any:
    """The botocore client behind `target`: a boto3 client, a resource or a Table."""
    if hasattr(target, "_endpoint"):
        return target
    if hasattr(target, "meta") and hasattr(target.meta, "client"):
        return target.meta.client
    raise TypeError(f"expected a boto3 client, resource or Table, got {type(target).__name__}")


@dataclass
class Call:
    """One attempt on its way through the layers: what was sent, and `send()` to pass it inwards."""

    request: Any
    operation_model: Any
    context: Any
    endpoint: Any
    _inner: Callable[[], Result]

    @property
    def operation(self) -> str:
        return self.operation_model.name

    @property
    def attempt(self) -> int:
        """1 for the application's call, 2, 3 ... for botocore's own resends."""
        return int((self.context or {}).get("retries", {}).get("attempt", 1))

    def send(self) -> Result:
        """What the layers inside this one (and then DynamoDB) answer."""
        return self._inner()


class Wire:
    """The layers on one endpoint, run in `ORDER` around botocore's own `_do_get_response`."""

    def __init__(self, endpoint: Any) -> None:
        self.endpoint = endpoint
        self._own = "_do_get_response" in vars(endpoint)       # someone else's attribute: put it back on undo
        self._original = endpoint._do_get_response
        self._layers: tuple[tuple[int, int, Callable[[Call], Result]], ...] = ()
        self._count = 0

    def add(self, layer: Callable[[Call], Result], rank: str) -> Registration:
        with _lock:
            if not self._layers:
                self.endpoint._do_get_response = self._do_get_response
            self._count += 1
            entry = (ORDER.index(rank), -self._count, layer)    # later in a rank: further out
            self._layers = tuple(sorted(self._layers + (entry,), key=lambda e: e[:2]))
        return Registration(self, entry)

    def remove(self, entry: tuple[int, int, Callable[[Call], Result]]) -> None:
        with _lock:
            if entry not in self._layers:
                return
            self._layers = tuple(e for e in self._layers if e is not entry)
            if not self._layers:
                if self._own:
                    self.endpoint._do_get_response = self._original
                else:
                    del self.endpoint._do_get_response          # botocore's own method, from the class
                _wires.pop(self.endpoint, None)

    def _do_get_response(self, request: Any, operation_model: Any, context: Any) -> Result:
        layers = [layer for _, _, layer in self._layers]      # a snapshot: installs during a call wait

        def through(i: int) -> Result:
            if i == len(layers):
                return self._original(request, operation_model, context)
            return layers[i](Call(request, operation_model, context, self.endpoint, lambda: through(i + 1)))

        return through(0)


@dataclass(frozen=True)
class Registration:
    """One layer on one endpoint; `remove()` takes it off."""

    wire: Wire
    entry: tuple[int, int, Callable[[Call], Result]]

    def remove(self) -> None:
        self.wire.remove(self.entry)


_lock = threading.RLock()
_wires: weakref.WeakKeyDictionary[Any, Wire] = weakref.WeakKeyDictionary()


def watched(target: Any, operation: str, ignoring: Iterable[Any] = ()) -> bool:
    """Whether a layer on `target`'s wire (a fault, a counter, a watcher), other than those in `ignoring`, may see a
    request of `operation` now."""
    wire = _wires.get(client_of(target)._endpoint)
    if wire is None:
        return False
    ignored = [id(layer) for layer in ignoring]
    owners = [getattr(layer, "__self__", None) for _, _, layer in wire._layers]
    return any(not isinstance(owner, Layer) or id(owner) not in ignored and owner.sees(operation) for owner in owners)


def wire_of(target: Any) -> Wire:
    """The `Wire` on `target`'s endpoint (made on first use)."""
    endpoint = client_of(target)._endpoint
    with _lock:
        wire = _wires.get(endpoint)
        if wire is None:
            wire = _wires[endpoint] = Wire(endpoint)
        return wire


class Layer:
    """A fault or a watcher on the wire: `install(target)` returns self, `uninstall()` undoes every install.

    A subclass names its `rank` (one of `ORDER`) and handles each attempt in `on_wire(call)`, returning
    `call.send()` or an answer of its own.
    """

    rank: str = WATCHER

    def on_wire(self, call: Call) -> Result:
        return call.send()

    def sees(self, operation: str) -> bool:
        """Whether this layer may act on, or count, a request of `operation` (see `watched`): a layer that names
        its `operations` lets every other request pass untouched; any other layer sees them all."""
        operations = getattr(self, "operations", None)
        return operations is None or operation in operations

    def install(self, target: Any) -> Any:
        """Put this layer on `target` (a boto3 client, resource or Table) from now on; returns self."""
        registration = wire_of(target).add(self.on_wire, self.rank)
        self.__dict__.setdefault("_registrations", []).append(registration)
        return self

    def uninstall(self) -> None:
        """Take this layer off every client it was installed on; the other layers stay."""
        registrations = self.__dict__.get("_registrations", [])
        while registrations:
            registrations.pop().remove()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *_: Any) -> None:
        self.uninstall()


# --- watchers ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """One request on the wire, and what came back."""

    operation: str               # e.g. "UpdateItem"
    attempt: int                 # 1 for the application's call, 2, 3 ... for botocore's own resends
    status: int | None           # the HTTP status, or None when no answer arrived
    code: str                    # "OK", DynamoDB's error code, or the exception (e.g. "ReadTimeoutError")
    reasons: tuple[str, ...]     # CancellationReasons codes, one per action (transactions only)
    t: float                     # virtual time when the answer came back
    item: dict[str, Any] | None = field(default=None, compare=False)   # a failed condition's ALL_OLD item

    def __str__(self) -> str:
        status = "no answer" if self.status is None else str(self.status)
        reasons = f" [{', '.join(self.reasons)}]" if self.reasons else ""
        return f"{status} {self.code}{reasons}"


class AnswerLog(Layer):
    """The answers the clients it is installed on got to their writes, in order; `uninstall()` stops recording."""

    def __init__(self, clock: VirtualClock, *, on_answer: Callable[[Answer], None] | None = None,
                 operations: Iterable[str] = WRITES) -> None:
        if on_answer is not None and not callable(on_answer):
            raise TypeError(f"on_answer must be callable, got {type(on_answer).__name__}")
        self.answers: list[Answer] = []
        self.clock, self.on_answer, self.operations = clock, on_answer, frozenset(operations)

    @property
    def sends(self) -> int:
        """How many requests went on the wire."""
        return len(self.answers)

    def on_wire(self, call: Call) -> Result:
        result = call.send()
        if call.operation in self.operations:
            response, error = result
            if error is not None:
                answer = Answer(call.operation, call.attempt, None, type(error).__name__, (), self.clock.now())
            else:
                http, parsed = response
                code = parsed.get("Error", {}).get("Code", "OK") if http.status_code >= 300 else "OK"
                reasons = tuple(r.get("Code", "None") for r in parsed.get("CancellationReasons", []))
                item = parsed.get("Item") if http.status_code >= 300 else None
                answer = Answer(call.operation, call.attempt, http.status_code, code, reasons, self.clock.now(), item)
            self.answers.append(answer)
            if self.on_answer is not None:
                self.on_answer(answer)
        return result


def watch_answers(target: Any, clock: VirtualClock, *, on_answer: Callable[[Answer], None] | None = None,
                  operations: Iterable[str] = WRITES) -> AnswerLog:
    """Record every answer `target` (a client, resource or Table) gets to a write; returns the log."""
    return AnswerLog(clock, on_answer=on_answer, operations=operations).install(target)


# --- another request, run in between -------------------------------------------------------------------------

class Between(Layer):
    """Run `other()` -- another sender's request, on a client of its own -- to completion just before the `at`-th
    write (from 0) the clients this layer is installed on send, once: what a read-then-write meets when another
    request lands between its read and its write. Deterministic: no threads, no timing. `ran` says it happened.

    The layer sees the application's requests only (botocore's own resends, attempt 2 and on, pass untouched), and
    calls `other()` outside the layers of its own client, so `other` may use any client but this one's.
    """

    rank = WATCHER

    def __init__(self, other: Callable[[], Any], *, at: int = 0, operations: Iterable[str] = WRITES) -> None:
        self.other, self.at, self.operations = other, at, frozenset(operations)
        self.seen, self.ran = 0, False

    def on_wire(self, call: Call) -> Result:
        if call.operation in self.operations and call.attempt == 1:
            if self.seen == self.at and not self.ran:
                self.ran = True
                self.other()
            self.seen += 1
        return call.send()


# --- the items a client writes ---------------------------------------------------------------------------------

class WrittenKeys(Layer):
    """Note the key (DynamoDB JSON) of every item the clients it is installed on write, per table, for the tables
    whose key attributes `key_names` gives (table name -> names); `forget()` hands them over and starts again. A
    watcher of writes only: reads pass untouched, and the in-process reads (`watched`) are not kept from them."""

    operations = WRITES

    def __init__(self, key_names: dict[str, list[str]]) -> None:
        self.key_names, self.keys = key_names, {}

    def on_wire(self, call: Call) -> Result:
        if call.operation in WRITES and call.attempt == 1:
            for table, item in _items_written(call.operation, json.loads(call.request.body or b"{}")):
                names = self.key_names.get(table)
                if names and all(name in item for name in names):
                    key = {name: item[name] for name in names}
                    self.keys.setdefault(table, {})[json.dumps(key, sort_keys=True)] = key
        return call.send()

    def forget(self) -> dict[str, list[dict[str, Any]]]:
        found, self.keys = {table: list(keys.values()) for table, keys in self.keys.items()}, {}
        return found


def _items_written(operation: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(table, the item's key or whole item) for each item a write request names."""
    if operation == "TransactWriteItems":
        specs = [next(iter(entry.values())) for entry in params.get("TransactItems", [])]
    elif operation == "BatchWriteItem":
        specs = [{"TableName": table, **next(iter(entry.values()))}
                 for table, entries in params.get("RequestItems", {}).items() for entry in entries]
    else:
        specs = [params]
    return [(spec.get("TableName", ""), spec.get("Key") or spec.get("Item") or {}) for spec in specs]
