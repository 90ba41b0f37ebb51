"""helpers/wire.py: one owner of botocore's response hook per client -- layers in one order, each undoable."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from helpers import LostResponses, open_wallet, read_balance
from helpers.dynamodb_errors import THROTTLING, ErrorResponses
from helpers.meter import CallCounter, CapacityMeter
from helpers.wire import FAILURE_ANSWER, LOST_RESPONSE, ORDER, WATCHER, client_of, watch_answers


def debit(table):
    table.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                      ExpressionAttributeValues={":a": 10})


def own_method_is_back(table) -> bool:
    endpoint = client_of(table)._endpoint
    return "_do_get_response" not in vars(endpoint) and \
        endpoint._do_get_response.__func__ is type(endpoint)._do_get_response


def test_the_order_is_stated_once():
    assert ORDER == (WATCHER, FAILURE_ANSWER, LOST_RESPONSE)
    assert (LostResponses.rank, ErrorResponses.rank, CallCounter.rank) == (LOST_RESPONSE, FAILURE_ANSWER, WATCHER)


@pytest.mark.parametrize("watch_first", [True, False])
def test_a_watcher_sees_the_injected_answers_whatever_the_install_order(table, db, watch_first):
    open_wallet(table, "w", 100)
    if watch_first:
        wire = watch_answers(table, db.clock)
        ErrorResponses(at={0: THROTTLING}).install(table)
    else:
        ErrorResponses(at={0: THROTTLING}).install(table)
        wire = watch_answers(table, db.clock)
    with pytest.raises(ClientError):
        debit(table)
    assert [str(a) for a in wire.answers] == ["400 ThrottlingException"]


@pytest.mark.parametrize("lost_first", [True, False])
def test_a_failure_answer_decides_before_a_lost_response(table, lost_first):
    """The failure answer is outside: a request it answers never reaches LostResponses, which numbers the rest."""
    open_wallet(table, "w", 100)
    layers = [LostResponses(at=[0]), ErrorResponses(at={0: THROTTLING})]
    for layer in layers if lost_first else reversed(layers):
        layer.install(table)
    lost, errors = layers
    with pytest.raises(ClientError):
        debit(table)                                    # throttled: nothing applied, LostResponses not asked
    with pytest.raises(ReadTimeoutError):
        debit(table)                                    # LostResponses' request 0: applied, answer lost
    assert (errors.sent, lost.sent, lost.lost) == (2, 1, [0])
    assert read_balance(table, "w") == 90


def test_undo_in_any_order_keeps_the_others_and_the_last_gives_botocore_its_method_back(table, db):
    open_wallet(table, "w", 100)
    seen = []
    lost = LostResponses(at=[0, 1]).install(table)
    answers = watch_answers(table, db.clock, on_answer=seen.append)
    counter = CallCounter().install(table)
    meter = CapacityMeter().install(table)
    lost.uninstall()                                    # the first installed goes first ...
    debit(table)                                        # ... and the watchers after it still see
    assert [(a.operation, a.status) for a in seen] == [("UpdateItem", 200)]
    assert counter.calls["UpdateItem"] == 1 and meter.round_trips == 1 and meter.capacity_units == 1.0
    answers.uninstall(), meter.uninstall()
    assert not own_method_is_back(table)                # the counter is still on
    counter.uninstall()
    assert own_method_is_back(table)
    debit(table)
    assert len(seen) == 1 and counter.round_trips == 1 and meter.round_trips == 1
    assert read_balance(table, "w") == 80                # neither write lost: LostResponses came off first


def test_a_layer_is_a_context_manager_and_uninstall_twice_is_harmless(table):
    open_wallet(table, "w", 100)
    with LostResponses(at=[0]).install(table) as lost:
        with pytest.raises(ReadTimeoutError):
            debit(table)
    assert own_method_is_back(table) and lost.lost == [0]
    lost.uninstall()
    debit(table)
    assert read_balance(table, "w") == 80


def test_one_layer_on_several_clients_comes_off_all(fresh):
    one, two = fresh(), fresh()
    counter = CallCounter().install(one, two)
    open_wallet(one, "w", 100), open_wallet(two, "w", 100)
    assert counter.calls["PutItem"] == 2
    counter.uninstall()
    assert own_method_is_back(one) and own_method_is_back(two)


def test_client_of_names_what_it_was_given():
    with pytest.raises(TypeError, match="expected a boto3 client"):
        client_of("not a client")


# --- watch_answers: every request on the wire, botocore's resends included --------------------------------------

def test_sdk_retries_show_as_numbered_attempts(fresh, db):
    table = fresh(sdk_retries=True)
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    log = watch_answers(table, db.clock)
    debit(table)                                           # one call from the application
    assert [(a.operation, a.attempt, a.status, a.code) for a in log.answers] == [
        ("UpdateItem", 1, None, "ReadTimeoutError"),
        ("UpdateItem", 2, 200, "OK"),
    ]
    assert read_balance(table, "w") == 80                  # both attempts applied


def test_without_sdk_retries_there_is_one_attempt(fresh, db):
    table = fresh()
    open_wallet(table, "w", 100)
    LostResponses(at=[0]).install(table)
    log = watch_answers(table, db.clock)
    with pytest.raises(ReadTimeoutError):
        debit(table)
    assert [(a.attempt, a.status) for a in log.answers] == [(1, None)]
    assert read_balance(table, "w") == 90


def test_writes_by_default_and_reads_when_named(fresh, db):
    table = fresh()
    every, writes = [], []
    watch_answers(table, db.clock, on_answer=every.append, operations={"PutItem", "GetItem", "UpdateItem"})
    watch_answers(table, db.clock, on_answer=writes.append)
    open_wallet(table, "w", 100)
    read_balance(table, "w")
    debit(table)
    assert [a.operation for a in every] == ["PutItem", "GetItem", "UpdateItem"]
    assert [a.operation for a in writes] == ["PutItem", "UpdateItem"]


def test_bad_arguments_are_refused(table, db):
    with pytest.raises(TypeError, match="on_answer must be callable"):
        watch_answers(table, db.clock, on_answer="print")
    with pytest.raises(TypeError, match="expected a boto3 client"):
        watch_answers(object(), db.clock)


# --- Between: another request run to its end just before the caller's first write (issue 34) ---------------------

def test_between_runs_the_other_request_just_before_the_first_write_once(table, db):
    from helpers.wire import Between

    open_wallet(table, "w", 100)
    other = db.table(table.name.removesuffix(db.table_name("")))     # the same table, another client
    seen = []

    def elsewhere():
        seen.append(read_balance(table, "w"))            # the caller's read came first: the write has not landed
        other.update_item(Key={"pk": "w"}, UpdateExpression="SET balance = balance - :a",
                          ExpressionAttributeValues={":a": 1})

    between = Between(elsewhere).install(table)
    assert read_balance(table, "w") == 100 and not between.ran      # a read passes untouched
    debit(table)
    debit(table)
    between.uninstall()
    assert between.ran and seen == [100]
    assert read_balance(table, "w") == 100 - 1 - 10 - 10
    assert own_method_is_back(table)


def test_between_at_names_which_write(table, db):
    from helpers.wire import Between

    open_wallet(table, "w", 100)
    balances = []
    with Between(lambda: balances.append(read_balance(table, "w")), at=1).install(table):
        debit(table)
        debit(table)
    assert balances == [90]
