"""Notebook 06's six scenarios, run against a saved-response handler, logged while they run, and drawn.

    ours, logs = run_all(pay, globals())    # in 06: a table, one row per scenario, and each run's log
    draw(ours, logs)                        # one swimlane per scenario, from those logs

The scenarios: *retry after success*, *different payload*, *in-flight duplicate*, *crash after debit, retries*,
*lease taken over* (an attempt that runs 0.6 s past its lease while a retry takes over) and *retry after 25 h*.

`lesson` is the namespace of notebook 06's code -- `globals()` in 06, `load_lesson("06_saved_responses.ipynb")`
elsewhere. Each scenario gives it a fresh payment provider (`lesson["provider"]`, which 06's work charges) and a
wallet of 100, and uses a fresh key, so the handler's own code runs against them; it reads `WALLET`, `PAYLOAD`,
`LEASE_SECONDS`, `RETENTION_SECONDS`, `db`, `wallets` and `records` from it.

A handler is called `handler(key, payload, invocation, hook)`. The handler's work calls `hook(step)` at
"claimed", "debited" and "charged": a scenario crashes an attempt there (`crash_at`) or lets a duplicate arrive.
`Crash` is a BaseException, so no `except Exception` of the handler runs -- as when Lambda kills an invocation.

This is the harness, not the lesson: the handler and its conditions are in the notebook.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

import pandas as pd

from .ids import RequestIds
from .services.payment_provider import PaymentProvider, watch_charges
from .swimlanes import swimlanes
from .tables import open_wallet, read_balance
from .wire import Answer, watch_answers

Handler = Callable[..., Any]
Lesson = MutableMapping[str, Any]
LANES = ["caller", "handler", "idempotency record", "wallet", "provider"]
WORDS = {"PutItem": "claim", "TransactWriteItems": "debit", "UpdateItem": "complete", "DeleteItem": "release",
         "GetItem": "read"}
_keys = RequestIds(seed=6)


class Crash(BaseException):
    """The attempt dies at this step: no `except Exception` of the handler runs (a Lambda timeout, an OOM).

    The one crash every harness raises: these scenarios' `crash_at` and helpers.checker's generated histories.
    """


def crash_at(step: str) -> Callable[[str], None]:
    """A hook that kills the attempt when its work reaches `step`."""
    def hook(at: str) -> None:
        if at == step:
            raise Crash(step)
    return hook


def saw(response: Any) -> str:
    """What a caller saw, in a few words: '201 ch_0001 inv-1', '409', '422' or 'crashed'."""
    if isinstance(response, BaseException):
        return "crashed"
    body = json.loads(response["body"])
    if response["status"] == 201:
        return f'{response["status"]} {body["charge"]} {body["served_by"]}'
    return f'{response["status"]}'


def run_or_crash(handler: Handler, key: str, invocation: str, lesson: Lesson,
                 hook: Callable[[str], None] = lambda step: None) -> Any:
    try:
        return handler(key, lesson["PAYLOAD"], invocation, hook)
    except Crash as crash:
        return crash


def retry_after_success(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    payload = lesson["PAYLOAD"]
    return [handler(key, payload, "inv-1"), handler(key, payload, "inv-2")]


def different_payload(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    other = {"wallet": lesson["WALLET"], "amount": 99}
    return [handler(key, lesson["PAYLOAD"], "inv-1"), handler(key, other, "inv-2")]


def in_flight_duplicate(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    seen: list[Any] = []

    def duplicate_arrives(step: str) -> None:            # while inv-1 is between debit and charge
        if step == "debited" and not seen:
            seen.append(handler(key, lesson["PAYLOAD"], "inv-2"))
    first = handler(key, lesson["PAYLOAD"], "inv-1", duplicate_arrives)
    return seen + [first]


def crash_then_retry(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    payload, clock = lesson["PAYLOAD"], lesson["db"].clock
    crashed = run_or_crash(handler, key, "inv-1", lesson, crash_at("debited"))
    too_soon = handler(key, payload, "inv-2")             # the lease still runs
    clock.advance(lesson["LEASE_SECONDS"] + 1)
    takeover = handler(key, payload, "inv-3")             # the lease expired: inv-3 takes over
    return [crashed, too_soon, takeover, handler(key, payload, "inv-4")]


def lease_takeover(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    payload, clock, seen = lesson["PAYLOAD"], lesson["db"].clock, []

    def overrun(step: str) -> None:                       # inv-1 runs 0.6 s past its lease, after charging
        if step == "charged" and not seen:
            clock.advance(lesson["LEASE_SECONDS"] + 0.6)
            seen.append(handler(key, payload, "inv-2"))   # a retry takes over and completes
    late = handler(key, payload, "inv-1", overrun)        # then inv-1 completes
    return seen + [late, handler(key, payload, "inv-3")]


def retry_after_retention(handler: Handler, key: str, lesson: Lesson) -> list[Any]:
    first = handler(key, lesson["PAYLOAD"], "inv-1")
    lesson["db"].clock.advance(lesson["RETENTION_SECONDS"] + 3600)   # a retry 25 hours later
    return [first, handler(key, lesson["PAYLOAD"], "inv-2")]


SCENARIOS = {"retry after success": retry_after_success, "different payload": different_payload,
             "in-flight duplicate": in_flight_duplicate, "crash after debit, retries": crash_then_retry,
             "lease taken over": lease_takeover, "retry after 25 h": retry_after_retention}


def scenario(name: str, handler: Handler, lesson: Lesson, key: str | None = None) -> dict[str, Any]:
    """Run one named scenario with `handler` under a fresh key (or `key`); its row for the comparison table."""
    key = key or _keys.next()
    lesson["provider"] = PaymentProvider(lesson["db"].clock)
    open_wallet(lesson["wallets"], lesson["WALLET"], 100)
    seen = SCENARIOS[name](handler, key, lesson)
    debits = (100 - read_balance(lesson["wallets"], lesson["WALLET"])) // lesson["PAYLOAD"]["amount"]
    return {"scenario": name, "caller saw": " → ".join(saw(r) for r in seen),
            "debits": debits, "charges": lesson["provider"].charges}


class RunLog(list):
    """Rows (t, lane, event, to) of what each party did, while a handler call is under way."""
    depth = 0

    def add(self, lane: str, event: str, to: str = "") -> None:
        self.append({"t": len(self), "lane": lane, "event": event, "to": to})


def answer_words(answer: Answer) -> str:
    """DynamoDB's answer to one request, in a few words."""
    if answer.code == "OK":
        return "ok"
    if answer.code == "TransactionCanceledException":
        reasons = list(answer.reasons)
        return "marker exists" if reasons[:1] == ["ConditionalCheckFailed"] else f"cancelled {reasons}"
    if answer.code == "ConditionalCheckFailedException":
        return f'in the way ({(answer.item or {}).get("status", {}).get("S", "gone")})'
    return answer.code


