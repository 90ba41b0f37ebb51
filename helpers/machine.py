"""The checker's histories: what hypothesis draws, and the state machine that sends it to a subject.

`helpers.checker.check_handler` builds a machine for its subject (`machine_for`) and runs it; the exhaustive
phase (`helpers.explorer`) sends its placed histories through the same machine. The machine generates and
records; every judgment is `helpers.specification`'s, and every step it records is a `helpers.history` record.

What a history draws, rule by rule:

- `send`: a request -- a caller (`CALLERS`), a key (`KEYS`), a payload (`PAYLOADS`, and amounts at the design's
  limits), an invocation -- with a crash at one of its hook steps, a fault (`faults_for`), and *meanwhile*: at the
  n-th point of the attempt (a hook step, a DynamoDB request: the checker owns the wire, `Points`) a copy of it or
  any request run to its end, after the attempt stalled past its lease, just short of it, or not; or the attempt
  slow there (`SLOW_SECONDS`);
- `wait` (where time matters): past every lease; to just before the oldest key's retention window ends, the same
  keys sent on across the edge; past a whole window (the keys sent from then on are new); with callers who leave,
  to the provider's edge;
- `change` (where the world can change): a wallet closed, reopened, paid from elsewhere.

At the end (`teardown`) the history quiesces: leases over, each key's first request sent until it gets a final
answer -- or, with callers who leave, the recovery worker runs and each caller comes back once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from .catalogue import world_words
from .dynamodb_errors import DISTINCT_KINDS
from .history import ANSWER, LASTING, LOST, PROVIDER_DOWN, PROVIDER_LOST, Fault, Happened, Sent, When, Written
from .specification import (
    FINAL,
    Crash,
    Model,
    Operation,
    Violation,
    check_answer,
    check_final,
    check_half_done,
    check_money,
    check_rerun,
    check_returned,
    check_window,
    check_written,
    check_written_final,
    classify,
    same_answer,
)
from .subjects import WALLETS, RecordSubject, Subject, said
from .wire import Call, Layer

PAYLOADS = [("alice", 10), ("alice", 99), ("bob", 10)]
KEYS, CALLERS, INVOCATIONS = ["k1", "k2"], ["shop-a", "shop-b"], ["inv-1", "inv-2"]
RESENDS_AT_QUIESCENCE = 4
# The waits a history draws: past every lease; to just before the oldest key's retention window ends, the same keys
# sent on across it (every clock's edge); past a whole window, after which the keys sent are new ones.
SPANS, EDGE_SECONDS, SLOW_SECONDS = ["lease", "retention edge", "retention"], 5.0, 10.0
POINTS = 4          # an attempt's first hook steps, and its first DynamoDB requests, where another request may run
_TAGS = itertools.count(1)   # each history's keys are new to the table, across checks sharing one table


class Search:
    """The search's budget for shrinking: after `limit` more histories than the one that first broke a property,
    every further history is skipped (it passes at once), and the shortest broken history found so far is the
    counterexample. `limit` None: shrink as far as hypothesis goes."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.found_at, self.best = limit, None, None

    def spent(self, run: int) -> bool:
        return self.limit is not None and self.found_at is not None and run >= self.found_at + self.limit

    def offer(self, violation: Violation, run: int) -> None:
        if self.found_at is None:
            self.found_at = run
        if self.best is None or len(violation.history) <= len(self.best.history):
            self.best = violation


class Points(Layer):
    """On the wire of a subject's clients: each DynamoDB request of the attempt in flight is a point where another
    request may run first (`point`, set while an attempt is sent); `busy` while that other request runs."""

    def __init__(self) -> None:
        self.point: Callable[[str], None] | None = None
        self.busy = False

    def on_wire(self, call: Call) -> Any:
        if self.point is not None and not self.busy and call.attempt == 1:
            self.point(f"about to send its {call.operation}")
        return call.send()

    def sees(self, operation: str) -> bool:
        return self.point is not None and not self.busy     # between attempts every request passes untouched


