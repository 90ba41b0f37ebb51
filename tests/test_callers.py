"""helpers/callers.py: an outage by virtual time, a table with a capacity, a queue that loses late answers, callers run
side by side on the virtual clock, load per bucket."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from helpers import BadInput, VirtualClock, open_wallet, read_balance
from helpers.callers import Backlog, Capacity, Outage, load, run_together
from helpers.dynamodb_errors import THROTTLING
from helpers.wire import watch_answers


def test_callers_wake_in_virtual_time_order_and_nothing_waits():
    clock, order = VirtualClock(start=0), []

    def caller(name, waits):
        for wait in waits:
            yield wait
            order.append((name, clock.now()))
        return name

    assert run_together([caller("a", [1.0, 1.0]), caller("b", [0.5, 2.0])], clock) == ["a", "b"]
    assert order == [("b", 0.5), ("a", 1.0), ("a", 2.0), ("b", 2.5)]


def test_a_callers_error_is_its_result_and_a_bad_sleep_is_refused():
    clock = VirtualClock(start=0)

    def fails():
        yield 0
        raise RuntimeError("boom")

    def bad():
        yield -1

    failed, refused = run_together([fails(), bad()], clock)
    assert isinstance(failed, RuntimeError) and isinstance(refused, BadInput)
    with pytest.raises(BadInput, match="generator"):
        run_together([lambda: None], clock)


def test_an_outage_answers_500s_inside_its_window_only(db, fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    start = db.clock.now()
    outage = Outage(db.clock, start + 1, start + 2).install(table)
    wire = watch_answers(table, db.clock)
    for _ in range(3):
        try:
            table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :one",
                              ExpressionAttributeValues={":one": 1})
        except table.meta.client.exceptions.InternalServerError:
            pass
        db.clock.advance(1)
    assert [str(a) for a in wire.answers] == ["200 OK", "500 InternalServerError", "200 OK"]
    assert outage.picked == [1]
    assert load(wire.answers, start, start + 3, 1.0).tolist() == [1, 1, 1]
    with pytest.raises(BadInput):
        Outage(db.clock, 2, 1)


def _debit(table):
    """One write; its answer: "OK", the error code, or the exception's name."""
    try:
        table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :one",
                          ExpressionAttributeValues={":one": 1})
        return "OK"
    except ClientError as error:
        return error.response["Error"]["Code"]
    except ReadTimeoutError as error:
        return type(error).__name__


def test_a_capacity_takes_so_many_writes_an_interval_and_throttles_the_rest_as_dynamodb(db, fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    Capacity(db.clock, per_interval=2, interval=0.1).install(table)
    first = [_debit(table) for _ in range(3)]
    db.clock.advance(0.1)
    assert first + [_debit(table)] == ["OK", "OK", "ProvisionedThroughputExceededException", "OK"]
    Capacity(db.clock, per_interval=0, kind=THROTTLING).install(table)
    assert _debit(table) == "ThrottlingException"
    assert read_balance(table, "w") == 100 - 3                 # the throttled ones: unwritten
    with pytest.raises(BadInput):
        Capacity(db.clock, per_interval=-1)


def test_a_backlog_applies_a_late_write_and_loses_its_answer(db, fresh):
    table = fresh()
    open_wallet(table, "w", 100)
    start = db.clock.now()
    queue = Backlog(db.clock, per_second=10, timeout=0.25, paused=(start, start + 1)).install(table)
    assert _debit(table) == "ReadTimeoutError"          # served at 1.1 s, after the caller left
    db.clock.advance(2)
    assert [_debit(table) for _ in range(3)] == ["OK", "OK", "ReadTimeoutError"]   # answers at +0.1, +0.2, +0.3 s
    assert read_balance(table, "w") == 100 - 4                 # all applied, answered or not
    assert queue.late == 2
    with pytest.raises(BadInput):
        Backlog(db.clock, per_second=0, timeout=1)