@contextmanager
def logged(log: RunLog, tables: list[tuple[Any, str]], clock: Any) -> Iterator[RunLog]:
    """While inside, DynamoDB's answers on `tables` (`helpers.wire.watch_answers`) and the provider's charges go
    into `log`, but only while a handler call is under way (not the scenario's own set-up)."""
    watchers = []
    for table, lane in tables:
        def on_answer(answer: Answer, lane: str = lane) -> None:
            if log.depth:
                log.add(lane, f"{WORDS[answer.operation]}: {answer_words(answer)}", "handler")
        watchers.append(watch_answers(table, clock, on_answer=on_answer, operations=WORDS))
    try:
        with watch_charges(lambda c, new: log.add("provider", f"{'charges' if new else 'replays'} {c.charge_id}",
                                                  "handler")):
            yield log
    finally:
        for watcher in watchers:
            watcher.uninstall()


def traced(handler: Handler, log: RunLog, clock: Any) -> Handler:
    """`handler`, with what the caller sent and got added to `log` (the handler itself is unchanged)."""
    start = clock.now()

    def run(key: str, payload: Any, invocation: str, hook: Callable[[str], None] = lambda step: None,
            **options: Any) -> Any:
        log.add("caller", f"{invocation} sends (t={clock.now() - start:.1f} s)", "handler")
        log.depth += 1
        try:
            answer = handler(key, payload, invocation, hook, **options)
        except BaseException as error:
            log.add("handler", f"{invocation} {'crash' if isinstance(error, Crash) else type(error).__name__}")
            raise
        finally:
            log.depth -= 1
        log.add("handler", f"{invocation} gets {saw(answer)}", "caller")
        return answer
    return run


def run_all(handler: Handler, lesson: Lesson) -> tuple[pd.DataFrame, dict[str, RunLog]]:
    """Every scenario through `handler`, logged: the table (one row per scenario) and each run's log."""
    logs, rows = {}, []
    for name in SCENARIOS:
        logs[name] = RunLog()
        tables = [(lesson["records"], "idempotency record"), (lesson["wallets"], "wallet")]
        with logged(logs[name], tables, lesson["db"].clock) as log:
            rows.append(scenario(name, traced(handler, log, lesson["db"].clock), lesson))
    return pd.DataFrame(rows).set_index("scenario"), logs


def draw(table: pd.DataFrame, logs: dict[str, RunLog], names: list[str] | None = None) -> None:
    """One swimlane per scenario (or per name in `names`), from its log; the title says what the callers saw."""
    for name in names or list(logs):
        swimlanes(pd.DataFrame(logs[name]), lanes=LANES, title=f"{name}: {table.loc[name, 'caller saw']}",
                  xlabel="step of the run (virtual time in the caller's labels)")


def agree(table: pd.DataFrame, logs: dict[str, RunLog]) -> bool:
    """The numbers behind each picture agree with the table: as many charges and debits in the log as in it."""
    for name, events in logs.items():
        said = [e["event"] for e in events]
        if sum(s.startswith("charges") for s in said) != table.loc[name, "charges"]:
            return False
        if sum(s == "debit: ok" for s in said) != table.loc[name, "debits"]:
            return False
    return True