# --- what hypothesis draws ----------------------------------------------------------------------------------------

def payloads_for(subject: Subject) -> list[tuple[str, int]]:
    """The payloads a history draws: PAYLOADS, and amounts at the design's limits -- one the wallet cannot pay, and
    one just over the largest the design declares it takes (`max_amount`)."""
    limits = [("bob", 2 * subject.opening["bob"])] if subject.at_limits else []
    if subject.at_limits and subject.max_amount is not None:
        limits.append(("alice", subject.max_amount + 1))
    return [*PAYLOADS, *limits]


def requests(keys_reused: bool, invocations: bool = True,
             payloads: list[tuple[str, int]] = PAYLOADS) -> st.SearchStrategy:
    """(caller, key, (wallet, amount), invocation); with `keys_reused` False, a key always carries one payload."""
    payload = st.sampled_from(payloads)
    invocation = st.sampled_from(INVOCATIONS) if invocations else st.just(INVOCATIONS[0])
    if keys_reused:
        return st.tuples(st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.sampled_from(KEYS), payload, invocation)
    return st.builds(lambda caller, n, invocation: (caller, KEYS[n], PAYLOADS[n], invocation),
                     st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.integers(0, len(KEYS) - 1), invocation)


def one_at_a_time(invocations: bool = True, payloads: list[tuple[str, int]] = PAYLOADS) -> st.SearchStrategy:
    """(caller, "next" or "copy", (wallet, amount), invocation): the machine names the key (see `History.in_turn`)."""
    return st.tuples(st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.sampled_from(["next", "copy"]),
                     st.sampled_from(payloads),
                     st.sampled_from(INVOCATIONS) if invocations else st.just(INVOCATIONS[0]))


CRASH_STEPS = st.one_of(st.none(), st.integers(0, 3))


def faults_for(subject: Subject | RecordSubject) -> st.SearchStrategy:
    """The faults a request may meet, on one of its first `writes` writes: drawn as tuples (what hypothesis
    shrinks and splices), made `Fault` records by `fault_of` as the request is sent."""
    last = subject.writes - 1
    if subject.faults_alike:
        listed = {LOST: [(LOST, n) for n in range(last + 1)],
                  ANSWER: [(ANSWER, n, kind) for n in range(last + 1) for kind in DISTINCT_KINDS],
                  "in progress": [("in progress", n, applied) for n in range(min(2, last) + 1)
                                  for applied in (False, True)],
                  PROVIDER_DOWN: [(PROVIDER_DOWN, 1), (PROVIDER_DOWN, 2)],
                  PROVIDER_LOST: [(PROVIDER_LOST, 1), (PROVIDER_LOST, 2)]}
        return st.sampled_from([None, *(fault for k in subject.faults for fault in listed[k])])
    kinds = {LOST: st.tuples(st.just(LOST), st.integers(0, last)),
             ANSWER: st.tuples(st.just(ANSWER), st.integers(0, last), st.sampled_from(DISTINCT_KINDS)),
             # the same failure answer to the n-th transaction as many times in a row as the handler sends it (its
             # own resends used up), and then no more: a fault that lasts, and ends
             LASTING: st.tuples(st.just(LASTING), st.integers(0, 1), st.sampled_from(DISTINCT_KINDS)),
             "in progress": st.tuples(st.just("in progress"), st.integers(0, min(2, last)), st.booleans()),  # applied?
             PROVIDER_DOWN: st.tuples(st.just(PROVIDER_DOWN), st.integers(1, 2)),
             PROVIDER_LOST: st.tuples(st.just(PROVIDER_LOST), st.integers(1, 2))}
    drawn = [*subject.faults, *([LASTING] if ANSWER in subject.faults and subject.lasting else [])]
    return st.one_of(st.none(), *(kinds[k] for k in drawn))


def fault_of(drawn: tuple | None) -> Fault | None:
    """A drawn fault as its record: (family, n[, kind]), "in progress" with whether the original commits."""
    if drawn is None:
        return None
    return Fault.in_progress(*drawn[1:]) if drawn[0] == "in progress" else Fault(*drawn)


