"""The checker's exhaustive phase: every event of the catalogue at every point of an attempt, before any random one.

As loom and shuttle bound their search of a program's interleavings, `explore` sends a small, fixed set of
histories before hypothesis draws its random ones, so that no two-step interleaving is left to chance:

1. **values at the model's edges**, each sent alone: an amount of exactly the balance, the balance - 1 and + 1,
   1 and 0, the design's `MAX_AMOUNT` (from a wallet topped up to hold it) and + 1; names: a key with the
   separators keys are built from (`#`, `@`), and where the design declares its limits (`Subject.key_limit`,
   `wallet_limit`), a key exactly as long as it takes (with the separators), and a wallet ID as long as it takes
   (no such wallet: refused, nothing written);
2. **a takeover at every point**: the first attempt stalls past its lease at each of its points, something
   happens (nothing, the wallet closed, paid from elsewhere down to one short of the amount, another payload
   under the key, a TTL sweep), a copy takes the payment over, the world changes back, the caller resends --
   and only then does the first attempt wake, and go on;
3. **one event at every point**: each event of `helpers.catalogue` that the subject draws, at each point of
   the attempt where it can happen (a failure answer at each write, a crash at each step, a request or a change
   of the world anywhere, the provider's failures at its call).

The points are found by sending the first request once alone and noting each point it reaches. Each history is
judged as the random ones are (`helpers.specification`), and the first that breaks a property is the verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .catalogue import BY_NAME, IETF_DRAFT, PROVIDER, STRIPE_KEYS, WRITE, Event, drawn_by
from .history import When
from .specification import Crash, Violation
from .ttl import sweep, ttl_attribute
from .wire import WRITES

FIRST = ("shop-a", "k1", ("alice", 10), "inv-1")       # the attempt the events are placed around
EDGE_SECONDS = 5.0
SEPARATORS = "k#1@2"         # the separators handlers build keys from: 06/09's record `caller#key`, the provider's
                             # key `caller#key@started_at` (helpers/payment_requests.py), 07's marker `producer#id`
# Where the limits are declared: the IETF draft leaves a key's length to the resource, and 09 takes Stripe's 255
# characters (https://docs.stripe.com/api/idempotent_requests; MAX_KEY_LENGTH and MAX_WALLET_LENGTH in 09's cells)
NAME_SOURCES = (IETF_DRAFT, STRIPE_KEYS)


@dataclass(frozen=True)
class Act:
    """One event placed at a point, with what it needs: the request it sends, or the wallet and amount."""

    event: Event
    request: tuple | None = None
    wallet: str = "alice"
    amount: int = 5


@dataclass
class Placement:
    """A history of the exhaustive phase: `request` sent, and `acts` done when it reaches `point` (at, n)."""

    request: tuple
    point: tuple[str, int] | None
    acts: tuple[Act, ...] = ()
    before: tuple[Act, ...] = ()
    key_length: int | None = None      # the key, as the handler gets it, made exactly this long (a name at its limit)
    fired: bool = False
    points: list[tuple[str, int, str]] = field(default_factory=list)

    def reach(self, machine: Any, at: str, n: int, where: str, nested_moved: dict[str, int]) -> None:
        """Called by the checker at each point the attempt reaches: do the acts at the placed one."""
        self.points.append((at, n, where))
        if self.fired or (at, n) != self.point:
            return
        self.fired = True
        for act in self.acts:
            APPLY[act.event.family](machine, act, where, nested_moved)


def _request(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    machine.meanwhile(act.request, When(where, before=f"{act.event.words}, "), nested_moved)


def _world(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    machine.change(act.event.name, act.wallet, act.amount, when=When(where).words() if where else "")


def _note(machine: Any, act: Act, where: str, extra: str = "") -> None:
    said = act.event.words.format(wallet=act.wallet, amount=act.amount) + extra
    machine.happened(act.event.name, act.event.family, f"{said} ({When(where).words()})" if where else said)


def _clock(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    subject = machine.subject
    by = {"lease before": subject.lease - 0.5, "lease after": subject.lease + 0.6,
          "retention after": subject.retention + 1,
          "provider edge": (subject.cutoff or 0) + EDGE_SECONDS}[act.event.name]
    subject.clock.advance(by)
    _note(machine, act, where)


def _ttl(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    subject = machine.subject
    subject.clock.advance(subject.retention + 1)
    swept = []

    def sweep_all() -> None:
        for table in subject.tables():
            swept.extend(sweep(table, subject.clock.now(), attribute=ttl_attribute(table) or "expires_at"))

    machine.aside(sweep_all)
    _note(machine, act, where, f": {len(swept)} item(s) deleted")


def _worker(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    subject = machine.subject
    subject.clock.advance(subject.lease + subject.grace + 1)
    before = machine.money()

    def run() -> None:
        subject.recover()
        subject.drain()

    machine.aside(run)
    moved = {k: v - before[k] for k, v in machine.money().items()}
    for k, v in moved.items():
        nested_moved[k] = nested_moved.get(k, 0) + v
    _note(machine, act, where)


def _crash(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    raise Crash(where)


def _fault(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    subject = machine.subject
    if act.event.family == "lost":
        subject.lost.restart(at={0})
    elif act.event.kind.startswith("TransactionInProgress"):
        subject.in_progress.restart(at={0: act.event.kind})
    else:
        subject.errors.restart(at={0: act.event.kind})
    _note(machine, act, where)


def _provider(machine: Any, act: Act, where: str, nested_moved: dict[str, int]) -> None:
    provider = machine.subject.provider
    provider.fail_next(1) if act.event.name == "provider down" else provider.lose_next()
    _note(machine, act, where)


APPLY: dict[str, Callable[[Any, Act, str, dict[str, int]], None]] = {
    "request": _request, "world": _world, "clock": _clock, "ttl": _ttl, "worker": _worker, "crash": _crash,
    "lost": _fault, "answer": _fault, "provider": _provider}


# --- the placements ------------------------------------------------------------------------------------------------

def _fits(event: Event, at: str, where: str) -> bool:
    """Whether `event` can happen at a point of kind `at` (`where` names the DynamoDB operation of a call)."""
    operation = where.rsplit(" ", 1)[-1]
    if at == "call" and WRITE in event.at and operation in WRITES:
        return event.kind is None or not event.kind.startswith("TransactionInProgress") or \
            operation == "TransactWriteItems"
    return at in event.at


def _requests(subject: Any, keys_reused: bool, first: tuple) -> dict[str, tuple]:
    caller, key, (wallet, amount), _ = first
    opening = subject.opening[wallet]
    found = {"copy": (caller, key, (wallet, amount), "inv-2"),
             "other caller": ("shop-b", key, (wallet, amount), "inv-2"),
             "crossing": (caller, "k2", (wallet, opening - amount + 1), "inv-2")}
    if keys_reused:
        found["other payload"] = (caller, key, (wallet, 99), "inv-2")
    return found


def _act(event: Event, requests: dict[str, tuple], subject: Any, first: tuple) -> Act:
    wallet, amount = first[2]
    if event.family == "request":
        return Act(event, request=requests[event.name])
    if event.name in ("elsewhere", "topup"):
        return Act(event, wallet=wallet, amount=subject.opening[wallet] - amount + 1)   # leaves one short
    return Act(event, wallet=wallet)


def names(subject: Any, first: tuple = FIRST) -> list[Placement]:
    """Names at the model's edges, each sent alone: a key with the separators keys are built from; where the
    subject declares them, a key at its length limit (the separators in it) and a wallet ID at its own."""
    if not getattr(subject, "names_at_limits", True):
        return []
    caller, _, payment, invocation = first
    key = "".join(c for c in SEPARATORS if c not in getattr(subject, "refused_in_keys", ""))
    found = [Placement((caller, key, payment, invocation), None)]
    if getattr(subject, "key_limit", None):
        found.append(Placement((caller, key, payment, invocation), None, key_length=subject.key_limit))
    limit = getattr(subject, "wallet_limit", None)
    if limit:
        wallet = ("w#1@2-" + "w" * limit)[:limit]       # no such wallet: refused, and nothing written
        found.append(Placement((caller, "k1", (wallet, payment[1]), invocation), None))
    return found


def edges(subject: Any, first: tuple = FIRST) -> list[Placement]:
    """Values at the model's edges, each sent alone: names (`names`), and amounts where the subject draws them."""
    found = names(subject, first)
    if not subject.at_limits:
        return found
    caller, key, (wallet, _), invocation = first
    balance = subject.opening[wallet]
    found[:0] = [Placement((caller, key, (wallet, amount), invocation), None)
                 for amount in (balance, balance + 1, balance - 1, 1, 0)]
    limit = subject.max_amount
    if limit is not None and subject.world:
        topup = Act(BY_NAME["topup"], wallet=wallet, amount=limit + 1 - balance)    # it can pay either
        found += [Placement((caller, key, (wallet, amount), invocation), None, before=(topup,))
                  for amount in (limit, limit + 1)]
    return found


