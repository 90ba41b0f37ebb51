"""Helpers for "Is it safe to retry?": plumbing only, never the lesson.

Each module has one job; open the one a notebook names:

    backends        connect(): moto (default), dynamodb-local or aws
    faithful_moto   moto made atomic, and ClientRequestToken honoured
    client_tokens   DynamoDB's ClientRequestToken rules
    dynamodb_local  find, start and stop AWS's DynamoDB Local
    faults          LostResponses: the write commits, the caller times out
    dynamodb_errors DynamoDBErrors: conflicts, throttling and 500s, as DynamoDB answers them
    virtual_backoff botocore's retry backoff on the virtual clock
    failure_answers watch_answers(): each request's answer on the wire; botocore_resends()
    clock           VirtualClock: time that only moves when told
    ids             RequestIds: seeded, uuid-shaped request IDs
    events          EventLog: rows of what happened, as a DataFrame
    tables          fresh tables, wallets, consistent reads
    validation      check_debit(): bad input fails before anything is sent
    concurrency     race(): many threads, one instant
    exercises/      one checker per lesson's "Your turn" (check_retry_safe_debit() ...): instant feedback
    attempts        watch_attempts(): every request on the wire, botocore's retries included
    gateway         an API Gateway with an integration timeout, in virtual time
    queues          fresh_queue() and a Consumer that can crash before deleting
    sqs_clock       moto's SQS visibility timeouts on the virtual clock
    fifo_dedup      FIFO deduplication's 5-minute window, as AWS documents it
    lambda_sqs      Lambda's SQS poller: batches, whole-batch failures, batchItemFailures
    swimlanes       Timeline and swimlanes(): who saw what, and when
    payment_provider  a fake provider that honours an idempotency key
    powertools_clock  Powertools' idempotency utility on the virtual clock
    call_counter    round trips and writes per operation
    http_server     serve(): an ASGI app on uvicorn, 127.0.0.1, a free port, from the kernel
    http_faults     LostHttpResponses: the server commits, the HTTP client times out
    postgres        postgres(): an embedded PostgreSQL (pgserver), or the one $RETRY_POSTGRES_URL names
    lessons         load_lesson(): another notebook's own imports and lesson cells, run here
    charts, notebook  display settings and small chart functions
"""

from . import charts, concurrency
from .backends import connect
from .clock import VirtualClock
from .dynamodb_errors import DynamoDBErrors
from .events import EventLog
from .faults import LostResponses
from .ids import RequestIds
from .notebook import setup
from .tables import fresh_table, open_wallet, read_balance, read_item
from .validation import BadInput, WalletNotFound, check_debit

__all__ = [
    "charts", "concurrency",  # modules the notebooks reach as helpers.charts / helpers.concurrency
    "connect", "VirtualClock", "EventLog", "LostResponses", "DynamoDBErrors", "RequestIds", "setup",
    "fresh_table", "open_wallet", "read_balance", "read_item", "BadInput", "WalletNotFound", "check_debit",
]
