"""Instant feedback for notebook 07's "Your turn": is a queue consumer safe under redelivery and resends?

`check_safe_consumer(consumer)` runs `consumer(table, message)` -- one SQS message in,
one debit out -- on real queues (moto's SQS, on the virtual clock) against the real
table backend, and returns a `Verdict`: a pass, or one concrete counterexample.

A consumer that raises is treated as a real consumer loop treats it: the message is
not deleted, and SQS delivers it again after the visibility timeout. The checks:

1. seeded runs with producer resends and crashes before DeleteMessage;
2. a redelivery to another consumer landing between the consumer's read and its write (run on the
   wire, `helpers.wire.Between`: the same on every run and every backend), then 16 concurrent
   deliveries of one message;
3. each of DynamoDB's failure answers once, on the consumer's first write
   (`helpers/dynamodb_errors.py`'s ANSWERS): a TransactionConflict (on either action), throttling,
   a transaction in progress (the request with that token not committing, and committing), a 500
   with and without the write applied. Only the marker's
   own failed condition means "already applied"; a consumer that reads any other
   cancellation as success deletes a message whose payment was never made;
4. a message for a wallet that does not exist (WalletNotFound, not "already applied": the marker's
   slot of CancellationReasons, not any slot) and one with a bad amount: a clear error, nothing written;
5. the specification (`helpers/specification.py`): the consumer, as a handler (`ConsumerSubject`), sent
   generated histories by `helpers/checker.py`. Each request is one delivery of a message whose body carries the
   operation ID (the caller's key), the wallet and the amount; a copy with the same invocation is SQS delivering
   the same message again (same MessageId), another invocation is the producer's resend (a new MessageId). A
   return deletes the message (success), an exception leaves it on the queue (unknown: delivered again at
   quiescence). A consumer that reads any cancellation as "already applied" gets the shortest history in which
   a payment was acknowledged and never made. An operation ID always carries one payment (`keys_reused=False`):
   the producer makes it once per payment, and a marker with no payload, as in notebook 05, is right here, so
   *bound to its payload* is not tried.
"""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from ..backends import Backend, connect
from ..concurrency import race
from ..dynamodb_errors import IN_PROGRESS, ErrorResponses, answer_of
from ..fidelity.sqs_clock import use_virtual_time
from ..services.queues import fresh_queue
from ..tables import fresh_table, open_wallet, read_balance
from ..wire import Between
from .specified import Specification
from .verdict import Counterexample, Verdict, answer, failure_answers, raised, verdict, wallet_table

QueueConsumer = Callable[[Any, dict[str, Any]], Any]
START, AMOUNT, PAYMENTS, VISIBILITY_TIMEOUT = 100, 5, 4, 30
MAX_DELIVERIES = 40          # a consumer that never lets a message go is stopped here
HISTORIES = 30               # generated histories for the specification's check (about 2 s on moto)

# (kind, which action of a transaction carries the conflict, how a counterexample names the answer)
ANSWERS = failure_answers("its first action", "its last action")
INJECTED = "redeliveries, lost responses and DynamoDB's failure answers"


def _answered(outcome: Any) -> str:
    """What the consumer did, in a few whole words: "raised ThrottlingException", "answered 'applied'"."""
    if isinstance(outcome, ClientError):
        code, _, reasons = answer_of(outcome)
        return f"raised {code}" + (f" [{', '.join(reasons)}]" if reasons else "")
    said = f"raised {raised(outcome)}" if isinstance(outcome, Exception) else f"answered {outcome!r}"
    return textwrap.shorten(said, 90, placeholder=" ...")


