"""Helpers for "Is it safe to retry?": plumbing only, never the lesson.

Each module has one job; open the one a notebook names. The lessons' own API is here,
at the top; the simulated AWS services and the backends' fidelity machinery are in
their own folders:

    backends         connect(): moto (default), dynamodb-local or aws
    tables           fresh tables, wallets, consistent reads, empty_table()
    validation       check_debit(), check_payment_body(): bad input fails before anything is sent; BadInput
    wire             the one owner of botocore's response hook: faults and watchers in one order; client_of()
    faults           LostResponses: the write commits, the caller times out
    dynamodb_errors  ErrorResponses: conflicts, throttling and 500s; answer_of(), botocore_resends()
    schedule         Schedule: which requests a fault falls on, seeded (faults, http_faults, dynamodb_errors)
    clock            VirtualClock: time that only moves when told
    ttl              sweep(): DynamoDB's TTL deletion, at a moment the caller picks after expiry
    ids              RequestIds: seeded, uuid-shaped request IDs
    events           EventLog: rows of what happened, as a DataFrame
    swimlanes        Timeline and swimlanes(): who saw what, and when
    concurrency      race(): many threads, one instant
    callers          12's callers on the virtual clock: Outage, Capacity (throttling), Backlog, run_together(), load()
    meter            CallCounter and CapacityMeter: round trips, writes and reported capacity (wire watchers)
    http_server      serve(): an ASGI app on uvicorn, 127.0.0.1, a free port, from the kernel
    http_faults      LostHttpResponses: the server commits, the HTTP client times out
    postgres         postgres(): an embedded PostgreSQL (pgserver), or the one $RETRY_POSTGRES_URL names
    lessons          load_lesson(): another notebook's own imports and lesson cells, run here; swapped()
    late_retry       01's late retry (packed lost, shipped, packed again) run against an update; as_events()
    aba              04's ABA history (A lost, B, A resent) for its swimlane, and its property-based search
    resends          resender(): 06's writes sent again while DynamoDB wrote nothing (or cannot say)
    payment_requests check_payment(): 06's request shape, names and key length, before anything is written
    scenarios        06's six scenarios run against a handler, logged and drawn (the harness, not the lesson)
    specification    the five properties every retry-safe handler holds (once, bound, truthful, live, useful)
    checker          check_handler(): generated histories against a handler, held to the specification
    machine          the checker's random histories: what hypothesis draws, and the machine that sends it
    history          a history as data: each step (a request and its answer, a fault, an event) a record
    subjects         what the checker holds: a handler (06), a debit (03-05, 08), HTTP (09), Postgres (10), a record
    catalogue        what can happen while a payment is in flight: the checker's events, as data, with sources
    explorer         the checker's exhaustive phase: every catalogue event at every point, before the random one
    charts, notebook display settings and small chart functions
    exercises/       one checker per lesson's "Your turn" (check_retry_safe_debit() ...): instant feedback
    services/        the simulated AWS services: API Gateway, SQS and Lambda's poller, a payment provider...
    fidelity/        what makes moto answer like DynamoDB, and DynamoDB Local itself
"""

from . import charts, concurrency
from .backends import connect
from .clock import VirtualClock
from .dynamodb_errors import ErrorResponses
from .events import EventLog
from .faults import LostResponses
from .ids import RequestIds
from .notebook import setup
from .tables import empty_table, fresh_table, open_wallet, read_balance, read_item
from .validation import BadInput, InsufficientFunds, WalletNotFound, check_debit, check_payment_body, read_payment_body

__all__ = [
    "charts", "concurrency",  # modules the notebooks reach as helpers.charts / helpers.concurrency
    "connect", "VirtualClock", "EventLog", "LostResponses", "ErrorResponses", "RequestIds", "setup",
    "fresh_table", "empty_table", "open_wallet", "read_balance", "read_item",
    "BadInput", "InsufficientFunds", "WalletNotFound", "check_debit", "check_handler",
    "check_payment_body", "read_payment_body",
]


def __getattr__(name: str):
    """`helpers.check_handler`, imported on first use (it brings hypothesis, which the lessons need only then)."""
    if name == "check_handler":
        from .checker import check_handler

        return check_handler
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")
