"""Lambda's DynamoDB Streams event source mapping, as AWS documents it, driving a handler in this process.

The stream is the backend's own: moto's, or DynamoDB Local's (its streams API
answers on the same port as DynamoDB). `streams_client(db)` gives a boto3
``dynamodbstreams`` client for either, and `fresh_stream_table` a table with a
new stream. `StreamPoller` reads that stream with the real API --
``DescribeStream``, ``GetShardIterator``, ``GetRecords`` -- and plays Lambda:

* records are handed over in **shard order**, up to ``batch_size`` a batch
  (``BatchSize`` is 100 by default for DynamoDB Streams);
* Lambda keeps a **checkpoint** per shard. A batch that succeeds moves it to its
  last record. A batch that **fails** (the function raised) leaves it where it
  was: the next batch is read again from the same first record -- the whole
  batch comes back, the records already handled included, and nothing later in
  the shard is handed over meanwhile;
* it is retried until it succeeds or ``max_retries`` (``MaximumRetryAttempts``;
  -1, the default, means until the records expire) is spent; then the batch is
  discarded (``Batch.discarded``; Lambda would send it to an on-failure
  destination) and the shard moves on. Record age is not simulated;
* ``bisect_on_error`` (``BisectBatchOnFunctionError``): a failed batch of more
  than one record is split in two, and the halves are handed over one after the
  other. Splitting does not count as a retry;
* ``report_batch_item_failures`` (``FunctionResponseTypes=["ReportBatchItemFailures"]``):
  the function returns ``{"batchItemFailures": [{"itemIdentifier": <SequenceNumber>}]}``;
  the checkpoint moves to just before the **lowest** sequence number reported and
  every record from there on is handed over again. An empty or missing list means
  success; an empty identifier (here, also one not in the batch) fails the whole batch.
  With bisecting on too, only the records from the failure on are retried.

Sources: AWS Lambda Developer Guide, "Lambda parameters for Amazon DynamoDB event
source mappings", "Configuring partial batch response with DynamoDB and Lambda"
and "Retain discarded records for a DynamoDB event source in Lambda".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session

from ..backends import _FAKE_CREDENTIALS, _IGNORE_LOCAL_AWS_CONFIG, REGION
from .invocation import reported_failures

DEFAULT_BATCH_SIZE = 100
MAX_BATCH_SIZE = 10_000
MOTO_STREAMS_ENDPOINT = f"https://streams.dynamodb.{REGION}.amazonaws.com"


@dataclass
class Batch:
    """One invocation: the records handed over (by sequence number) and what became of them."""

    number: int
    sequence_numbers: list[str]
    response: Any = None
    error: str | None = None                                  # "TypeName: message" if the function raised
    checkpointed: list[str] = field(default_factory=list)     # done: the checkpoint moved past them
    retried: list[str] = field(default_factory=list)          # handed over again, from the first of them
    discarded: list[str] = field(default_factory=list)        # the retry budget was spent: skipped


def streams_client(db: Any) -> Any:
    """A ``dynamodbstreams`` client for the backend `db`: moto in this process, or DynamoDB Local's endpoint."""
    if db.name == "aws":
        return boto3.Session(region_name=db._session.region_name).client("dynamodbstreams")
    session = boto3.Session(botocore_session=botocore.session.Session(session_vars=_IGNORE_LOCAL_AWS_CONFIG),
                            region_name=REGION, **_FAKE_CREDENTIALS)
    if db.name == "moto":  # moto answers the classic streams host, not botocore's newer per-account one
        return session.client("dynamodbstreams", endpoint_url=MOTO_STREAMS_ENDPOINT)
    from moto.core.models import botocore_stubber

    client = session.client("dynamodbstreams", endpoint_url=db.endpoint_url)
    client.meta.events.unregister("before-send", botocore_stubber)  # a real server: let the request go
    return client