def meanwhile_for(subject: Subject, drawn_requests: st.SearchStrategy) -> st.SearchStrategy:
    """What happens at the n-th point of an attempt: a copy of it (the commonest duplicate: a client's or a queue's
    resend) or any request run there to its end, after the attempt stalled past its lease, just short of it
    ("edge"), or not; or the attempt slow there, SLOW_SECONDS at one step (a clock's edge crossed mid-way)."""
    stalls = st.sampled_from([False, True, "edge"]) if subject.waits else st.just(False)
    where = (["step", "step"] if subject.crashes else []) + (["call"] if subject.between_calls else [])
    points = st.tuples(st.sampled_from(where or ["step"]), st.integers(0, POINTS - 1))
    if not subject.interleaves or not where:
        return st.none()
    return st.one_of(st.none(), st.tuples(points, st.just("copy"), stalls), st.tuples(points, drawn_requests, stalls),
                     st.tuples(points, st.just("slow"), st.none()))


@dataclass
class Plan:
    """What a history machine is built for: its subject, the search's options and budget, and the reference model."""

    subject: Subject
    keys_reused: bool
    one_at_a_time: bool
    search: Search
    points: Points
    departed: bool
    focused: bool
    model: Model
    spans: list[str] = field(default_factory=list)


# --- the state machine ----------------------------------------------------------------------------------------------

class Attempt:
    """One request in flight: the points it reaches (each hook step, DynamoDB request and provider call, counted by
    kind), where a crash falls (`crash_at`, its n-th hook step) and what happens meanwhile (`during`: drawn, or
    the exhaustive phase's `Placement`); `nested_moved` is the money moved by what ran meanwhile."""

    def __init__(self, history: History, request: tuple, crash_at: int | None, during: Any) -> None:
        self.history, self.request, self.crash_at, self.during = history, request, crash_at, during
        self.seen, self.reached = 0, {"step": 0, "call": 0, "provider": 0}
        self.nested_moved: dict[str, int] = {}
        self.crashed: str | None = None
        self.slowed: str | None = None

    def at_point(self, where: str) -> None:
        """The attempt reached its next point: a hook step ("at 'claimed'"), a DynamoDB request ("about to send its
        PutItem") or a provider call; `during` names the n-th of one of them."""
        history, during = self.history, self.during
        if history.plan.points.busy:
            return
        at = "provider" if "provider" in where else "call" if where.startswith("about") else "step"
        n, self.reached[at] = self.reached[at], self.reached[at] + 1
        if hasattr(during, "reach"):                       # the exhaustive phase: events placed at this point
            during.reach(history, at, n, where, self.nested_moved)
            return
        if during is None or (at, n) != during[0]:
            return
        subject = history.plan.subject
        if during[1] == "slow":
            subject.clock.advance(SLOW_SECONDS)              # a slow attempt: seconds pass at this point
            self.slowed = where
        elif not self.nested_moved:
            subject.clock.advance({True: subject.lease + 0.6, "edge": subject.lease - 0.5}.get(during[2], 0))
            stalled = {True: ", stalled past its lease", "edge": ", stalled to just before its lease ends"}
            history.meanwhile(during[1], When(where, after=stalled.get(during[2], "")), self.nested_moved)

    def hook(self, step: str) -> None:
        self.at_point(f"at {step!r}")
        n, self.seen = self.seen, self.seen + 1
        if self.crash_at is not None and n == self.crash_at:
            self.crashed = step
            raise Crash(step)