class _Queue:
    """One queue and a consumer loop: receive, hand to the consumer, delete unless it raised or 'crashed'."""

    def __init__(self, db: Backend, sqs: Any, table: Any, consumer: QueueConsumer) -> None:
        self.db, self.sqs, self.table, self.consumer = db, sqs, table, consumer
        self.url = fresh_queue(sqs, "exercise-07", visibility_timeout=VISIBILITY_TIMEOUT)
        self.deliveries: list[tuple[Any, bool]] = []   # (what the consumer answered or raised, deleted?)

    def send(self, body: dict[str, Any]) -> None:
        self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(body))

    def drain(self, crash: Callable[[], bool] = lambda: False) -> None:
        while len(self.deliveries) < MAX_DELIVERIES:
            messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=1).get("Messages", [])
            if not messages:
                left = self.sqs.get_queue_attributes(QueueUrl=self.url,
                                                     AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
                if left["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0":
                    return
                self.db.clock.advance(VISIBILITY_TIMEOUT + 1)
                continue
            try:
                outcome: Any = self.consumer(self.table, messages[0])
            except Exception as error:  # the reader's code: the message stays on the queue
                outcome = error
            deleted = not isinstance(outcome, Exception) and not crash()
            if deleted:
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=messages[0]["ReceiptHandle"])
            self.deliveries.append((outcome, deleted))
        last = self.deliveries[-1][0]
        raise Counterexample(f"your consumer handled {MAX_DELIVERIES} deliveries without finishing the queue;\n"
                             f"the last one {_answered(last)}.")


def _fresh(db: Backend) -> Any:
    """A fresh exercise table with wallet "w" holding START."""
    return wallet_table(db, "exercise-07", "w", START)


def _scenario_runs(db: Backend, sqs: Any, consumer: QueueConsumer, schedules: int) -> None:
    """Seeded runs with producer resends and crashes before DeleteMessage: each payment debited once."""
    for seed in range(schedules):
        rng, table = random.Random(seed), _fresh(db)
        queue, resent, crashed = _Queue(db, sqs, table, consumer), [], []
        for n in range(1, PAYMENTS + 1):
            body = {"operation_id": f"op-{n}", "wallet": "w", "amount": AMOUNT}
            queue.send(body)
            if rng.random() < 0.5:
                queue.send(body)
                resent.append(f"op-{n}")

        def crash() -> bool:
            if rng.random() < 0.4:
                crashed.append(len(queue.deliveries) + 1)
                return True
            return False

        queue.drain(crash)
        expected, actual = START - AMOUNT * PAYMENTS, read_balance(table, "w")
        if actual != expected:
            raise Counterexample(
                f"{PAYMENTS} payments of {AMOUNT} from {START} (seed {seed}).\n"
                f"The producer sent {', '.join(resent) or 'none'} twice (its SendMessage response was lost);\n"
                f"the consumer crashed before DeleteMessage on deliveries {crashed or 'none'}.\n"
                f"Expected balance {expected}, your consumer left {actual}.")


def _scenario_concurrent(db: Backend, consumer: QueueConsumer, message: dict[str, Any]) -> None:
    """16 concurrent deliveries of one message: one debit, no errors."""
    table = _fresh(db)
    outcomes = race(lambda i: consumer(table, message), 16)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    if errors or read_balance(table, "w") != START - AMOUNT:
        detail = _answered(errors[0]) if errors else f"left {read_balance(table, 'w')}"
        raise Counterexample(f"16 concurrent deliveries of one message: expected balance {START - AMOUNT},\n"
                             f"your consumer {detail}.")


def _scenario_dynamodb_answers(db: Backend, sqs: Any, consumer: QueueConsumer) -> None:
    """Each of DynamoDB's failure answers on the first write: the payment still made, once."""
    for kind, conflict_item, described in ANSWERS:
        table = _fresh(db)
        queue = _Queue(db, sqs, table, consumer)
        queue.send({"operation_id": "op-1", "wallet": "w", "amount": AMOUNT})
        errors = ErrorResponses(at={0: kind}, conflict_item=conflict_item).install(table)
        try:
            queue.drain()
        finally:
            errors.uninstall()
        expected, actual = START - AMOUNT, read_balance(table, "w")
        if actual != expected:
            first, deleted = queue.deliveries[0]
            raise Counterexample(
                f"one payment of {AMOUNT} from {START}. DynamoDB answered your consumer's first write with\n"
                f"{described}.\n"
                f"Your consumer {_answered(first)}; the message was "
                f"{'deleted' if deleted else 'left on the queue'}.\n"
                f"Expected balance {expected}, your consumer left {actual}"
                + (" -- a payment lost." if actual > expected else "."))


def _scenario_redelivered_in_between(db: Backend, consumer: QueueConsumer, message: dict[str, Any]) -> None:
    """A redelivery's debit landing between the consumer's read and its write: still one debit."""
    table = _fresh(db)
    other = db.table("exercise-07")                   # another consumer, on a client of its own
    copy = Between(lambda: answer(lambda: consumer(other, message))).install(table)
    result = answer(lambda: consumer(table, message))
    copy.uninstall()
    if read_balance(table, "w") != START - AMOUNT:
        raise Counterexample(
            f"one payment of {AMOUNT} from {START}. SQS delivered the message to your consumer, and again to\n"
            "another consumer (the first one's visibility timeout ran out); the other one's debit landed just\n"
            f"before your consumer's write. Your consumer {_answered(result)}.\n"
            f"Expected balance {START - AMOUNT}, your consumer left {read_balance(table, 'w')}:\n"
            "the marker's condition must be checked by the write itself, not by a read before it.")


def _scenario_missing_wallet(db: Backend, consumer: QueueConsumer, message: dict[str, Any]) -> None:
    """A message for a wallet that does not exist: WalletNotFound (a LookupError), nothing written."""
    table = _fresh(db)
    gone = dict(message, MessageId="00000000-0000-4000-8000-000000000003",
                Body=json.dumps({"operation_id": "op-gone", "wallet": "nobody", "amount": AMOUNT}))
    before = table.scan(ConsistentRead=True)["Items"]
    result = answer(lambda: consumer(table, gone))
    wrote = table.scan(ConsistentRead=True)["Items"] != before
    if not isinstance(result, LookupError) or wrote:
        raise Counterexample(
            f"a message for a wallet that does not exist: DynamoDB cancels the transaction with\n"
            "CancellationReasons [ConditionalCheckFailed, None] -- the wallet's condition, not the marker's.\n"
            f"Expected WalletNotFound and nothing written; your consumer {_answered(result)}"
            + (" and wrote to the table" if wrote else "")
            + (":\nthe message would be deleted, and a payment that never happened counted as made."
               if not isinstance(result, Exception) else "."))


def _scenario_bad_input(db: Backend, consumer: QueueConsumer, message: dict[str, Any]) -> None:
    """A message with a bad amount: ValueError, and the balance unchanged."""
    table = _fresh(db)
    bad = dict(message, MessageId="00000000-0000-4000-8000-000000000002",
               Body=json.dumps({"operation_id": "op-bad", "wallet": "w", "amount": -5}))
    try:
        consumer(table, bad)
    except ValueError:
        pass
    except Exception as error:
        raise Counterexample(
            f"a message with amount -5 should raise ValueError, got {type(error).__name__}.") from error
    else:
        raise Counterexample("a message with amount -5 was accepted;\n"
                             "bad input should raise ValueError and write nothing.")
    if read_balance(table, "w") != START:
        raise Counterexample("the message with a bad amount changed the balance; it should write nothing.")


def check_safe_consumer(consumer: QueueConsumer, *, db: Backend | None = None, schedules: int = 8,
                        histories: int = HISTORIES) -> Verdict:
    """Does `consumer(table, message)` debit each payment once, however often it arrives? Returns a `Verdict`."""
    db = db or connect()
    use_virtual_time(db.clock)
    sqs = db.sqs()
    message = {"MessageId": "00000000-0000-4000-8000-000000000001", "ReceiptHandle": "r",
               "Body": json.dumps({"operation_id": "op-same", "wallet": "w", "amount": AMOUNT})}
    held = Specification(lambda: consumer_held(consumer, db=db, histories=histories), injected=INJECTED,
                         within=("one payload per operation ID",))
    return verdict([lambda: _scenario_runs(db, sqs, consumer, schedules),
                    lambda: _scenario_redelivered_in_between(db, consumer, message),
                    lambda: _scenario_concurrent(db, consumer, message),
                    lambda: _scenario_dynamodb_answers(db, sqs, consumer),
                    lambda: _scenario_missing_wallet(db, consumer, message),
                    lambda: _scenario_bad_input(db, consumer, message),
                    held],
                   passed=lambda: (
        f"{schedules} runs with crashes and resends, a redelivery between your read and your write, 16 concurrent "
        f"deliveries, {len(ANSWERS)} of DynamoDB's failure answers, a missing wallet and bad input all handled. "
        f"{held.passed()}"))


# --- issue 23: the consumer as a handler, held to the specification ---------------------------------------------

def consumer_held(consumer: QueueConsumer, *, db: Backend | None = None, histories: int = HISTORIES) -> Any:
    """`consumer(table, message)` held to the specification over `histories` generated histories: a
    `helpers.checker.Verdict`."""
    from ..checker import check_handler

    db = db or connect()
    return check_handler(ConsumerSubject(consumer, db, fresh_table(db, "exercise-07")), histories=histories,
                         steps=4, name="your consumer", keys_reused=False)


def _consumer_subject() -> type:
    from ..dynamodb_errors import DISTINCT_KINDS as FAILURES
    from ..dynamodb_errors import IN_PROGRESS_APPLIED
    from ..faults import LostResponses
    from ..subjects import Subject

    class ConsumerSubject(Subject):
        """A queue consumer as a handler: each request one delivery of a message (see the module's docstring)."""

        faults = ("lost", "answer", "in progress")
        interleaves = crashes = False  # a delivery runs to its end; concurrent deliveries are a scenario check
        world = False                  # a message for a wallet closed since is a poison message: another lesson
        writes, faults_alike = 1, True       # its one write, and each fault as likely as another: a short search

        def __init__(self, consumer: QueueConsumer, db: Backend, table: Any) -> None:
            self.consumer = self.handler = consumer
            self.g, self.name = {}, "your consumer"
            self.clock, self.wallets, self.reader = db.clock, table, db.client()
            self.lease, self.retention = float(VISIBILITY_TIMEOUT), 24 * 3600.0
            self.lost, self.errors = LostResponses(), ErrorResponses(kinds=FAILURES, conflict_item=-1)
            self.in_progress = ErrorResponses(kinds=(IN_PROGRESS, IN_PROGRESS_APPLIED),
                                              operations={"TransactWriteItems"})
            self.clients, self.run, self.provider = [table.meta.client], 0, None

        def begin(self) -> None:
            from ..subjects import WALLETS
            self.run += 1
            for wallet, balance in WALLETS.items():
                open_wallet(self.wallets, wallet, balance)

        def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Callable[[str], None],
                 caller: str) -> Any:
            operation = f"{caller}-{key}"
            message = {"MessageId": f"{operation}-{invocation}", "ReceiptHandle": f"r-{operation}-{invocation}",
                       "Body": json.dumps({"operation_id": operation, **payload})}
            self.consumer(self.wallets, message)          # returned: the message is deleted, the payment done
            return {"status": 200, "body": json.dumps({"deleted": True, **payload})}

    return ConsumerSubject


def ConsumerSubject(consumer: QueueConsumer, db: Backend, table: Any) -> Any:  # noqa: N802 - made like a class
    """A `helpers.subjects.Subject` for `consumer` on `table` (the class is made on first use)."""
    return _consumer_subject()(consumer, db, table)
