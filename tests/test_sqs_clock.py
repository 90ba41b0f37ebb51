"""helpers/fidelity/sqs_clock.py: moto's SQS visibility timeout, redrive and retention on the virtual clock."""

from __future__ import annotations

import json

import pytest

import helpers
from helpers.fidelity.sqs_clock import use_virtual_time, use_wall_clock


def receive(client, url):
    return client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])


def test_visibility_timeout_passes_on_the_virtual_clock(sqs):
    client, clock = sqs
    url = client.create_queue(QueueName="test-sqs-clock-visibility", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody="m")
    [first] = receive(client, url)
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    clock.advance(29)
    assert receive(client, url) == []                  # still invisible
    clock.advance(2)
    [again] = receive(client, url)                     # back, without sleeping
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again["MessageId"] == first["MessageId"]


def test_redrive_to_dead_letter_queue_after_max_receive_count(sqs):
    client, clock = sqs
    dlq = client.create_queue(QueueName="test-sqs-clock-dlq")["QueueUrl"]
    dlq_arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = client.create_queue(QueueName="test-sqs-clock-main", Attributes={
        "VisibilityTimeout": "30",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"})})["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody="poison")
    counts = []
    for _ in range(3):
        [message] = receive(client, url)
        counts.append(int(message["Attributes"]["ApproximateReceiveCount"]))
        clock.advance(31)
    assert counts == [1, 2, 3]
    assert receive(client, url) == []
    assert [m["Body"] for m in receive(client, dlq)] == ["poison"]


def test_bad_input():
    with pytest.raises(helpers.BadInput):
        use_virtual_time("not a clock")  # type: ignore[arg-type]


def test_wall_clock_comes_back(db):
    import moto.core.utils
    import moto.sqs.models

    use_virtual_time(helpers.VirtualClock(start=5))
    assert moto.sqs.models.unix_time() == 5
    use_wall_clock()
    assert moto.sqs.models.unix_time is moto.core.utils.unix_time


def test_fifo_deduplication_window_runs_on_the_virtual_clock(sqs):
    """AWS drops a duplicate MessageDeduplicationId for 5 minutes after the first send, even once the first was
    received and deleted (moto alone forgets it at the delete: helpers/fidelity/fifo_dedup.py,
    tests/test_lesson_07.py)."""
    client, clock = sqs
    url = client.create_queue(QueueName="test-sqs-clock.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    send = dict(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="op-1")
    client.send_message(**send)
    client.send_message(**send)                                  # within 5 minutes, still queued: dropped
    [message] = receive(client, url)
    client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    clock.advance(60)
    client.send_message(**send)                                  # deleted, but within 5 minutes: dropped
    assert receive(client, url) == []
    clock.advance(241)
    client.send_message(**send)                                  # 301 s after the first send: delivered
    assert len(receive(client, url)) == 1