class History(RuleBasedStateMachine):
    """One generated history of requests to a subject, judged as it goes (`helpers.specification`); its rules are
    added by `machine_for`, with the strategies its `plan` draws from."""

    plan: Plan

    def __init__(self) -> None:
        super().__init__()
        plan, subject = self.plan, self.plan.subject
        self.skip, self.broken = plan.search.spent(subject.run), False     # the shrinking budget is spent: it passes
        if self.skip:
            return
        if plan.departed:
            subject.settle()             # what earlier histories left is finished first: not this one's money
        subject.begin()
        self.subject, self.tag = subject, next(_TAGS)          # this history's keys are new to the table
        self.ops: dict[tuple[str, str], Operation] = {}
        self.closed: list[Operation] = []
        self.said: list[Any] = []
        self.epoch, self.calls = 0, 0           # after a retention window, keys are new ones (see `wait`)
        plan.model.closed, plan.model.elsewhere = {}, {}
        self.current: tuple[str, str, tuple[str, int]] | None = None   # one at a time: the request in hand
        self.keys = 0                                                   # one at a time: keys sent so far
        self.last = subject.money()

    def money(self) -> dict[str, int]:
        self.last = self.plan.subject.money()
        return self.last

    def moved_since(self, before: dict[str, int]) -> dict[str, int]:
        return {k: v - before[k] for k, v in self.money().items()}

    def fail(self, violation: Violation, at_last_step: bool = True) -> None:
        self.broken, self.violation = True, violation
        if at_last_step and self.said:          # the answer just judged broke it (issue 23: drawn red)
            self.said[-1].broken = True
        violation.history = list(self.said)
        if self.plan.focused:
            self.plan.search.offer(violation, self.plan.subject.run)
        raise violation

    def judged(self, check: Callable[[], None], at_last_step: bool = True) -> None:
        """Run one of the specification's judgments; a property it finds broken ends the history."""
        try:
            check()
        except Violation as violation:
            self.fail(violation, at_last_step)

    # --- sending, and judging each answer -------------------------------------------------------------------------

    def call(self, request: tuple, hook: Callable[[str], None], op: Operation | None = None) -> Any:
        caller, key, (wallet, amount), invocation = request
        op = op or self.operation(request)
        op.payloads.add((wallet, amount))   # sent: the key has seen this payload
        op.in_flight += 1
        try:
            answer = self.plan.subject.call(f"r{self.tag}-{self.epoch}-{key}", {"wallet": wallet, "amount": amount},
                                            invocation, hook, caller)
        except (Exception, Crash) as error:  # noqa: B902 - a crash is what the checker injects
            answer = error
        finally:
            op.in_flight -= 1
        if self.broken:          # a request sent meanwhile (at a hook) broke a property: the handler's
            raise self.violation  # own `except` may have caught the Violation on its way out
        return answer

    def operation(self, request: tuple) -> Operation:
        """The logical operation `request` belongs to: its key's, or a new one once the operation's window passed
        (the request may be a new payment, or a replay) -- unless this very payload is still unfinished under it:
        its work may have begun, and must end once."""
        caller, key, payload, _ = request
        subject = self.plan.subject
        op, now = self.ops.get((caller, key)), subject.clock.now()
        if op is not None and payload not in op.pending and now >= op.first_at + subject.retention:
            self.closed.append(op)
            op = self.ops[(caller, key)] = Operation(caller, key, payload, first_at=now, after=op)
        if op is None:
            op = self.ops[(caller, key)] = Operation(caller, key, payload, first_at=now)
        return op

    def judge(self, request: tuple, answer: Any, moved: dict[str, int], op: Operation | None = None) -> None:
        op = op or self.operation(request)
        self.judged(lambda: check_answer(op, request[2], answer, moved, self.plan.model,
                                         [*self.closed, *self.ops.values()]))
        if (op.after is not None and op.after.successes and len(op.successes) == 1 and not op.moved
                and op.successes[0][0] == op.after.successes[0][0]
                and same_answer(op.successes[0][1], op.after.successes[0][1])):   # a replay mark may differ
            op.first_at = op.after.first_at     # a replay past the window: the same operation, its window over

    def note(self, request: tuple, answer: Any, attempt: Attempt | None = None, fault: Fault | None = None,
             resent: str = "", when: When | None = None) -> None:
        caller, key, (wallet, amount), invocation = request
        self.said.append(Sent(caller, key, wallet, amount, invocation, self.plan.subject.words(answer),
                              classify(answer), self.plan.subject.invocations, fault,
                              crashed_at=str(answer) if isinstance(answer, Crash) else None,
                              crashed_step=attempt.crashed if attempt else None,
                              slowed_at=attempt.slowed if attempt else None, slow=SLOW_SECONDS, resent=resent,
                              when=when))

    def happened(self, event: str, family: str, said: str, label: str | None = None) -> None:
        self.said.append(Happened(event, family, said, label))

    def aside(self, action: Callable[[], Any]) -> Any:
        """Run `action` (a TTL sweep, a recovery worker) while an attempt is in flight: its calls are no points."""
        self.plan.points.busy = True
        try:
            return action()
        finally:
            self.plan.points.busy = False

    def meanwhile(self, request: tuple, when: When, nested_moved: dict[str, int]) -> Any:
        """Another request run to its end while the attempt in flight is at a point (its own calls are no points);
        the money it moved is kept apart from the attempt's (`nested_moved`)."""
        self.plan.points.busy = True
        try:
            before = self.money()
            answer = self.call(request, lambda step: None)
            moved = self.moved_since(before)
        finally:
            self.plan.points.busy = False
        for k, v in moved.items():
            nested_moved[k] = nested_moved.get(k, 0) + v
        self.note(request, answer, when=when)
        self.judge(request, answer, moved)
        return answer

    def send(self, request: tuple, crash_at: int | None, fault: Fault | None, during: Any) -> None:
        if self.skip:
            return
        if self.plan.one_at_a_time and not hasattr(during, "reach"):
            request = self.in_turn(request)
        if getattr(self.plan.subject, "one_call_per_key", False):   # issue 23: a client makes its own key per call,
            self.calls += 1                                          # so each call is a payment of its own
            request = (request[0], f"{request[1]}.{self.calls}", *request[2:])
        if isinstance(during, tuple) and during[1] == "copy":
            caller, key, payload, invocation = request
            during = (during[0], (caller, key, payload, INVOCATIONS[invocation == INVOCATIONS[0]]), during[2])
        self.attempt(request, Attempt(self, request, crash_at, during), fault)

    def attempt(self, request: tuple, attempt: Attempt, fault: Fault | None) -> None:
        """Send `request` with `fault` armed and the checker at each of its points; note and judge its answer."""
        subject, points = self.plan.subject, self.plan.points
        before = self.last
        subject.arm(fault)
        points.point = attempt.at_point
        if subject.provider is not None:
            subject.provider.point = attempt.at_point
        try:
            answer = self.call(request, attempt.hook)
        finally:
            points.point = None
            if subject.provider is not None:
                subject.provider.point = None
            fired = subject.fired(fault)
            subject.arm(None)
        moved = {k: v - before[k] - attempt.nested_moved.get(k, 0) for k, v in self.money().items()}
        self.note(request, answer, attempt, fault if fired else None)   # a handler may make fewer writes than named
        self.judge(request, answer, moved)

    def in_turn(self, drawn: tuple) -> tuple:
        """One request at a time: a copy of the request in hand, or the next one -- after the one in hand got a final
        answer (resent until then), and never to be sent again (so no older key follows a newer)."""
        caller, which, payload, invocation = drawn
        if which == "copy" and self.current is not None:
            caller, key, first = self.current
            return caller, key, payload if self.plan.keys_reused else first, invocation
        if self.current is not None:
            caller_, key_, _ = self.current
            op = self.ops[(caller_, key_)]
            for pending in sorted(op.pending):
                self.drive(caller_, key_, op, pending, " (resent before the next request)")
        self.keys += 1
        self.current = (caller, f"k{self.keys}", payload)
        return caller, f"k{self.keys}", payload, invocation

    def resend_all(self, why: str) -> None:
        """Every key of the history sent once more with its first payload, as a late duplicate would be."""
        for (caller, key), op in list(self.ops.items()):
            if self.broken:
                return
            request, before = (caller, key, op.first, "edge"), self.money()
            answer = self.call(request, lambda step: None)
            self.note(request, answer, resent=why)
            self.judge(request, answer, self.moved_since(before))

    # --- time passing, and the world changing -----------------------------------------------------------------------

    def wait(self, span: str) -> None:
        if self.skip:
            return
        if span == "lease":
            lease = self.plan.subject.lease
            self.plan.subject.clock.advance(lease + 1)
            self.happened("lease", "wait", f"{lease + 1:.0f} s pass (leases run out)",
                          f"{lease + 1:.0f} s pass: leases run out")
        elif span in ("retention edge", "provider edge"):
            self.to_edge(span)
        else:
            self.past_retention()

    def to_edge(self, span: str) -> None:
        """Every clock's edge: to just before the oldest key's window ends (or, for the provider's, just after), the
        same keys sent again across it."""
        subject = self.plan.subject
        window = subject.retention if span == "retention edge" else subject.cutoff
        edge = min((op.first_at + window for op in self.ops.values()), default=None)
        if span == "provider edge" and edge is not None:   # past it: a charge is looked up, not asked
            edge += 2 * EDGE_SECONDS
        if edge is None or edge - EDGE_SECONDS <= subject.clock.now():
            return
        subject.clock.advance(edge - EDGE_SECONDS - subject.clock.now())
        whose = "window" if span == "retention edge" else "provider window (less the margin)"
        side = "after" if span == "provider edge" else "before"
        self.happened(span, "wait", f"time passes to {EDGE_SECONDS:.0f} s {side} the oldest key's {whose} ends "
                                    "(the same keys are sent again)")
        # old keys resent across the edge, just before it and just after (not where no key can be resent: one
        # request at a time, or a client that makes its own key for each call)
        if self.plan.one_at_a_time or getattr(subject, "one_call_per_key", False):
            return
        self.resend_all(f" (resent {EDGE_SECONDS:.0f} s {side} its {whose} ends)")
        if span == "retention edge":
            subject.clock.advance(2 * EDGE_SECONDS)
            self.resend_all(f" (resent {EDGE_SECONDS:.0f} s after its {whose} ends)")

    def past_retention(self) -> None:
        """A whole retention window passes. A design may forget a key after its window or remember it longer: both
        are right, so the keys sent from now on are new ones, and what expired (records, markers, the provider's
        keys) is only in the way."""
        self.quiesce()
        self.plan.subject.clock.advance(self.plan.subject.retention + 3600)
        self.closed += self.ops.values()
        self.ops, self.epoch, self.current = {}, self.epoch + 1, None
        self.happened("retention", "wait", "the retention window passes; the keys sent from now on are new ones",
                      "the retention window passes")

    def change(self, what: str, wallet: str, amount: int = 5, when: str = "") -> None:
        """The world changing: a wallet closed, reopened, paid from by someone else, or topped up."""
        if self.skip:
            return
        model = self.plan.model
        was_closed = wallet in model.closed
        if (what == "close" and was_closed or what == "reopen" and not was_closed
                or what in ("elsewhere", "topup") and was_closed):
            return                                       # nothing to change
        amount = self.plan.subject.change(what, wallet, amount)
        if what == "close":
            model.closed[wallet] = self.plan.subject.clock.now()
        elif what == "reopen":
            del model.closed[wallet]
        else:
            model.elsewhere[wallet] = model.elsewhere.get(wallet, 0) + (amount if what == "elsewhere" else -amount)
        self.money()
        self.happened(what, "world", world_words(what, wallet, amount) + (f" ({when})" if when else ""))

    # --- quiescence ---------------------------------------------------------------------------------------------------

    def teardown(self) -> None:
        if not self.skip and not self.broken:
            self.quiesce()

    def quiesce(self) -> None:
        subject = self.plan.subject
        subject.clock.advance(subject.lease + 1)
        subject.drain()
        self.money()
        if self.plan.departed:
            self.recover()
            return
        for op in [*(o for o in self.closed if o.pending), *self.ops.values()]:
            for payload in sorted(op.pending):           # every client without a final answer sends again
                self.drive(op.caller, op.key, op, payload)
        subject.drain()
        self.judge_money()

    def judge_money(self) -> None:
        money = self.money()
        charged = {w: money[f"{w} charged"] for w in WALLETS} if self.plan.subject.provider else None
        self.judged(lambda: check_money([*self.closed, *self.ops.values()],
                                        {w: money[f"{w} debited"] for w in WALLETS}, charged),
                    at_last_step=False)                  # money at quiescence: no one answer broke it

    def drive(self, caller: str, key: str, op: Operation, payload: tuple[str, int],
              why: str = " (resent at quiescence)") -> None:
        """A client without a final answer sends its request again, after each lease, until it gets one."""
        subject, request, answer = self.plan.subject, (caller, key, payload, "quiesce"), None
        resent = not getattr(subject, "one_call_per_key", False)     # issue 23: a client's call cannot be resent
        for _ in range(RESENDS_AT_QUIESCENCE if resent else 0):
            before = self.last
            answer = self.call(request, lambda step: None, op)
            self.note(request, answer, resent=why)
            self.judge(request, answer, self.moved_since(before), op)
            if classify(answer) in FINAL:
                return
            subject.clock.advance(subject.lease + 1)
        self.judged(lambda: check_final(op, payload, answer, RESENDS_AT_QUIESCENCE if resent else 0),
                    at_last_step=resent)

    def recover(self) -> None:
        """Issue 35: the callers still without a final answer have left, and nobody resends for them. Past every lease
        and the recovery worker's grace, the subject's worker runs, twice (the second run must move no money); then no
        payment may be half done; then each caller comes back once with its request and must get a final answer;
        then the money must match the answers (*once*) and no charge may be asked past the provider's edge."""
        subject = self.plan.subject
        subject.clock.advance(subject.grace + 1)
        ran = subject.recover()
        subject.drain()
        self.happened("recovery", "wait", "the callers without a final answer have left; " + (
            "the recovery worker runs, twice" if ran else "there is no recovery worker"),
            "the callers without a final answer have left")
        money = self.money()
        if ran:
            subject.recover()
            subject.drain()
            self.judged(lambda: check_rerun(money, self.money()), at_last_step=False)
        if subject.provider is not None:
            self.judged(lambda: check_half_done(money, WALLETS), at_last_step=False)
        for op in [*(o for o in self.closed if o.pending), *self.ops.values()]:
            for payload in sorted(op.pending):           # each caller comes back once, after the worker
                request, before = (op.caller, op.key, payload, "returns"), self.money()
                answer = self.call(request, lambda step: None, op)
                self.note(request, answer, resent=" (its caller comes back once, after the recovery worker)")
                self.judge(request, answer, self.moved_since(before), op)
                self.judged(lambda: check_returned(op, payload, answer))
        subject.drain()
        if subject.provider is not None and subject.cutoff is not None:
            self.judged(lambda: check_window(subject.provider, subject.cutoff), at_last_step=False)
        self.judge_money()


