"""Notebook 06's exercise: a completion fenced on the lease, and safe to retry.

The reader writes `complete(records, key, lease_token, response)` for notebook
06's idempotency records. It saves `response` (a status and the body's exact
text, as JSON in ``response``) and
``status = "COMPLETED"`` only while the record carries this attempt's
``lease_token``, and returns True when the record holds this attempt's response
(saved now, or by its own earlier attempt whose answer was lost) and False when
another attempt holds the lease, writing nothing. The checker plays the lease
takeovers of notebook 06 (one of them landing between the completion's read and
its write, run on the wire: `helpers.wire.Between`), lost responses, DynamoDB
refusing the completion's write (a throttle, a 500 that wrote nothing),
concurrent completions and bad input.
Its counterexample is printed a few short lines at a time (each at most 100
characters), so it reads whole on GitHub.

When those scenarios pass, the completion is swapped into notebook 06's own `pay` (the
notebook's namespace: the reader's function's module globals, or notebook 06's lesson
cells loaded here when it was written elsewhere, such as in the solution) and `pay` is
held to the specification (`helpers/checker.py`): a completion that reports a failed
write as saved, or reads any failed condition as its own, gets the shortest history
that breaks a property.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..backends import Backend, connect
from ..concurrency import race
from ..dynamodb_errors import ERROR_500_NOT_APPLIED, THROTTLING, ErrorResponses
from ..faults import LostResponses
from ..tables import fresh_table, read_item
from ..wire import Between
from .specified import SHRINK, Specification, namespace_of
from .verdict import Counterexample, Verdict, answer, resend, said, snapshot, verdict

Complete = Callable[[Any, str, str, dict], Any]
TABLE, KEY, COPIES = "exercise-06", "key-1", 16
HISTORIES = 60               # generated histories for 06's pay with the reader's completion (a few s on moto)
INJECTED = "crashes, duplicates in flight, lost responses, DynamoDB's failure answers and the provider down"


def response_of(invocation: str) -> dict[str, Any]:
    """The response `invocation` saves: a status and the body as the text that is sent."""
    return {"status": 201, "body": json.dumps({"charge": "ch_0001", "served_by": invocation})}


def _served_by(saved: Any) -> Any:
    if isinstance(saved, str):
        saved = json.loads(saved)
    body = saved.get("body") if isinstance(saved, dict) else None
    if isinstance(body, str):
        body = json.loads(body)
    return body.get("served_by") if isinstance(body, dict) else None


def _lines(*parts: str) -> str:
    """One counterexample, a line per part (each part short enough for GitHub's width)."""
    return "\n".join(parts)


def _claimed_by(db: Backend, invocation: str, records: Any = None) -> Any:
    """The record for KEY, claimed (IN_PROGRESS) under `invocation`'s lease (in a fresh table unless `records`)."""
    records = records or fresh_table(db, TABLE)
    records.put_item(Item={"pk": KEY, "status": "IN_PROGRESS", "lease_token": invocation,
                           "lease_expires_at": 30, "expires_at": 86_400, "payload_fingerprint": "ae78d93bbd0548fb"})
    return records


def _item_of(records: Any) -> dict[str, Any]:
    return read_item(records, {"pk": KEY}) or {}


def _record(records: Any) -> str:
    """The record for KEY, as a counterexample tells it: status, lease and whose response it holds."""
    item = read_item(records, {"pk": KEY})
    if item is None:
        return "no record"
    served_by = _served_by(item.get("response"))
    held = f"{item.get('status')}, lease {item.get('lease_token')}"
    return held + (f", response served by {served_by}" if served_by else ", no response")


def _complete_as(complete: Complete, records: Any, invocation: str) -> Any:
    return answer(lambda: complete(records, KEY, invocation, response_of(invocation)))


def _scenario_taken_over(db: Backend, complete: Complete, completed: bool, story: str, then: str) -> None:
    """inv-2 took over inv-1's expired lease (and, if `completed`, completed): inv-1's completion must not land."""
    records = _claimed_by(db, "inv-2", _claimed_by(db, "inv-1"))
    if completed:
        records.update_item(Key={"pk": KEY}, UpdateExpression="SET #s = :c, #r = :r",
                            ExpressionAttributeNames={"#s": "status", "#r": "response"},
                            ExpressionAttributeValues={":c": "COMPLETED",
                                                       ":r": json.dumps(response_of("inv-2"), sort_keys=True)})
    before = _record(records)
    result = _complete_as(complete, records, "inv-1")
    if result is not False or _record(records) != before:
        raise Counterexample(_lines(story, f"(the record: {before});", then,
                                    f"your completion answered {said(result)} and left the record",
                                    f"{_record(records)}."))


def _scenario_lost_responses(db: Backend, complete: Complete, schedules: int) -> None:
    """Resent after each lost response, inv-1's completion ends True with its own response saved."""
    expected = "COMPLETED, lease inv-1, response served by inv-1"
    for seed in range(schedules):
        records = _claimed_by(db, "inv-1")
        faults = LostResponses(p=0.5, seed=seed).install(records)
        result = resend(lambda: complete(records, KEY, "inv-1", response_of("inv-1")))
        if result is not True or _record(records) != expected:
            lost = f"responses of write requests {faults.lost} lost" if faults.lost else "no response lost"
            why = []
            if _item_of(records).get("lease_token") is None and _item_of(records):
                why = ["Your completion removed the lease token: the record keeps it, the fence that says",
                       "whose response it holds (a resend of this completion finds its own token)."]
            elif result is False and _record(records) == expected:
                why = ["Its own earlier send had landed (its answer lost): the record holds inv-1's",
                       "response, so the answer is True. A failed condition is not always a takeover."]
            raise Counterexample(_lines(
                "inv-1 holds the lease and completes, resending after each lost response",
                f"({lost}, seed {seed}):",
                f"expected True and the record {expected};",
                f"your completion finally answered {said(result)} and left the record",
                f"{_record(records)}.", *why))


def _scenario_taken_over_in_between(db: Backend, complete: Complete) -> None:
    """A takeover between the completion's read and its write: False, and the record left to inv-2."""
    records = _claimed_by(db, "inv-1")
    other = db.table(TABLE)                           # inv-2, on a client of its own
    takeover = Between(lambda: _claimed_by(db, "inv-2", other)).install(records)
    result = _complete_as(complete, records, "inv-1")
    takeover.uninstall()
    if result is not False or _record(records) != "IN_PROGRESS, lease inv-2, no response":
        raise Counterexample(_lines(
            "inv-1 held the lease and completed; just before its write reached the table, its lease",
            "expired and inv-2 took over (the record: IN_PROGRESS, lease inv-2, no response):",
            "expected False and the record left to inv-2;",
            f"your completion answered {said(result)} and left the record {_record(records)}.",
            "Anything can happen between a read and a write: the fence is the write's condition."))


def _scenario_refused(db: Backend, complete: Complete) -> None:
    """A throttle or a 500 that wrote nothing is never answered True."""
    for kind, words in ((THROTTLING, "ThrottlingException"),
                        (ERROR_500_NOT_APPLIED, "a 500 (InternalServerError)")):
        records = _claimed_by(db, "inv-1")
        errors = ErrorResponses(at={0: kind}).install(records)
        result = _complete_as(complete, records, "inv-1")
        errors.uninstall()
        if result is True and _record(records) != "COMPLETED, lease inv-1, response served by inv-1":
            raise Counterexample(_lines(
                f"inv-1 holds the lease and completes; DynamoDB answers its write with {words},",
                "and nothing was written: expected an error (the caller sends the completion again);",
                f"your completion answered True and left the record {_record(records)}.",
                "True means the record holds this attempt's response: only a success says so."))


def _scenario_concurrent(db: Backend, complete: Complete) -> None:
    """Concurrent completions by the holder and a stale invocation: only the holder's land."""
    records = _claimed_by(db, "inv-2", _claimed_by(db, "inv-1"))
    holders = ["inv-1" if i % 2 else "inv-2" for i in range(COPIES)]
    outcomes = race(lambda i: complete(records, KEY, holders[i], response_of(holders[i])), COPIES)
    wrong = [(h, o) for h, o in zip(holders, outcomes) if o is not (h == "inv-2")]
    if wrong or _record(records) != "COMPLETED, lease inv-2, response served by inv-2":
        detail = (f"{wrong[0][0]}'s copy answered {said(wrong[0][1])}" if wrong
                  else f"the record is {_record(records)}")
        raise Counterexample(_lines(
            f"{COPIES // 2} copies of inv-2's completion (it holds the lease) and {COPIES // 2} of inv-1's",
            "(its lease was taken over) at the same instant: expected True for every inv-2 copy,",
            f"False for every inv-1 copy, and inv-2's response saved; {detail}."))


def _scenario_bad_input(db: Backend, complete: Complete) -> None:
    """An unclaimed key or an empty lease token: False (or an error), and nothing written."""
    records = fresh_table(db, TABLE)
    result = _complete_as(complete, records, "inv-1")
    if not (result is False or isinstance(result, (ValueError, LookupError))) or snapshot(records):
        raise Counterexample(_lines(
            "completing a key that was never claimed should answer False (or raise) and write nothing;",
            f"your completion answered {said(result)} and left {_record(records)}."))
    records = _claimed_by(db, "inv-1")
    before = _record(records)
    result = answer(lambda: complete(records, KEY, "", response_of("nobody")))
    if not (result is False or isinstance(result, ValueError)) or _record(records) != before:
        raise Counterexample(_lines(
            "an empty lease token should answer False (or raise ValueError) and write nothing;",
            f"your completion answered {said(result)} and left the record {_record(records)}."))


def check_fenced_completion(complete: Complete, *, db: Backend | None = None, schedules: int = 8,
                            histories: int = HISTORIES) -> Verdict:
    """Is `complete(records, key, lease_token, response)` fenced on the lease and safe to retry? A `Verdict`."""
    db = db or connect()
    held = Specification(lambda: pay_held(complete, histories=histories), injected=INJECTED)
    return verdict(
        [lambda: _scenario_taken_over(db, complete, False, "inv-1's lease expired and inv-2 took over",
                                      "then inv-1 woke up and completed: expected False and the record left to inv-2;"),
         lambda: _scenario_taken_over(db, complete, True, "inv-2 took over inv-1's expired lease and completed",
                                      "then inv-1 completed: expected False and the record unchanged;"),
         lambda: _scenario_taken_over_in_between(db, complete),
         lambda: _scenario_lost_responses(db, complete, schedules),
         lambda: _scenario_refused(db, complete),
         lambda: _scenario_concurrent(db, complete),
         lambda: _scenario_bad_input(db, complete),
         held],
        passed=lambda: f"both lease takeovers (one between your read and your write), {schedules} lost-response "
                       f"schedules, a throttle and a 500, {COPIES} concurrent completions "
                       f"and bad input all handled. {held.passed()}",
    )


# --- issue 23: the reader's completion inside 06's own pay, held to the specification ---------------------------

def lesson_namespace(complete: Complete) -> dict[str, Any]:
    """Notebook 06's namespace: the completion's own module globals if they hold 06's `pay`, else 06's lesson
    cells loaded here (once per process)."""
    return namespace_of(complete, "06_saved_responses.ipynb",
                        ("pay", "records", "wallets", "db", "provider", "complete"))


def pay_held(complete: Complete, *, histories: int = HISTORIES) -> Any:
    """06's `pay` with `complete(records, key, lease_token, response)` in place of its own completion, held to the
    specification over `histories` generated histories: a `helpers.checker.Verdict`."""
    from ..checker import check_handler

    ns = lesson_namespace(complete)
    kept = ns["complete"]
    ns["complete"] = lambda key, lease_token, response: complete(ns["records"], key, lease_token, response)
    from ..subjects import Subject

    subject = Subject(ns["pay"], name="06's pay with your completion")
    # the completion meets none of these: the world changing, amounts and names at the limits, another request
    # before a DynamoDB call (a copy at a step, after a stall, is what reaches it), a lasting fault on the debit's
    # transaction
    subject.world = subject.at_limits = subject.names_at_limits = subject.between_calls = subject.lasting = False
    try:
        return check_handler(subject, histories=histories, steps=4, shrink=SHRINK)
    finally:
        ns["complete"] = kept