def fresh_stream_table(db: Any, name: str, **create_options: Any) -> tuple[Any, str]:
    """A new, empty table `name` (key ``pk``) created with `create_options`; returns (Table, its stream's ARN).

    The table is deleted first if it exists, so its stream is new too: no record of an earlier run.
    """
    client, real_name = db.client(), db.table_name(name)
    try:
        client.delete_table(TableName=real_name)
        client.get_waiter("table_not_exists").wait(TableName=real_name, WaiterConfig={"Delay": 1})
    except client.exceptions.ResourceNotFoundException:
        pass
    client.create_table(TableName=real_name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST", **create_options)
    db.remember_table(real_name)
    client.get_waiter("table_exists").wait(TableName=real_name, WaiterConfig={"Delay": 1})
    arn = client.describe_table(TableName=real_name)["Table"].get("LatestStreamArn")
    if not arn:
        raise ValueError(f"table {name!r} has no stream: pass StreamSpecification={{'StreamEnabled': True, ...}}")
    return db.table(name), arn


class StreamPoller:
    """Read a stream's shards in order, invoke `handler(event, context)` per batch, checkpoint as Lambda does."""

    def __init__(
        self,
        streams: Any,
        stream_arn: str,
        handler: Callable[[dict[str, Any], Any], Any],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        bisect_on_error: bool = False,
        report_batch_item_failures: bool = False,
        max_retries: int = -1,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be a whole number from 1 to {MAX_BATCH_SIZE}, got {batch_size!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not -1 <= max_retries <= 10_000:
            raise ValueError(f"max_retries must be -1 (until the records expire) or 0 to 10,000, got {max_retries!r}")
        if not callable(handler):
            raise TypeError(f"handler must be callable, got {type(handler).__name__}")
        self.streams, self.stream_arn, self.handler = streams, stream_arn, handler
        self.batch_size, self.bisect_on_error = batch_size, bisect_on_error
        self.report_batch_item_failures, self.max_retries = report_batch_item_failures, max_retries
        shards = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
        self.shards = [shard["ShardId"] for shard in shards]
        self.checkpoints: dict[str, str | None] = {shard: None for shard in self.shards}
        self.sizes: list[int] = []      # after a bisect: the sizes of the next batches, in order
        self.retries = 0                # failed invocations since the checkpoint last moved
        self.batches: list[Batch] = []

    def _read(self, shard: str, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` records of `shard` after its checkpoint (GetShardIterator, then GetRecords)."""
        checkpoint = self.checkpoints[shard]
        where = ({"ShardIteratorType": "TRIM_HORIZON"} if checkpoint is None else
                 {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": checkpoint})
        iterator = self.streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard, **where)["ShardIterator"]
        return self.streams.get_records(ShardIterator=iterator, Limit=limit)["Records"]

    def poll(self) -> Batch | None:
        """One batch: None if every shard is read to its end, else the batch it handed over."""
        for shard in self.shards:
            records = self._read(shard, self.sizes[0] if self.sizes else self.batch_size)
            if records:
                return self._invoke(shard, records)
        return None

    def _invoke(self, shard: str, records: list[dict[str, Any]]) -> Batch:
        numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
        batch = Batch(number=len(self.batches) + 1, sequence_numbers=numbers)
        self.batches.append(batch)
        event = {"Records": [{**r, "eventSourceARN": self.stream_arn} for r in records]}
        try:
            batch.response = self.handler(event, None)
            failed = reported_failures(batch.response, numbers) if self.report_batch_item_failures else []
        except Exception as error:  # the function failed: the whole batch comes back
            batch.error, failed = f"{type(error).__name__}: {error}", numbers
        if failed is None:
            batch.error, failed = "invalid batchItemFailures", numbers
        done = numbers[:numbers.index(failed[0])] if failed else numbers
        if done:  # the checkpoint moves to the last record before the first failure
            self.checkpoints[shard], self.retries = done[-1], 0
            batch.checkpointed = done
        bisected = self.sizes.pop(0) if self.sizes else None
        if not failed:
            return batch
        rest = numbers[len(done):]
        if self.bisect_on_error and batch.error and len(rest) > 1:  # split in two: not a retry
            self.sizes[:0] = [(len(rest) + 1) // 2, len(rest) // 2]
            batch.retried = rest
            return batch
        self.retries += 1
        if 0 <= self.max_retries < self.retries:  # the retry budget is spent: discard the batch, move on
            self.checkpoints[shard], self.retries = rest[-1], 0
            batch.discarded = rest
            return batch
        if bisected is not None or (self.bisect_on_error and done):  # retry exactly these records
            self.sizes.insert(0, len(rest))
        batch.retried = rest
        return batch