def _rules(plan: Plan) -> dict[str, Any]:
    """The machine's rules, with the strategies `plan` draws from: `send` always, `wait` where time matters,
    `change` where the world can change. (Hypothesis knows a rule by its function's name: the names stay.)"""
    subject = plan.subject
    payloads = payloads_for(subject)
    narrowed = (one_at_a_time(subject.invocations, payloads) if plan.one_at_a_time
                else requests(plan.keys_reused, subject.invocations, payloads))
    meanwhile = st.none() if plan.one_at_a_time else meanwhile_for(subject, requests(plan.keys_reused,
                                                                                      payloads=payloads))
    crash_at = CRASH_STEPS if subject.crashes else st.none()

    def send(self: History, request: tuple, crash_at: int | None, fault: tuple | None, during: Any) -> None:
        History.send(self, request, crash_at, fault_of(fault), during)

    def wait(self: History, span: str) -> None:
        History.wait(self, span)

    def change(self: History, what: str, wallet: str, amount: int = 5, when: str = "") -> None:
        History.change(self, what, wallet, amount, when)

    found = {"send": rule(request=narrowed, crash_at=crash_at, fault=faults_for(subject), during=meanwhile)(send)}
    if subject.waits:            # a rule only where time matters (leases, retention windows)
        found["wait"] = rule(span=st.sampled_from(plan.spans))(wait)
    if subject.world:            # a rule only where the subject can change the world around its handler
        found["change"] = rule(what=st.sampled_from(["close", "reopen", "elsewhere"]),
                               wallet=st.sampled_from(list(WALLETS)))(change)
    return found


