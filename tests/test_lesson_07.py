"""Notebook 07's own consumers, queues and Lambda batches: redelivery really re-applies, and the key really holds."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import BadInput, WalletNotFound
from helpers.concurrency import race
from helpers.dynamodb_errors import ERROR_500_APPLIED, KINDS, ErrorResponses
from helpers.exercises import check_safe_consumer
from helpers.fidelity.fifo_dedup import use_aws_deduplication, use_moto_deduplication
from helpers.fidelity.sqs_clock import use_wall_clock
from helpers.services.lambda_sqs import LambdaPoller
from helpers.services.lambda_streams import StreamPoller
from helpers.services.queues import fresh_queue

from notebook_code import cells, lesson

NB = "07_event_sources.ipynb"


@pytest.fixture(scope="module")
def nb():
    namespace = lesson(NB)          # its imports cell puts moto's SQS on db.clock
    yield namespace
    use_wall_clock()


# --- 1. crash before delete, dead-letter queue --------------------------------------------------------

def test_a_message_that_always_crashes_is_redelivered_then_dead_lettered(nb):
    naive = nb["crash_every_time"](nb["debit_naive"])
    assert list(naive["receive counts"]) == [1, 2, 3] and naive["in the DLQ"] == "op-01"
    assert naive["debits before redrive"] == 3 and naive["debits after redrive"] == 4


def test_the_idempotent_consumer_debits_once_through_crashes_and_redrive(nb):
    once = nb["crash_every_time"](nb["debit_by_operation"])
    assert list(once["receive counts"]) == [1, 2, 3]
    assert once["debits before redrive"] == 1 and once["debits after redrive"] == 1


# --- 2. Lambda batches ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make, report, consumer, delivered, applied", [
    ("handler_whole_batch", False, "debit_naive", 20, 16),
    ("handler_whole_batch", False, "debit_by_operation", 20, 10),
    ("handler_partial", True, "debit_naive", 11, 10),
    ("handler_partial", True, "debit_by_operation", 11, 10),
])
def test_batch_redelivery(nb, make, report, consumer, delivered, applied):
    result = nb["run_batches"](nb[make], nb[consumer], report)
    assert result["messages delivered"] == delivered and result["debits applied"] == applied


def poller_run(nb, handler, report, sends=3):
    sqs = nb["sqs"]
    queue = fresh_queue(sqs, f"test-07-poller-{os.getpid()}", visibility_timeout=30)
    for n in range(sends):
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"n": n}))
    poller = LambdaPoller(sqs, queue, handler, report_batch_item_failures=report)
    first = poller.poll()
    nb["db"].clock.advance(31)
    again = poller.poll()
    return first, again


def test_poller_without_reporting_deletes_everything_whatever_the_response_says(nb):
    def handler(event, context):
        return {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    first, again = poller_run(nb, handler, report=False)
    assert len(first.deleted) == 3 and again is None


def test_poller_treats_an_unknown_item_identifier_as_a_failed_batch(nb):
    def handler(event, context):
        return {"batchItemFailures": [{"itemIdentifier": "not-in-this-batch"}]}
    first, again = poller_run(nb, handler, report=True)
    assert first.error == "invalid batchItemFailures" and first.deleted == []
    assert again.receive_counts == [2, 2, 2]


def test_poller_treats_an_empty_list_or_none_as_success(nb):
    for response in (None, {"batchItemFailures": []}, {}):
        first, again = poller_run(nb, lambda event, context, r=response: r, report=True)
        assert len(first.deleted) == 3 and again is None


def test_poller_rejects_a_batch_size_lambda_would_not_accept(nb):
    with pytest.raises(ValueError, match="batch_size"):
        LambdaPoller(nb["sqs"], "url", lambda e, c: None, batch_size=11)


# --- 3. FIFO deduplication -------------------------------------------------------------------------------

def test_fifo_timeline(nb):
    log, deliveries, debits = nb["fifo_run"](nb["debit_naive"])
    assert list(log["what happens"]) == [
        "producer sends op-01",
        "delivered (receive count 1), deleted",
        "producer resends op-01 (its first response was lost)",
        "nothing to receive",
        "producer resends op-01, 400 s after the first send",
        "delivered (receive count 1), consumer crashes before DeleteMessage",
        "delivered (receive count 2), deleted",
    ]
    assert (deliveries, debits) == (3, 3)
    assert nb["fifo_run"](nb["debit_by_operation"])[1:] == (3, 1)


def fifo_deliveries_after(nb, seconds, *, content_based=False):
    """Send, receive and delete; resend `seconds` after the first send; how many copies were delivered."""
    sqs, clock = nb["sqs"], nb["db"].clock
    extra = {"ContentBasedDeduplication": "true"} if content_based else {}
    queue = fresh_queue(sqs, f"test-07-dedup-{os.getpid()}.fifo", FifoQueue="true", **extra)
    dedup = {} if content_based else {"MessageDeduplicationId": "op-1"}
    delivered = 0
    for at in (0, seconds):
        clock.advance(at and seconds)
        sqs.send_message(QueueUrl=queue, MessageBody="same", MessageGroupId="g", **dedup)
        for message in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
            delivered += 1
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    return delivered


@pytest.mark.parametrize("content_based", [False, True])
def test_fifo_drops_a_resend_for_five_minutes_even_after_the_first_copy_is_deleted(nb, content_based):
    assert fifo_deliveries_after(nb, 1, content_based=content_based) == 1
    assert fifo_deliveries_after(nb, 299, content_based=content_based) == 1
    assert fifo_deliveries_after(nb, 301, content_based=content_based) == 2


def test_stock_moto_forgets_a_deduplication_id_once_its_message_is_deleted(nb):
    use_moto_deduplication()
    try:
        assert fifo_deliveries_after(nb, 1) == 2            # AWS documents 1
    finally:
        use_aws_deduplication()
    assert fifo_deliveries_after(nb, 1) == 1


def test_deduplication_does_not_apply_to_standard_queues(nb):
    sqs = nb["sqs"]
    queue = fresh_queue(sqs, f"test-07-standard-{os.getpid()}")
    for _ in range(2):
        sqs.send_message(QueueUrl=queue, MessageBody="same")
    assert len(sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]) == 2


def test_fresh_queue_refuses_a_fifo_name_without_the_attribute(nb):
    with pytest.raises(BadInput, match=".fifo"):
        fresh_queue(nb["sqs"], "payments.fifo")
    with pytest.raises(BadInput, match=".fifo"):
        fresh_queue(nb["sqs"], "payments", FifoQueue="true")


# --- 4. operation ID, not MessageId ------------------------------------------------------------------

@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_only_the_operation_id_applies_each_payment_once(nb, seed):
    results = {name: nb["seeded_run"](handle, seed=seed) for name, handle in nb["CONSUMERS"].items()}
    [sends] = {sent for sent, _ in results.values()}
    runs = {name: run for name, (_, run) in results.items()}
    payments = nb["PAYMENTS"]
    assert len({len(run) for run in runs.values()}) == 1           # the same deliveries for every consumer
    deliveries = len(runs["naive"])
    assert runs["naive"]["debits applied"].iloc[-1] == deliveries
    assert runs["keyed by MessageId"]["debits applied"].iloc[-1] == sends
    assert runs["keyed by operation ID"]["debits applied"].iloc[-1] == payments
    assert runs["keyed by operation ID"]["debits applied"].is_monotonic_increasing


def test_concurrent_deliveries_of_one_message_debit_once(nb):
    for _ in range(20):
        nb["new_wallet"]()
        body = nb["payment"](1)
        outcomes = race(lambda i: nb["debit_by_operation"](body), 32)
        assert sorted(outcomes) == ["already applied"] * 31 + ["applied"]
        assert nb["debits"]() == 1


@pytest.mark.parametrize("amount", [-5, 0, 2.5, float("nan")])
def test_a_bad_amount_is_refused_and_writes_nothing(nb, amount):
    nb["new_wallet"]()
    for consumer in (nb["debit_naive"], nb["debit_by_operation"]):
        with pytest.raises(BadInput, match="amount"):
            consumer(nb["payment"](1, amount=amount))
    assert nb["debits"]() == 0
    assert nb["wallets"].scan(ConsistentRead=True)["Count"] == 1      # the wallet, no marker


def test_a_missing_wallet_is_an_error_not_already_applied(nb):
    nb["new_wallet"]()
    body = dict(nb["payment"](1), wallet="nobody")
    with pytest.raises(WalletNotFound):
        nb["debit_by_operation"](body)
    assert nb["wallets"].scan(ConsistentRead=True)["Count"] == 1


# --- Your turn ---------------------------------------------------------------------------------------------

# The reference solution's PASS: tests/test_exercises_specification.py (test_07_the_solution_passes_...) makes
# the same call and checks what it is told.


def test_the_exercise_starter_fails_with_the_resend_as_counterexample(nb, db):
    namespace = dict(nb)
    exec(cells(NB, "exercise")[0], namespace)
    verdict = check_safe_consumer(namespace["my_consumer"], db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: ")
    assert "twice (its SendMessage response was lost)" in verdict.message and "your consumer left" in verdict.message


def test_a_naive_consumer_fails(nb, db):
    def naive(table, message):
        body = json.loads(message["Body"])
        table.update_item(Key={"pk": body["wallet"]}, UpdateExpression="SET balance = balance - :a",
                          ExpressionAttributeValues={":a": body["amount"]})
    verdict = check_safe_consumer(naive, db=db)
    assert not verdict.passed and "Expected balance 80" in verdict.message


def test_a_consumer_that_accepts_bad_input_fails(db):
    solution = lesson("solutions/07_event_sources_solution.ipynb")["my_consumer"]

    def lax(table, message):
        if json.loads(message["Body"])["amount"] < 0:
            return "ignored"
        return solution(table, message)

    verdict = check_safe_consumer(lax, db=db)
    assert not verdict.passed and "bad input" in verdict.message


# --- DynamoDB's own failure answers (issue 10): no false success, no lost payment --------------------------

CONSUMER_NAMES = ["naive", "keyed by MessageId", "keyed by operation ID"]


def deliver_under(nb, consumer, kind, *, conflict_item=-1, payments=1, at=0):
    """Payments through a consumer loop; DynamoDB answers the `at`-th write with `kind`. Returns (seen, debits)."""
    nb["new_wallet"]()
    sqs, clock = nb["sqs"], nb["db"].clock
    queue = fresh_queue(sqs, f"test-07-answers-{os.getpid()}", visibility_timeout=30)
    for n in range(1, payments + 1):
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(nb["payment"](n)))
    handle = nb["CONSUMERS"][consumer]
    seen = []
    errors = ErrorResponses(at={at: kind}, conflict_item=conflict_item).install(nb["wallets"])
    try:
        for _ in range(20):
            messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1).get("Messages", [])
            if not messages:
                if not nb["in_queue"](queue):
                    break
                clock.advance(31)
                continue
            before = nb["debits"]()
            try:
                outcome = handle(messages[0])
            except Exception as error:               # nothing known to be written: the message stays
                seen.append((type(error).__name__, before, nb["debits"]()))
                continue
            assert nb["debits"]() >= 1, f"{consumer} answered {outcome!r} with no debit applied (false success)"
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=messages[0]["ReceiptHandle"])
            seen.append((outcome, before, nb["debits"]()))
    finally:
        errors.uninstall()
    assert not nb["in_queue"](queue), "a message was never finished"
    return seen, nb["debits"]()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("consumer", CONSUMER_NAMES)
def test_every_consumer_under_every_dynamodb_answer(nb, consumer, kind):
    seen, debited = deliver_under(nb, consumer, kind)
    assert debited >= 1, f"{consumer} under {kind}: the message was deleted, the payment lost ({seen})"
    if consumer == "naive" and kind == ERROR_500_APPLIED:
        assert debited == 2                         # applied, unknown to the caller, applied again on redelivery
    else:
        assert debited == 1, seen
    assert seen[0][0] not in ("applied", "already applied"), f"success reported for {kind}: {seen}"


@pytest.mark.parametrize("conflict_item", [0, -1])
def test_a_conflict_on_either_action_is_not_already_applied(nb, conflict_item):
    seen, debited = deliver_under(nb, "keyed by operation ID", KINDS[0], conflict_item=conflict_item)
    assert [s[0] for s in seen][1:] == ["applied"] and seen[0][0] != "already applied"
    assert debited == 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_lambda_poller_path_reports_every_dynamodb_answer_and_loses_nothing(nb, kind):
    for consumer in ("debit_naive", "debit_by_operation"):
        nb["new_wallet"]()
        sqs = nb["sqs"]
        queue = fresh_queue(sqs, f"test-07-poller-answers-{os.getpid()}", visibility_timeout=30)
        for n in range(1, 4):
            sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(nb["payment"](n)))
        poller = LambdaPoller(sqs, queue, nb["handler_partial"](nb[consumer]), report_batch_item_failures=True)
        errors = ErrorResponses(at={1: kind}).install(nb["wallets"])
        try:
            nb["drain"](poller, queue)
        finally:
            errors.uninstall()
        expected = 4 if consumer == "debit_naive" and kind == ERROR_500_APPLIED else 3
        assert nb["debits"]() == expected, (consumer, kind)
        assert poller.invocations[0].returned_to_queue == [poller.invocations[0].message_ids[1]]


def test_the_checker_fails_a_consumer_that_reads_a_conflict_as_already_applied(db):
    from botocore.exceptions import ClientError

    solution = lesson("solutions/07_event_sources_solution.ipynb")["my_consumer"]

    def mistaken(table, message):
        try:
            return solution(table, message)
        except ClientError as error:
            if error.response["Error"]["Code"] == "TransactionCanceledException":
                return "already applied"           # any cancellation read as a duplicate
            raise

    verdict = check_safe_consumer(mistaken, db=db)
    assert not verdict.passed and "TransactionConflict" in verdict.message
    assert "answered 'already applied'; the message was deleted" in verdict.message
    assert "a payment lost" in verdict.message
    assert all(len(line) <= 100 for line in str(verdict).splitlines())


def test_the_conflict_cell_keeps_the_message_and_applies_once(nb):
    frame = nb["conflict_run"](nb["debit_by_operation"])
    assert list(frame["deleted"]) == [False, True] and list(frame["debits"]) == [0, 1]


# --- item 9: a visibility timeout shorter than the work ---------------------------------------------------

def test_a_visibility_timeout_shorter_than_the_work_delivers_concurrently(nb):
    log, debited = nb["two_workers"](nb["debit_naive"], 30)
    assert debited == 2 and list(log["worker"]) == ["A", "B", "B", "A"]
    assert nb["two_workers"](nb["debit_naive"], 6 * nb["WORK_SECONDS"])[1] == 1
    assert nb["two_workers"](nb["debit_by_operation"], 30)[1] == 1


# --- item 5: FIFO partial batch responses ------------------------------------------------------------------

def test_fifo_stop_at_the_first_failure_keeps_the_order(nb):
    broken = nb["fifo_batches"](nb["handler_partial"])
    kept = nb["fifo_batches"](nb["handler_partial_fifo"])
    assert broken["order applied (op-…)"].endswith("08 09 10 07") and broken["deleted after a failure"] == 3
    assert kept["order applied (op-…)"] == " ".join(f"{n:02d}" for n in range(1, 11))
    assert kept["deleted after a failure"] == 0


@pytest.mark.parametrize("url, size, window, ok", [
    ("q", 10, 0, True), ("q", 11, 0, False), ("q", 10_000, 1, True), ("q", 10_001, 1, False),
    ("q.fifo", 10, 0, True), ("q.fifo", 11, 0, False), ("q.fifo", 5, 1, False),
])
def test_batch_size_and_window_as_aws_documents(nb, url, size, window, ok):
    make = lambda: LambdaPoller(nb["sqs"], url, lambda e, c: None, batch_size=size, batching_window=window)
    if ok:
        assert make().batch_size == size
    else:
        with pytest.raises(ValueError, match="batch_size|batching window"):
            make()


def test_a_batch_above_ten_is_gathered_from_several_receives(nb):
    sqs = nb["sqs"]
    queue = fresh_queue(sqs, f"test-07-big-{os.getpid()}", visibility_timeout=30)
    for n in range(25):
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"n": n}))
    sizes = []
    poller = LambdaPoller(sqs, queue, lambda e, c: sizes.append(len(e["Records"])), batch_size=20, batching_window=1)
    poller.poll()
    poller.poll()
    assert sizes == [20, 5]


def test_the_marker_outlives_every_hop(nb):
    hops = nb["HOPS"]
    assert nb["MARKER_LIFETIME"] == sum(hops.values()) > nb["DLQ_RETENTION"] + 2 * nb["QUEUE_RETENTION"]


# --- 5. a DynamoDB stream: a failed batch comes back whole ------------------------------------------------

@pytest.mark.parametrize("setting, consumer, sizes, tried, applied", [
    ("whole batch (default)", "debit_naive", [10, 10], 17, 16),
    ("whole batch (default)", "debit_by_operation", [10, 10], 17, 10),
    ("BisectBatchOnFunctionError", "debit_naive", [10, 5, 5], 17, 16),
    ("BisectBatchOnFunctionError", "debit_by_operation", [10, 5, 5], 17, 10),
    ("ReportBatchItemFailures", "debit_naive", [10, 4], 11, 10),
    ("ReportBatchItemFailures", "debit_by_operation", [10, 4], 11, 10),
])
def test_a_stream_batch_that_fails_halfway(nb, setting, consumer, sizes, tried, applied):
    batch_sizes, log = nb["stream_run"](nb[consumer], setting)
    assert batch_sizes == sizes and len(log) == tried
    assert log["debits applied"].iloc[-1] == applied == nb["debits"]()


def test_the_failed_stream_batch_is_handed_over_again_from_its_first_record(nb):
    _, log = nb["stream_run"](nb["debit_naive"], "whole batch (default)")
    first = [f"op-{n:02d}" for n in range(1, 8)]
    assert list(log["record"]) == first + [f"op-{n:02d}" for n in range(1, 11)]
    assert list(log["batch"]) == [1] * 7 + [2] * 10


def stream_of(nb, count):
    """A new stream with `count` payments on it (the notebook's own producer)."""
    return nb["write_payments"](count)


def read_to_the_end(poller, most=20):
    """Poll until the shard is read to its end; fail (rather than hang) if it takes more than `most` batches."""
    for _ in range(most):
        if poller.poll() is None:
            return
    pytest.fail(f"the shard was not read to its end in {most} batches")


def test_a_stream_batch_that_always_fails_holds_the_shard_by_default(nb):
    arn = stream_of(nb, 4)

    def always_fails(event, context):
        raise RuntimeError("down")
    poller = StreamPoller(nb["streams"], arn, always_fails, batch_size=2)
    batches = [poller.poll() for _ in range(5)]
    assert len({b.sequence_numbers[0] for b in batches}) == 1 and all(len(b.sequence_numbers) == 2 for b in batches)
    assert not any(b.checkpointed or b.discarded for b in batches)


def test_a_spent_retry_budget_discards_the_batch_and_moves_on(nb):
    arn = stream_of(nb, 6)
    seen = []

    def fails_on_op_03(event, context):
        ops = [r["dynamodb"]["NewImage"]["pk"]["S"] for r in event["Records"]]
        seen.append(ops)
        if "op-03" in ops:
            raise RuntimeError("op-03")
    poller = StreamPoller(nb["streams"], arn, fails_on_op_03, batch_size=5, max_retries=2)
    read_to_the_end(poller)
    assert [len(ops) for ops in seen] == [5, 5, 5, 1] and seen[-1] == ["op-06"]
    assert poller.batches[2].discarded == poller.batches[0].sequence_numbers


def test_bisecting_isolates_a_record_that_always_fails(nb):
    arn = stream_of(nb, 4)
    seen = []

    def fails_on_op_03(event, context):
        ops = [r["dynamodb"]["NewImage"]["pk"]["S"][3:] for r in event["Records"]]
        seen.append(" ".join(ops))
        if "03" in ops:
            raise RuntimeError("op-03")
    poller = StreamPoller(nb["streams"], arn, fails_on_op_03, bisect_on_error=True, max_retries=1)
    read_to_the_end(poller)
    assert seen == ["01 02 03 04", "01 02", "03 04", "03", "03", "04"]     # splits are free; op-03 has 1 retry
    assert [len(b.discarded) for b in poller.batches] == [0, 0, 0, 0, 1, 0]


def test_an_unknown_item_identifier_fails_the_whole_stream_batch(nb):
    arn = stream_of(nb, 3)
    calls = []

    def reports_nonsense(event, context):
        calls.append(len(event["Records"]))
        return {"batchItemFailures": [{"itemIdentifier": "nope"}]} if len(calls) == 1 else None
    poller = StreamPoller(nb["streams"], arn, reports_nonsense, report_batch_item_failures=True)
    read_to_the_end(poller)
    assert calls == [3, 3] and poller.batches[0].error == "invalid batchItemFailures"


@pytest.mark.parametrize("options", [{"batch_size": 0}, {"batch_size": 10_001}, {"max_retries": -2}])
def test_the_stream_poller_refuses_settings_lambda_would_not_accept(nb, options):
    with pytest.raises(ValueError):
        StreamPoller(nb["streams"], stream_of(nb, 1), lambda e, c: None, **options)


def test_a_retried_stream_batch_hands_over_the_same_records_with_the_same_event_ids(nb):
    arn = stream_of(nb, 3)
    seen = []

    def fails_once(event, context):
        seen.append([(r["eventID"], r["dynamodb"]["SequenceNumber"]) for r in event["Records"]])
        if len(seen) == 1:
            raise RuntimeError("first try")
    poller = StreamPoller(nb["streams"], arn, fails_once)
    read_to_the_end(poller)
    assert len(seen) == 2 and seen[0] == seen[1] and len({e for e, _ in seen[0]}) == 3


def test_a_stream_hands_over_changed_and_deleted_items_too_and_the_consumer_pays_only_new_ones(nb):
    """Issue 44: a stream delivers every kind of record -- INSERT, MODIFY and REMOVE (a delete, TTL's among them)
    -- and a REMOVE under NEW_IMAGE carries no new image. The consumer pays for new items only: a changed or
    deleted payment item is skipped, not a failed batch that holds the shard."""
    payments, arn = nb["fresh_stream_table"](nb["db"], "payments-07", StreamSpecification=nb["STREAM"])
    for n in (1, 2, 3):
        payments.put_item(Item={"pk": nb["payment"](n)["operation_id"], "producer": "shop", "wallet": nb["WALLET"],
                                "amount": nb["AMOUNT"]})
    payments.update_item(Key={"pk": "op-02"}, UpdateExpression="SET checked = :yes",
                         ExpressionAttributeValues={":yes": True})                     # MODIFY
    payments.delete_item(Key={"pk": "op-03"})                                           # REMOVE
    nb["new_wallet"]()
    log, kinds = [], []
    consumer = nb["stream_handler"](nb["debit_by_operation"], log)

    def handler(event, context):
        kinds.extend(record["eventName"] for record in event["Records"])
        return consumer(event, context)
    poller = StreamPoller(nb["streams"], arn, handler)
    read_to_the_end(poller)
    assert kinds == ["INSERT", "INSERT", "INSERT", "MODIFY", "REMOVE"]
    assert all(batch.checkpointed and not batch.discarded for batch in poller.batches)
    assert [row["record"] for row in log] == ["op-01", "op-02", "op-03"] and nb["debits"]() == 3