def takeovers(subject: Any, points: list[tuple[str, int, str]], keys_reused: bool,
              first: tuple = FIRST) -> list[Placement]:
    """At each point: the attempt stalls past its lease, something happens, a copy takes over, the world changes
    back, the caller resends; the first attempt wakes last."""
    if not (subject.interleaves and subject.waits):
        return []
    requests, drawn = _requests(subject, keys_reused, first), {e.name for e in drawn_by(subject)}
    copy, stall = Act(BY_NAME["copy"], request=requests["copy"]), Act(BY_NAME["lease after"])
    plans: list[tuple[Act, ...]] = [(stall, copy)]
    wallet, amount = first[2]
    short = subject.opening[wallet] - amount + 1
    if "close" in drawn:
        plans.append((stall, Act(BY_NAME["close"], wallet=wallet), copy, Act(BY_NAME["reopen"], wallet=wallet), copy))
    if "elsewhere" in drawn:
        plans.append((stall, Act(BY_NAME["elsewhere"], wallet=wallet, amount=short), copy,
                      Act(BY_NAME["topup"], wallet=wallet, amount=short), copy))
    if "other payload" in requests:
        plans.append((stall, Act(BY_NAME["other payload"], request=requests["other payload"]), copy))
    if "ttl sweep" in drawn:
        plans.append((Act(BY_NAME["ttl sweep"]), copy))
    return [Placement(first, (at, n), plan) for plan in plans for at, n, _ in points]