def machine_for(subject: Subject, keys_reused: bool, one_at_a_time: bool = False, search: Search | None = None,
                points: Points | None = None, departed: bool = False) -> type[History]:
    """The history machine for `subject`: `History` with its plan and its rules."""
    search = search or Search(None)
    # issue 35: with callers who leave, a history also waits to the provider's edge (its window less the design's
    # margin); without them, the waits drawn are exactly SPANS
    spans = [*SPANS, "provider edge"] if departed and subject.cutoff is not None else SPANS
    focused = (one_at_a_time or search.limit is not None or not subject.invocations or not subject.waits
               or not subject.crashes)
    model = Model(subject.opening, subject.max_amount, subject.guards_overdraft, subject.wallets_of)
    plan = Plan(subject, keys_reused, one_at_a_time, search, points or Points(), departed, focused, model, spans)
    return type("History", (History,), {"plan": plan, **_rules(plan)})


# --- a write that is not money -----------------------------------------------------------------------------------

class Writes(RuleBasedStateMachine):
    """Histories of one record's writes: requests in any order, a fault on any write of each, then resends."""

    subject: RecordSubject
    search: Search

    def __init__(self) -> None:
        super().__init__()
        subject = self.subject
        self.said: list[Any] = []
        self.pending: list[tuple] = []          # requests whose last answer was not final, in order
        self.broken, self.skip = False, self.search.spent(subject.run)
        if not self.skip:
            subject.run += 1
            subject.begin()

    def send(self, request: tuple, fault: Fault | None, resent: str = "") -> str:
        subject = self.subject
        before = subject.read(request)
        subject.arm(fault)
        try:
            answer = subject.call(request)
        except Exception as error:  # noqa: BLE001 - the reader's answer, whatever it is
            answer = error
        finally:
            subject.arm(None)
        after, kind = subject.read(request), subject.kind(answer)
        self.said.append(Written(subject.describe(request), said(answer), fault, resent))
        try:
            check_written(subject, request, said(answer), kind, before, after)
        except Violation as violation:
            self.fail(violation)
        if request in self.pending:
            self.pending.remove(request)
        if kind not in FINAL:
            self.pending.append(request)
        return kind

    def fail(self, violation: Violation) -> None:
        self.broken = True
        violation.history = list(self.said)
        self.search.offer(violation, self.subject.run)
        raise violation

    def write(self, request: tuple, fault: Fault | None) -> None:
        if not self.skip:
            self.send(request, fault)

    def teardown(self) -> None:
        while self.pending and not self.broken:
            request, kind = self.pending[0], None
            for _ in range(RESENDS_AT_QUIESCENCE):
                kind = self.send(request, None, " (resent at the end)")
                if kind in FINAL:
                    break
            try:
                check_written_final(self.subject.describe(request), kind, RESENDS_AT_QUIESCENCE)
            except Violation as violation:
                self.fail(violation)


def record_machine_for(subject: RecordSubject, search: Search | None = None) -> type[Writes]:
    """The history machine for a write that is not money."""
    def write(self: Writes, request: tuple, fault: tuple | None) -> None:
        Writes.write(self, request, fault_of(fault))

    write = rule(request=st.sampled_from(subject.requests), fault=faults_for(subject))(write)
    return type("Writes", (Writes,), {"subject": subject, "search": search or Search(None), "write": write})
