"""helpers/wire.py: one owner of botocore's response hook per client -- layers in one order, each undoable."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from helpers import LostResponses, open_wallet, read_balance
from helpers.dynamodb_errors import THROTTLING, ErrorResponses
from helpers.meter import CallCounter, CapacityMeter
from helpers.wire import FAILURE_ANSWER, LOST_RESPONSE, ORDER, WATCHER, client_of, watch_answers, watch_attempts


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
    attempts = watch_attempts(table, seen.append)
    counter = CallCounter().install(table)
    meter = CapacityMeter().install(table)
    lost.uninstall()                                    # the first installed goes first ...
    debit(table)                                        # ... and the watchers after it still see
    assert [(a.operation, a.answered) for a in seen] == [("UpdateItem", True)]
    assert counter.calls["UpdateItem"] == 1 and meter.round_trips == 1 and meter.capacity_units == 1.0
    attempts.uninstall(), meter.uninstall()
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
