"""What can happen while a payment is in flight: the checker's events, as data, each with its source.

`helpers.checker` places these events at the points of an attempt in flight -- each hook step it reaches
(`hook("claimed")`), each DynamoDB request it sends, each call to the payment provider -- first one at every
point (the exhaustive phase, `helpers.explorer`), then at random. An `Event` has one name, one wording and the
kinds of point where it can happen; a subject draws every event whose `needs` it has (`Subject.interleaves`,
`world`, `waits`, `crashes`, its `faults`). A new documented behaviour is one new entry here, and its effect one
function in `helpers.explorer.APPLY`.

DynamoDB's failure answers: the service model lists more than a lesson's handler can meet. `ANSWERS` are the
ones drawn (at every write of an attempt), `NOT_DRAWN` the others and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dynamodb_errors import (
    CONFLICT,
    ERROR_500_APPLIED,
    ERROR_500_NOT_APPLIED,
    IN_PROGRESS,
    IN_PROGRESS_APPLIED,
    REQUEST_LIMIT,
    THROTTLED,
    THROTTLING,
    UNAVAILABLE,
)

STEP, CALL, WRITE, PROVIDER = "step", "call", "write", "provider"     # kinds of point
ANY = (STEP, CALL, PROVIDER)

LAMBDA_RETRIES = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html"
IETF_DRAFT = "https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/"
STRIPE_KEYS = "https://docs.stripe.com/api/idempotent_requests"
STRIPE_ERRORS = "https://docs.stripe.com/error-low-level#idempotency"
BRANDUR = "https://brandur.org/idempotency-keys"
CONDITIONS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html"
POWERTOOLS = "https://docs.powertools.aws.dev/lambda/python/latest/utilities/idempotency/"
TTL = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html"
BUILDERS = "https://aws.amazon.com/builders-library/making-retries-safe-with-idempotent-APIs/"
ERRORS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html"
TRANSACT = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html"
ITEM_LIMITS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-items"
LSI = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LSI.html#LSI.ItemCollections.SizeLimit"
MRSC = ("https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
        "V2globaltables_HowItWorks.html#V2globaltables_HowItWorks.consistency-modes")


@dataclass(frozen=True)
class Event:
    """One thing that can happen at a point of an attempt in flight.

    `name` is its identity (the history records it), `words` its one wording (a format string over `wallet`,
    `amount`, `kind`), `at` the kinds of point where it can happen, `needs` the subject's attribute that must be
    true for the subject to draw it, `undo` the event that takes it back (the world's changes end), `source`
    where the behaviour is documented."""

    name: str
    family: str
    words: str
    at: tuple[str, ...]
    needs: str
    source: str
    undo: str | None = None
    kind: str | None = None          # a DynamoDB answer's kind (helpers.dynamodb_errors), for `answer` events


def _answer(kind: str, words: str, source: str = ERRORS, at: tuple[str, ...] = (WRITE,)) -> Event:
    return Event(f"answer {kind}", "answer", f"DynamoDB answers it with {words}", at, "faults", source, kind=kind)


CATALOGUE: tuple[Event, ...] = (
    # another request run to its end
    Event("copy", "request", "a copy of it arrives (another invocation)", ANY, "interleaves", LAMBDA_RETRIES),
    Event("other payload", "request", "the same key arrives with another payload", ANY, "interleaves", IETF_DRAFT),
    Event("other caller", "request", "another caller sends the same key", ANY, "interleaves", STRIPE_KEYS),
    Event("crossing", "request", "another payment from the wallet arrives, the two together more than its balance",
          ANY, "interleaves", CONDITIONS),
    # the world changing
    Event("close", "world", "{wallet}'s wallet is closed", ANY, "world", BRANDUR, undo="reopen"),
    Event("reopen", "world", "{wallet}'s wallet is opened again", ANY, "world", BRANDUR),
    Event("elsewhere", "world", "someone else pays {amount} from {wallet}'s wallet", ANY, "world", BRANDUR,
          undo="topup"),
    Event("topup", "world", "{wallet}'s wallet is topped up with {amount}", ANY, "world", BRANDUR),
    # the clock, to either side of every clock
    Event("lease before", "clock", "it stalls to just before its lease ends", ANY, "waits", POWERTOOLS),
    Event("lease after", "clock", "it stalls past its lease", ANY, "waits", POWERTOOLS),
    Event("provider edge", "clock", "it stalls past the provider's key window less the margin", ANY, "cutoff",
          STRIPE_KEYS),
    Event("retention after", "clock", "it stalls past the retention window", ANY, "waits", STRIPE_KEYS),
    Event("ttl sweep", "ttl", "it stalls past every TTL, and TTL deletes what is expired", ANY, "waits", TTL),
    # the recovery worker (11): a caller who left, a scheduler that runs it
    Event("worker", "worker", "it stalls, and the recovery worker runs", ANY, "worker", BRANDUR),
    # crashes, lost answers, DynamoDB's failure answers, the provider's
    Event("crash", "crash", "it crashes", (STEP, PROVIDER), "crashes", LAMBDA_RETRIES),
    Event("lost", "lost", "the answer to its write is lost", (WRITE,), "faults", BUILDERS),
    _answer(CONFLICT, "a conflict (nothing written)", TRANSACT),
    _answer(THROTTLED, "ProvisionedThroughputExceeded"),
    _answer(THROTTLING, "ThrottlingException"),
    _answer(REQUEST_LIMIT, "RequestLimitExceeded"),
    _answer(ERROR_500_NOT_APPLIED, "a 500 (not applied)"),
    _answer(ERROR_500_APPLIED, "a 500 (applied)"),
    _answer(UNAVAILABLE, "a 503 ServiceUnavailable"),
    _answer(IN_PROGRESS, "TransactionInProgress (not applied)", TRANSACT),
    _answer(IN_PROGRESS_APPLIED, "TransactionInProgress (the original commits)", TRANSACT),
    Event("provider down", "provider", "the provider is down (nothing charged)", (PROVIDER,), "faults",
          STRIPE_ERRORS),
    Event("provider lost", "provider", "the provider charges, and its answer is lost", (PROVIDER,), "faults",
          STRIPE_ERRORS),
)
BY_NAME = {event.name: event for event in CATALOGUE}

# DynamoDB's failure answers a write can get, as the service model lists them, that the checker does not draw
NOT_DRAWN = {
    "ItemCollectionSizeLimitExceededException": ("only a table with a local secondary index has item collections "
                                                 "with a size limit; no lesson's table has one", LSI),
    "ReplicatedWriteConflictException": ("only a global table with multi-Region strong consistency answers it; "
                                         "no lesson's table is global", MRSC),
    "ValidationException (item size)": ("an item over 400 KB is refused with nothing written; every lesson checks a "
                                        "request before it writes (exactly a wallet and an amount, names of bounded "
                                        "length: helpers/payment_requests.py) and saves a status, a short body and "
                                        "two headers, so no record comes near the limit", ITEM_LIMITS),
    "ResourceNotFoundException": ("the table does not exist: a deployment error no resend fixes, and every "
                                  "lesson's table exists before its first request", ERRORS),
}
ANSWERS = tuple(event for event in CATALOGUE if event.family == "answer")


def world_words(what: str, wallet: str, amount: int = 5) -> str:
    """A change of the world, in its one wording."""
    return BY_NAME[what].words.format(wallet=wallet, amount=amount)


def drawn_by(subject: object) -> list[Event]:
    """The events `subject` draws: those whose `needs` it has (a fault family it takes, for faults)."""
    found = []
    faults = set(getattr(subject, "faults", ()))
    for event in CATALOGUE:
        if event.needs == "faults":
            family = {"lost": "lost", "answer": "answer", "provider": "provider down"}[event.family]
            if event.kind in (IN_PROGRESS, IN_PROGRESS_APPLIED):
                family = "in progress"
            if event.name == "provider lost":   # at a provider call of the attempt, or as a fault of its own
                family = "provider down" if getattr(subject, "provider_points", True) else "provider lost"
            if family not in faults:
                continue          # (10's charges are no point of an attempt: the outbox worker's, drawn as faults)
        elif event.needs == "cutoff":
            if getattr(subject, "cutoff", None) is None:
                continue
        elif event.needs == "worker":
            if getattr(subject, "g", {}).get("recover_unfinished") is None:
                continue
        elif not getattr(subject, event.needs, False):
            continue
        found.append(event)
    return found


# --- what each subject draws, as the README's table says it (tools/catalogue_table.py writes it) --------------------

def not_drawn(subject: object) -> dict[str, str]:
    """The events `subject` (a subject class) does not draw, each with the reason its class gives (`why_not`);
    an event with no reason is named with an empty one, which tests/test_catalogue_table.py refuses."""
    drawn, why = {event.name for event in drawn_by(subject)}, getattr(subject, "why_not", {})
    return {event.name: why.get(event.name, "") for event in CATALOGUE if event.name not in drawn}


def table(kinds: tuple[tuple[type, str], ...]) -> str:
    """The README's table: one row per event of the catalogue (its source linked), one column per subject kind
    (`kinds`: the class and the lessons it checks); a cell is "yes", or "no" and the number of its reason, the
    reasons listed below the table, each once per subject."""
    head = ["| event | " + " | ".join(f"`{cls.__name__}` ({lessons})" for cls, lessons in kinds) + " |",
            "|---|" + "---|" * len(kinds)]
    phase = ["| *the exhaustive phase first* | " + " | ".join(
        "yes" if vars(cls).get("explores", False) else "no: random histories only"
        for cls, _ in kinds) + " |"]
    reasons: list[str] = []
    numbered: dict[str, int] = {}
    rows = []
    for event in CATALOGUE:
        cells = []
        for cls, _ in kinds:
            why = not_drawn(cls).get(event.name)
            if why is None:
                cells.append("yes")
                continue
            line = f"`{cls.__name__}`: {why}"
            if line not in numbered:
                reasons.append(line)
                numbered[line] = len(reasons)
            cells.append(f"no ({numbered[line]})")
        rows.append(f"| [{event.name}]({event.source}) | " + " | ".join(cells) + " |")
    notes = [f"{n}. {line}" for n, line in enumerate(reasons, 1)]
    return "\n".join([*head, *phase, *rows, "", *notes])
