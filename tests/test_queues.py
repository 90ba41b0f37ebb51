"""helpers/services/queues.py: a consumer that crashes before DeleteMessage sees the message again,
on the virtual clock."""

from __future__ import annotations

import json
import os

import pytest

from helpers import BadInput
from helpers.services.queues import Consumer, fresh_queue
from helpers.swimlanes import Timeline


def queue(sqs_client, visibility_timeout=30):
    return fresh_queue(sqs_client, f"test-queues-{os.getpid()}", visibility_timeout=visibility_timeout)


def test_a_crash_before_delete_means_a_second_delivery(sqs):
    client, clock = sqs
    url = queue(client)
    client.send_message(QueueUrl=url, MessageBody=json.dumps({"n": 1}))
    handled = []
    consumer = Consumer(client, url, lambda body: handled.append(body) or "ok", crash_before_delete=[1])
    first = consumer.poll()
    assert (first.number, first.receive_count, first.deleted, first.outcome) == (1, 1, False, "ok")
    clock.advance(30)
    assert consumer.poll() is None                     # visible again only after the timeout has passed
    clock.advance(1)
    second = consumer.poll()
    assert (second.number, second.receive_count, second.deleted) == (2, 2, True)
    clock.advance(60)
    assert consumer.poll() is None                     # deleted for good
    assert handled == [{"n": 1}, {"n": 1}]


def test_without_a_crash_a_message_is_handled_once(sqs):
    client, clock = sqs
    url = queue(client)
    client.send_message(QueueUrl=url, MessageBody="{}")
    consumer = Consumer(client, url, lambda body: None)
    assert consumer.poll().deleted
    clock.advance(3600)
    assert consumer.poll() is None
    assert len(consumer.deliveries) == 1


def test_the_consumer_records_its_timeline(sqs):
    client, clock = sqs
    url = queue(client)
    client.send_message(QueueUrl=url, MessageBody="{}")
    timeline = Timeline(clock)
    consumer = Consumer(client, url, lambda body: None, crash_before_delete=[1], timeline=timeline)
    consumer.poll()
    consumer.poll()
    assert list(timeline.frame()["event"]) == [
        "delivers (receive count 1)", "crashes before DeleteMessage", "polls: nothing visible",
    ]


def test_fresh_queue_empties_a_queue_that_exists(sqs):
    client, _ = sqs
    url = queue(client)
    client.send_message(QueueUrl=url, MessageBody="{}")
    url = queue(client)
    assert Consumer(client, url, lambda body: None).poll() is None


@pytest.mark.parametrize("timeout", [-1, 43_201, 2.5, "30", None, True])
def test_a_bad_visibility_timeout_is_refused(sqs, timeout):
    client, _ = sqs
    with pytest.raises(BadInput, match="visibility_timeout must be a whole number of seconds"):
        fresh_queue(client, f"test-queues-bad-{os.getpid()}", visibility_timeout=timeout)


@pytest.mark.parametrize("crashes", [[0], [-1], [1.5], ["1"], [True]])
def test_bad_crash_numbers_are_refused(sqs, crashes):
    client, _ = sqs
    with pytest.raises(BadInput, match="crash_before_delete lists deliveries by number"):
        Consumer(client, "url", lambda body: None, crash_before_delete=crashes)


def test_the_handler_must_be_callable(sqs):
    client, _ = sqs
    with pytest.raises(TypeError, match="handle must be callable"):
        Consumer(client, "url", handle="debit")
