"""Instant feedback for notebook 07's "Your turn": is a queue consumer safe under redelivery and resends?

`check_safe_consumer(consumer)` runs `consumer(table, message)` -- one SQS message in,
one debit out -- on real queues (moto's SQS, on the virtual clock) against the real
table backend, and returns a `Verdict`: a pass, or one concrete counterexample.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

from ..backends import Backend, connect
from ..concurrency import race
from .verdict import Verdict
from ..queues import fresh_queue
from ..sqs_clock import use_virtual_time
from ..tables import fresh_table, open_wallet, read_balance

QueueConsumer = Callable[[Any, dict[str, Any]], Any]
START, AMOUNT, PAYMENTS, VISIBILITY_TIMEOUT = 100, 5, 4, 30


def _run(db: Backend, sqs: Any, table: Any, consumer: QueueConsumer, seed: int) -> tuple[list[str], list[int]]:
    """Produce PAYMENTS payments (some resent), consume with crashes; returns (resent ops, crashed deliveries)."""
    rng = random.Random(seed)
    queue = fresh_queue(sqs, "exercise-07", visibility_timeout=VISIBILITY_TIMEOUT)
    resent, crashed = [], []
    for n in range(1, PAYMENTS + 1):
        body = json.dumps({"operation_id": f"op-{n}", "wallet": "w", "amount": AMOUNT})
        sqs.send_message(QueueUrl=queue, MessageBody=body)
        if rng.random() < 0.5:
            sqs.send_message(QueueUrl=queue, MessageBody=body)
            resent.append(f"op-{n}")
    deliveries = 0
    while True:
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1).get("Messages", [])
        if not messages:
            left = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
            if left["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0":
                return resent, crashed
            db.clock.advance(VISIBILITY_TIMEOUT + 1)
            continue
        deliveries += 1
        consumer(table, messages[0])
        if rng.random() < 0.4:
            crashed.append(deliveries)
        else:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=messages[0]["ReceiptHandle"])


def check_safe_consumer(consumer: QueueConsumer, *, db: Backend | None = None, schedules: int = 8) -> Verdict:
    """Does `consumer(table, message)` debit each payment once, however often it arrives? Returns a `Verdict`."""
    db = db or connect()
    use_virtual_time(db.clock)
    sqs = db.sqs()
    table = fresh_table(db, "exercise-07")
    for seed in range(schedules):
        table = fresh_table(db, "exercise-07")
        open_wallet(table, "w", START)
        try:
            resent, crashed = _run(db, sqs, table, consumer, seed)
        except Exception as error:
            return Verdict(False, f"with seed {seed} your consumer raised {type(error).__name__}: {error}")
        expected, actual = START - AMOUNT * PAYMENTS, read_balance(table, "w")
        if actual != expected:
            return Verdict(False, (
                f"{PAYMENTS} payments of {AMOUNT} from {START} (seed {seed}); the producer sent "
                f"{', '.join(resent) or 'none'} twice (its SendMessage response was lost) and the consumer crashed "
                f"before DeleteMessage on deliveries {crashed or 'none'}: expected balance {expected}, "
                f"your consumer left {actual}."))
    table = fresh_table(db, "exercise-07")
    open_wallet(table, "w", START)
    message = {"MessageId": "00000000-0000-4000-8000-000000000001", "ReceiptHandle": "r",
               "Body": json.dumps({"operation_id": "op-same", "wallet": "w", "amount": AMOUNT})}
    outcomes = race(lambda i: consumer(table, message), 16)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    if errors or read_balance(table, "w") != START - AMOUNT:
        detail = f"raised {type(errors[0]).__name__}" if errors else f"left {read_balance(table, 'w')}"
        return Verdict(False, f"16 concurrent deliveries of one message: expected balance {START - AMOUNT}, your consumer {detail}.")
    bad = dict(message, MessageId="00000000-0000-4000-8000-000000000002",
               Body=json.dumps({"operation_id": "op-bad", "wallet": "w", "amount": -5}))
    try:
        consumer(table, bad)
    except ValueError:
        pass
    except Exception as error:
        return Verdict(False, f"a message with amount -5 should raise ValueError, got {type(error).__name__}")
    else:
        return Verdict(False, "a message with amount -5 was accepted; bad input should raise ValueError and write nothing.")
    if read_balance(table, "w") != START - AMOUNT:
        return Verdict(False, "the message with a bad amount changed the balance; it should write nothing.")
    return Verdict(True, f"{schedules} runs with crashes and resends, 16 concurrent deliveries and bad input all handled.")