# the order single events are placed in: what breaks handlers most often first (a budget may cut the tail)
ORDER = ("crossing", "copy", "lost", "answer " + "InternalServerError (applied)", "crash", "provider lost",
         "other payload", "other caller", "close", "elsewhere", "topup", "lease after", "lease before",
         "provider down", "ttl sweep", "worker", "retention after", "provider edge")


def singles(subject: Any, points: list[tuple[str, int, str]], keys_reused: bool,
            first: tuple = FIRST) -> list[Placement]:
    """Each event the subject draws, alone, at each point where it can happen (event by event, `ORDER` first)."""
    requests = _requests(subject, keys_reused, first)
    events = sorted(drawn_by(subject), key=lambda e: ORDER.index(e.name) if e.name in ORDER else len(ORDER))
    found = []
    for event in events:
        if event.name == "reopen" or (event.family == "request" and event.name not in requests):
            continue
        for at, n, where in points:
            if _fits(event, at, where):
                found.append(Placement(first, (at, n), (_act(event, requests, subject, first),)))
    return found


def _sized(history: Any, request: tuple, length: int | None) -> tuple:
    """`request` with its key padded so that the key the handler gets -- the history's prefix, which keeps each
    history's keys new to the table (`r<tag>-<epoch>-` in `helpers.checker`), and the key -- is `length` long."""
    if length is None:
        return request
    caller, key, payment, invocation = request
    prefix = len(f"r{getattr(history, 'tag', 0)}-{getattr(history, 'epoch', 0)}-")
    return caller, (key * length)[:max(length - prefix, 1)], payment, invocation


def _run(machine: type, placement: Placement, subject: Any = None) -> Violation | None:
    if subject is not None and any(act.event.family == "worker" for act in placement.acts):
        subject.settle()      # the worker meets this history's payments only, not those earlier ones left
    history = machine()
    try:
        for act in placement.before:
            APPLY[act.event.family](history, act, "", {})
        history.send(_sized(history, placement.request, placement.key_length), None, None, placement)
        history.teardown()
    except Violation as violation:
        return violation
    return None


def explore(machine: type, subject: Any, keys_reused: bool = True, limit: int | None = None) -> Violation | None:
    """Send the exhaustive phase's histories (at most `limit`; None: all) through `machine` (the checker's
    History); the first property broken, or None."""
    dry = Placement(FIRST, None)
    found = _run(machine, dry)
    if found is not None:
        return found
    points = [p for p in dry.points if p[0] != PROVIDER or subject.provider is not None]
    if not subject.between_calls:
        points = [p for p in points if p[0] != "call"]
    planned = [*edges(subject), *takeovers(subject, points, keys_reused), *singles(subject, points, keys_reused)]
    budget = getattr(subject, "explore_budget", None)      # a subject whose histories are dear: its first ones
    if budget is not None:
        limit = budget if limit is None else min(limit, budget)
    for placement in planned[:limit]:
        found = _run(machine, placement, subject)
        if found is not None:
            return found
    return None


def count(subject: Any, points: list[tuple[str, int, str]], keys_reused: bool = True) -> int:
    """How many histories the exhaustive phase sends for `subject` with these points (the dry run included)."""
    return 1 + len(edges(subject)) + len(takeovers(subject, points, keys_reused)) + \
        len(singles(subject, points, keys_reused))
