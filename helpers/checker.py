"""One checker for every payment handler: generated histories, held to `helpers.specification`.

`check_handler(pay)` takes a handler shaped like notebook 06's --
``pay(key, payload, invocation, hook=..., caller=...)`` answering ``{"status": ..., "body": ...}`` --
and sends it histories that hypothesis generates and shrinks: keys from a small set, payloads that
sometimes differ, two callers, attempts that share an invocation ID and a millisecond; a crash at any
step the handler reaches (each `hook(step)` call), another request -- a duplicate or any other -- run to its
end there or before any of the attempt's DynamoDB requests (the checker owns the wire: `_Between`), after the
attempt stalled past its lease or not; a lost DynamoDB answer or one of DynamoDB's failure answers at any write,
once or lasting through the handler's own resends of a transaction (`ATTEMPTS` times in a row), the payment
provider down; leases and retention windows running out -- and where bugs live: old keys resent
across the retention window's edge, an attempt stalled to just short of its lease or slowed 10 s mid-way, the
world changing between steps (a wallet closed, reopened, paid from elsewhere), amounts at the design's declared
limits. After each history it quiesces
(leases over, each key's first request sent again until it gets a final answer) and checks the five
properties. The answer is a `Verdict`: the properties held, or the first broken one with the shortest
history the search found, as data.

The handler's surroundings come from the handler's own module globals (a notebook's namespace):
`db` (its clock), `wallets` (the wallet table), `provider` (replaced by a fresh `PaymentProvider` for
each history), `LEASE_SECONDS` and `RETENTION_SECONDS`, and the limits the design declares, `MAX_AMOUNT` and
`GUARDS_OVERDRAFT` (the reference model applies them: see `helpers.specification.Model`); faults are injected on
every boto3 table
and client found there.

Other shapes are *subjects* (`helpers/subjects.py`): `DebitSubject` (a debit function, notebooks 03-05
and 08; the exercises hand it a table of their own), `HttpSubject` (09's endpoint), `OutboxSubject` (10's
handler on Postgres), and `RecordSubject` for a write that is not money (01's status update, 02's
sign-up), held to *truthful* and *live* only. `check_handler`'s options match a design to what it promises:
`keys_reused=False` (one payload per key), `one_at_a_time=True` (no interleaving, no old key after
a newer: ABA kept out), and `shrink=<n>` (a budget for shortening the counterexample).

A handler that keeps no record of its keys, defined where its `db`, `wallets` and `provider` are:

    >>> import json, helpers
    >>> from helpers.services.payment_provider import PaymentProvider
    >>> db = helpers.connect()
    >>> wallets, provider = helpers.fresh_table(db, "wallets-doctest"), PaymentProvider(db.clock)
    >>> def pay(key, payload, invocation, hook=lambda step: None, caller="shop-a"):
    ...     wallets.update_item(Key={"pk": payload["wallet"]}, UpdateExpression="SET balance = balance - :a",
    ...                         ExpressionAttributeValues={":a": payload["amount"]})
    ...     hook("debited")
    ...     charge = provider.charge(payload["wallet"], payload["amount"], idempotency_key=f"{caller}#{key}")
    ...     return {"status": 201, "body": json.dumps({"charge": charge.charge_id})}
    >>> verdict = check_handler(pay, histories=10, steps=2, shrink=False)   # the default shrinks (slower)
    >>> print(verdict)                     # found by the exhaustive phase, before any random history
    pay breaks once: wallet 'alice': debited 20, charged 10, but the answers said 10 was paid
    the first history found placing one event at each point:
      1. it stalls past its lease (while the next one is about to send its UpdateItem)
    ...
    >>> verdict.broken, verdict.placed, verdict.history[0]["event"], verdict.history[1]["caller"]
    ('once', True, 'lease after', 'shop-a')
    >>> verdict.draw()                     # the same history as a swimlane chart (None when every property held)
    <Figure size ... with 1 Axes>
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from .catalogue import world_words
from .dynamodb_errors import DISTINCT_KINDS
from .explorer import Placement, explore
from .fidelity.search_constants import without_local_constants
from .specification import (
    BOUND,
    FINAL,
    LIVE,
    NOTHING_WRITTEN,
    ONCE,
    PROPERTIES,
    SUCCESS,
    TRUTHFUL,
    USEFUL,
    Crash,
    Model,
    Operation,
    Violation,
    check_answer,
    check_money,
    classify,
    in_words,
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
EXPLORE_ALL = 100   # from this budget on (the reader's default), the exhaustive phase sends every placement
SEED = 5            # the histories a check sends, unless `seed_search` (issue 23: see check_handler)
_TAGS = itertools.count(1)   # each history's keys are new to the table, across checks sharing one table


class _Search:
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


@dataclass
class Verdict:
    """What the checker found: `broken` is None when every property held over `histories` histories."""

    handler: str
    histories: int
    broken: str | None = None
    sentence: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    untried: tuple[str, ...] = ()         # properties no history could break (one payload per key: bound)
    store: str = "DynamoDB"               # where the handler keeps its state (a lane of `draw`)
    shrunk: bool = True                   # issue 23: False when check_handler(..., shrink=False) found it
    placed: bool = False                  # found by the exhaustive phase (one event at each point, in order)

    @property
    def holds(self) -> list[str]:
        return [p for p in PROPERTIES if p not in self.untried] if self.broken is None else []

    def __str__(self) -> str:
        """The verdict in plain lines of at most 100 characters (GitHub's width for a notebook's output)."""
        if self.broken is None:
            untried = f" ({', '.join(self.untried)}: not tried)" if self.untried else ""
            return f"{self.handler} holds {', '.join(self.holds)} over {self.histories} histories{untried}"
        lines = textwrap.wrap(f"{self.handler} breaks {self.broken}: {self.sentence}", 100,
                              subsequent_indent="    ")
        lines.append("the first history found placing one event at each point:" if self.placed else
                     "the shortest history found:" if self.shrunk else "the first history found (not shrunk):")
        for n, step in enumerate(self.history, 1):
            lines += textwrap.wrap(f"{n}. {step['said']}", 100, initial_indent="  ", subsequent_indent="       ")
            if step.get("when"):
                lines += textwrap.wrap(f"({step['when']})", 100, initial_indent="       ",
                                       subsequent_indent="        ")
        return "\n".join(lines)

    # --- issue 23: drawing a counterexample (Verdict.draw) ------------------------------------------------------

    def draw(self) -> Any:
        """The shortest history as a swimlane chart, or None (and nothing drawn) when every property held.

        One lane per caller, the handler, where it keeps its state and the payment provider; each step of the
        history is a request sent to the handler, the fault injected into it (orange) and the answer the caller
        got, one event per unit of the x-axis, in the order they happened. The answer that broke the property is
        red; a property broken only at quiescence (money that does not add up) is a red dot at the end. The title
        names the property and says how it broke. The figure is returned, closed in
        pyplot: a notebook cell that ends with ``verdict.draw()`` shows it once, as PNG.
        """
        if self.broken is None:
            return None
        import matplotlib.pyplot as plt

        from .swimlanes import swimlane_figure
        frame, lanes = _history_events(self.history, self.store, self.sentence)
        title = "\n".join([f"{self.handler} breaks {self.broken}", *textwrap.wrap(self.sentence, 100)[:3]])
        fig = swimlane_figure(frame, lanes=lanes, xlabel="events of the history, in order", title=title)
        fig.axes[0].title.set_fontsize(10)
        plt.close(fig)
        return fig


def _record_machine(subject: RecordSubject, search: _Search | None = None) -> type[RuleBasedStateMachine]:
    """Histories of one record's writes: requests in any order, a fault on any write of each, then resends."""
    faults, search = _faults_for(subject), search or _Search(None)

    class Writes(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.said: list[dict[str, Any]] = []
            self.pending: list[tuple] = []          # requests whose last answer was not final, in order
            self.broken, self.skip = False, search.spent(subject.run)
            if not self.skip:
                subject.run += 1
                subject.begin()

        def fail(self, prop: str, sentence: str) -> None:
            self.broken = True
            violation = Violation(prop, sentence, self.said)
            search.offer(violation, subject.run)
            raise violation

        def send(self, request: tuple, fault: tuple | None, what: str) -> str:
            before = subject.read(request)
            subject.arm(fault)
            try:
                answer = subject.call(request)
            except Exception as error:  # noqa: BLE001 - the reader's answer, whatever it is
                answer = error
            finally:
                subject.arm(None)
            after, kind = subject.read(request), subject.kind(answer)
            self.said.append({"said": f"a caller sends {subject.describe(request)}{what} -> {said(answer)}"})
            if kind == SUCCESS and not subject.holds(after, request):
                self.fail(TRUTHFUL, f"the answer {said(answer)} says {subject.describe(request)} was written, "
                                    f"but reading it back finds {subject.show(after)}")
            if kind in NOTHING_WRITTEN and after != before:
                self.fail(TRUTHFUL, f"the answer {said(answer)} says nothing was written, but the item went "
                                    f"from {subject.show(before)} to {subject.show(after)}")
            if request in self.pending:
                self.pending.remove(request)
            if kind not in FINAL:
                self.pending.append(request)
            return kind

        @rule(request=st.sampled_from(subject.requests), fault=faults)
        def write(self, request: tuple, fault: tuple | None) -> None:
            if not self.skip:
                self.send(request, fault, _record_fault_words(fault))

        def teardown(self) -> None:
            while self.pending and not self.broken:
                request = self.pending[0]
                for _ in range(RESENDS_AT_QUIESCENCE):
                    if self.send(request, None, " (resent at the end)") in FINAL:
                        break
                else:
                    self.fail(LIVE, f"{subject.describe(request)} got no final answer in {RESENDS_AT_QUIESCENCE} "
                                    f"resends")

    return Writes


def _payloads(subject: Subject) -> list[tuple[str, int]]:
    """The payloads a history draws: PAYLOADS, and amounts at the design's limits -- one the wallet cannot pay, and
    one just over the largest the design declares it takes (`max_amount`)."""
    limits = [("bob", 2 * subject.opening["bob"])] if subject.at_limits else []
    if subject.at_limits and subject.max_amount is not None:
        limits.append(("alice", subject.max_amount + 1))
    return [*PAYLOADS, *limits]


def _requests(keys_reused: bool, invocations: bool = True,
              payloads_: list[tuple[str, int]] = PAYLOADS) -> st.SearchStrategy:
    """(caller, key, (wallet, amount), invocation); with `keys_reused` False, a key always carries one payload."""
    payloads = st.sampled_from(payloads_)
    invocation = st.sampled_from(INVOCATIONS) if invocations else st.just(INVOCATIONS[0])
    if keys_reused:
        return st.tuples(st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.sampled_from(KEYS), payloads, invocation)
    return st.builds(lambda caller, n, invocation: (caller, KEYS[n], PAYLOADS[n], invocation),
                     st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.integers(0, len(KEYS) - 1), invocation)


steps = st.one_of(st.none(), st.integers(0, 3))


def _faults_for(subject: Subject) -> st.SearchStrategy:
    last = subject.writes - 1          # a fault falls on one of the request's first `writes` writes
    if subject.faults_alike:
        listed = {"lost": [("lost", n) for n in range(last + 1)],
                  "answer": [("answer", n, kind) for n in range(last + 1) for kind in DISTINCT_KINDS],
                  "in progress": [("in progress", n, applied) for n in range(min(2, last) + 1)
                                  for applied in (False, True)],
                  "provider down": [("provider down", 1), ("provider down", 2)]}
        return st.sampled_from([None, *(fault for k in subject.faults for fault in listed[k])])
    kinds = {"lost": st.tuples(st.just("lost"), st.integers(0, last)),
             "answer": st.tuples(st.just("answer"), st.integers(0, last), st.sampled_from(DISTINCT_KINDS)),
             # the same failure answer to the n-th transaction as many times in a row as the handler sends it (its
             # own resends used up), and then no more: a fault that lasts, and ends
             "answers": st.tuples(st.just("answers"), st.integers(0, 1), st.sampled_from(DISTINCT_KINDS)),
             "in progress": st.tuples(st.just("in progress"), st.integers(0, min(2, last)), st.booleans()),  # applied?
             "provider down": st.tuples(st.just("provider down"), st.integers(1, 2))}
    drawn = [*subject.faults, *(["answers"] if "answer" in subject.faults and subject.lasting else [])]
    return st.one_of(st.none(), *(kinds[k] for k in drawn))


def _one_at_a_time(invocations: bool = True, payloads: list[tuple[str, int]] = PAYLOADS) -> st.SearchStrategy:
    """(caller, "next" or "copy", (wallet, amount), invocation): the machine names the key (see `in_turn`)."""
    return st.tuples(st.sampled_from(CALLERS[:1] * 3 + CALLERS[1:]), st.sampled_from(["next", "copy"]),
                     st.sampled_from(payloads),
                     st.sampled_from(INVOCATIONS) if invocations else st.just(INVOCATIONS[0]))


class _Between(Layer):
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


def _machine(subject: Subject, keys_reused: bool, one_at_a_time: bool = False,
             search: _Search | None = None, between: _Between | None = None,
             departed: bool = False) -> type[RuleBasedStateMachine]:
    search, between = search or _Search(None), between or _Between()
    # issue 35: with callers who leave, a history also waits to the provider's edge (its window less the design's
    # margin); without them, the waits drawn are exactly SPANS, as before
    spans = [*SPANS, "provider edge"] if departed and subject.cutoff is not None else SPANS
    faults, payloads = _faults_for(subject), _payloads(subject)
    requests = _requests(keys_reused, payloads_=payloads)
    model = Model(subject.opening, subject.max_amount, subject.guards_overdraft, subject.wallets_of)
    # meanwhile: at the attempt's n-th step another request arrives -- a copy of it (the commonest duplicate: a
    # client's or a queue's resend), or any request -- after the attempt stalled past its lease, just short of
    # it ("edge"), or not; or the attempt is slow there, SLOW_SECONDS at one step (a clock's edge crossed mid-way)
    # The n-th point of an attempt is one of its hook steps or one of its DynamoDB requests, in the order reached:
    # another request runs there to its end before the attempt goes on (the checker owns the wire: no threads).
    stalls = st.sampled_from([False, True, "edge"]) if subject.waits else st.just(False)
    where = (["step", "step"] if subject.crashes else []) + (["call"] if subject.between_calls else [])
    points = st.tuples(st.sampled_from(where or ["step"]), st.integers(0, POINTS - 1))
    during = st.none() if not subject.interleaves or not where else st.one_of(
        st.none(), st.tuples(points, st.just("copy"), stalls),
        st.tuples(points, requests, stalls), st.tuples(points, st.just("slow"), st.none()))

    class History(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            if departed:
                subject.settle()             # what earlier histories left is finished first: not this one's money
            subject.begin()
            self.subject = subject
            self.tag = next(_TAGS)               # this history's keys are new to the table
            self.ops: dict[tuple[str, str], Operation] = {}
            self.closed: list[Operation] = []
            self.said: list[dict[str, Any]] = []
            self.broken, self.epoch = False, 0   # after a retention window, keys are new ones (see `wait`)
            model.closed, model.elsewhere = {}, {}
            self.last = subject.money()

        def money(self) -> dict[str, int]:
            self.last = subject.money()
            return self.last

        def fail(self, violation: Violation, at_last_step: bool = True) -> None:
            self.broken, self.violation = True, violation
            if at_last_step and self.said:          # the answer just judged broke it (issue 23: drawn red)
                self.said[-1]["broken"] = True
            violation.history = list(self.said)
            raise violation

        def call(self, request: tuple, hook: Callable[[str], None], op: Operation | None = None) -> Any:
            caller, key, (wallet, amount), invocation = request
            op = op or self.operation(request)
            op.payloads.add((wallet, amount))   # sent: the key has seen this payload
            op.in_flight += 1
            try:
                answer = subject.call(f"r{self.tag}-{self.epoch}-{key}", {"wallet": wallet, "amount": amount},
                                      invocation, hook, caller)
            except (Exception, Crash) as error:  # noqa: B902 - a crash is what the checker injects
                answer = error
            finally:
                op.in_flight -= 1
            if self.broken:          # a request sent meanwhile (at a hook) broke a property: the handler's
                raise self.violation  # own `except` may have caught the Violation on its way out
            return answer

        def operation(self, request: tuple) -> Operation:
            """The logical operation `request` belongs to: its key's, or a new one once the operation's window
            passed (the request may be a new payment, or a replay) -- unless this very payload is still unfinished
            under it: its work may have begun, and must end once."""
            caller, key, payload, _ = request
            op, now = self.ops.get((caller, key)), subject.clock.now()
            if op is not None and payload not in op.pending and now >= op.first_at + subject.retention:
                self.closed.append(op)
                op = self.ops[(caller, key)] = Operation(caller, key, payload, first_at=now, after=op)
            if op is None:
                op = self.ops[(caller, key)] = Operation(caller, key, payload, first_at=now)
            return op

        def judge(self, request: tuple, answer: Any, moved: dict[str, int], op: Operation | None = None) -> None:
            caller, key, payload, _ = request
            op = op or self.operation(request)
            try:
                check_answer(op, payload, answer, moved, model, [*self.closed, *self.ops.values()])
            except Violation as violation:
                self.fail(violation)
            if (op.after is not None and op.after.successes and len(op.successes) == 1 and not op.moved
                    and op.successes[0][0] == op.after.successes[0][0]
                    and same_answer(op.successes[0][1], op.after.successes[0][1])):   # a replay mark may differ
                op.first_at = op.after.first_at     # a replay past the window: the same operation, its window over

        def note(self, request: tuple, answer: Any, what: str = "", when: str = "", fault: tuple | None = None,
                 crash_at: int | None = None) -> None:
            caller, key, (wallet, amount), invocation = request
            self.said.append({"caller": caller, "key": key, "wallet": wallet, "amount": amount,
                              "invocation": invocation, "what": what, "when": when, "answer": in_words(answer),
                              "said": f"{caller} sends {key} ({amount} from {wallet}) as {invocation}{what}"
                                      f" -> {in_words(answer)}",
                              # issue 23, for Verdict.draw: the fault injected, the step a crash hit
                              "fault": list(fault) if fault else None,
                              "crashed_at": str(answer) if isinstance(answer, Crash) else None,
                              "kind": classify(answer)})

        def aside(self, action: Callable[[], Any]) -> Any:
            """Run `action` (a TTL sweep, a recovery worker) while an attempt is in flight: its calls are no points."""
            between.busy = True
            try:
                return action()
            finally:
                between.busy = False

        def meanwhile(self, request: tuple, when: str, nested_moved: dict[str, int]) -> Any:
            """Another request run to its end while the attempt in flight is at a point (its own calls are no
            points); the money it moved is kept apart from the attempt's (`nested_moved`)."""
            between.busy = True
            try:
                before = self.money()
                answer = self.call(request, lambda step: None)
                moved = {k: v - before[k] for k, v in self.money().items()}
            finally:
                between.busy = False
            for k, v in moved.items():
                nested_moved[k] = nested_moved.get(k, 0) + v
            self.note(request, answer, when=when)
            self.judge(request, answer, moved)
            return answer

        @rule(request=requests, crash_at=steps if subject.crashes else st.none(), fault=faults, during=during)
        def send(self, request: tuple, crash_at: int | None, fault: tuple | None, during: tuple | None) -> None:
            seen, reached, nested_moved, crashed, slowed = [0], {"step": 0, "call": 0, "provider": 0}, {}, [], []
            if getattr(subject, "one_call_per_key", False):   # issue 23: a client makes its own key per call,
                self.calls = getattr(self, "calls", 0) + 1       # so each call is a payment of its own
                request = (request[0], f"{request[1]}.{self.calls}", *request[2:])
            if isinstance(during, tuple) and during[1] == "copy":
                caller, key, payload, invocation = request
                during = (during[0], (caller, key, payload, INVOCATIONS[invocation == INVOCATIONS[0]]), during[2])

            def at_point(where: str) -> None:
                """The attempt reached its next point: a hook step ("at 'claimed'"), a DynamoDB request ("about to
                send its PutItem") or a provider call; `during` names the n-th of one of them."""
                if between.busy:
                    return
                at = "provider" if "provider" in where else "call" if where.startswith("about") else "step"
                n, reached[at] = reached[at], reached[at] + 1
                if isinstance(during, Placement):            # the exhaustive phase: events placed at this point
                    during.reach(self, at, n, where, nested_moved)
                    return
                if during is None or (at, n) != during[0]:
                    return
                if during[1] == "slow":
                    subject.clock.advance(SLOW_SECONDS)              # a slow attempt: seconds pass at this point
                    slowed.append(where)
                elif not nested_moved:
                    stall = {True: subject.lease + 0.6, "edge": subject.lease - 0.5}.get(during[2], 0)
                    subject.clock.advance(stall)                     # stalled past its lease, or just short of it
                    stalled = {True: ", stalled past its lease", "edge": ", stalled to just before its lease ends"}
                    self.meanwhile(during[1], f"while the next one is {where}{stalled.get(during[2], '')}",
                                   nested_moved)

            def hook(step: str) -> None:
                at_point(f"at {step!r}")
                n, seen[0] = seen[0], seen[0] + 1
                if crash_at is not None and n == crash_at:
                    crashed.append(step)
                    raise Crash(step)

            before = self.last
            subject.arm(fault)
            between.point = at_point
            if subject.provider is not None:
                subject.provider.point = at_point
            try:
                answer = self.call(request, hook)
            finally:
                between.point = None
                if subject.provider is not None:
                    subject.provider.point = None
                fired = subject.fired(fault)
                subject.arm(None)
            moved = {k: v - before[k] - nested_moved.get(k, 0) for k, v in self.money().items()}
            fault = fault if fired else None      # a handler may make fewer writes than the fault names
            what = ((f", crashing at {crashed[0]!r}" if crashed else "")
                    + (f", taking {SLOW_SECONDS:.0f} s {slowed[0].replace('about to send', 'before')}" if slowed
                       else "") + _fault_words(fault))
            self.note(request, answer, what, fault=fault, crash_at=crash_at)
            self.judge(request, answer, moved)

        @rule(span=st.sampled_from(spans))
        def wait(self, span: str) -> None:
            if span == "lease":
                subject.clock.advance(subject.lease + 1)
                self.said.append({"said": f"{subject.lease + 1:.0f} s pass (leases run out)", "wait": "lease"})
                return
            if span in ("retention edge", "provider edge"):   # every clock's edge: just before the oldest key's
                window = subject.retention if span == "retention edge" else subject.cutoff   # window ends
                edge = min((op.first_at + window for op in self.ops.values()), default=None)
                if span == "provider edge" and edge is not None:   # past it: a charge is looked up, not asked
                    edge += 2 * EDGE_SECONDS
                if edge is not None and edge - EDGE_SECONDS > subject.clock.now():
                    subject.clock.advance(edge - EDGE_SECONDS - subject.clock.now())
                    whose = "window" if span == "retention edge" else "provider window (less the margin)"
                    if span == "provider edge":
                        self.said.append({"said": f"time passes to {EDGE_SECONDS:.0f} s after the oldest key's {whose}"
                                                  " ends (the same keys are sent again)", "wait": "retention"})
                        if not one_at_a_time and not getattr(subject, "one_call_per_key", False):
                            self.resend_all(f" (resent {EDGE_SECONDS:.0f} s after its {whose} ends)")
                        return
                    self.said.append({"said": f"time passes to {EDGE_SECONDS:.0f} s before the oldest key's {whose} "
                                              "ends (the same keys are sent again)", "wait": "retention"})
                    # old keys resent across the edge, just before it and just after (not where no key can be resent:
                    # one request at a time, or a client that makes its own key for each call)
                    if not one_at_a_time and not getattr(subject, "one_call_per_key", False):
                        self.resend_all(f" (resent {EDGE_SECONDS:.0f} s before its {whose} ends)")
                        subject.clock.advance(2 * EDGE_SECONDS)
                        self.resend_all(f" (resent {EDGE_SECONDS:.0f} s after its {whose} ends)")
                return
            self.quiesce()
            subject.clock.advance(subject.retention + 3600)
            self.closed += self.ops.values()
            self.ops, self.epoch = {}, self.epoch + 1
            # A design may forget a key after its window or remember it longer: both are right, so the keys sent
            # from now on are new ones, and what expired (records, markers, the provider's keys) is only in the way.
            self.said.append({"said": "the retention window passes; the keys sent from now on are new ones",
                              "wait": "retention"})

        def change(self, what: str, wallet: str, amount: int = 5, when: str = "") -> None:
            """The world changing: a wallet closed, reopened, paid from by someone else, or topped up."""
            if getattr(self, "skip", False):
                return
            was_closed = wallet in model.closed
            if (what == "close" and was_closed or what == "reopen" and not was_closed
                    or what in ("elsewhere", "topup") and was_closed):
                return                                       # nothing to change (before issue 44, "elsewhere"
                                                             # never changed anything: this test always held)
            amount = subject.change(what, wallet, amount)
            if what == "close":
                model.closed[wallet] = subject.clock.now()
            elif what == "reopen":
                del model.closed[wallet]
            else:
                model.elsewhere[wallet] = model.elsewhere.get(wallet, 0) + (amount if what == "elsewhere" else -amount)
            self.money()
            self.said.append({"said": world_words(what, wallet, amount) + (f" ({when})" if when else ""),
                              "wait": "world", "event": what})

        if subject.world:        # a rule only where the subject can change the world around its handler
            change = rule(what=st.sampled_from(["close", "reopen", "elsewhere"]),
                          wallet=st.sampled_from(list(WALLETS)))(change)

        def resend_all(self, why: str) -> None:
            """Every key of the history sent once more with its first payload, as a late duplicate would be."""
            for (caller, key), op in list(self.ops.items()):
                if self.broken:
                    return
                request, before = (caller, key, op.first, "edge"), self.money()
                answer = self.call(request, lambda step: None)
                self.note(request, answer, why)
                self.judge(request, answer, {k: v - before[k] for k, v in self.money().items()})

        def quiesce(self) -> None:
            subject.clock.advance(subject.lease + 1)
            subject.drain()
            self.money()
            if departed:
                self.recover()
                return
            for op in [*(o for o in self.closed if o.pending), *self.ops.values()]:
                for payload in sorted(op.pending):           # every client without a final answer sends again
                    self.drive(op.caller, op.key, op, payload)
            subject.drain()
            money = self.money()
            try:
                check_money([*self.closed, *self.ops.values()], {w: money[f"{w} debited"] for w in WALLETS},
                            {w: money[f"{w} charged"] for w in WALLETS} if subject.provider else None)
            except Violation as violation:
                self.fail(violation, at_last_step=False)     # money at quiescence: no one answer broke it

        def recover(self) -> None:
            """Issue 35: the callers still without a final answer have left, and nobody resends for them. Past every
            lease and the recovery worker's grace, the subject's worker runs, twice (the second run must move no
            money); then no payment may be half done (per wallet, debited = charged); then each caller comes back
            once with its request and must get a final answer; then the money must match the answers (*once*)."""
            subject.clock.advance(subject.grace + 1)
            ran = subject.recover()
            subject.drain()
            self.said.append({"said": "the callers without a final answer have left; " + (
                "the recovery worker runs, twice" if ran else "there is no recovery worker"), "wait": "recovery"})
            money = self.money()
            if ran:
                subject.recover()
                subject.drain()
                if self.money() != money:
                    self.fail(Violation(ONCE, "the recovery worker's second run moved money"), at_last_step=False)
            if subject.provider is not None:
                for w in WALLETS:
                    d, c = money[f"{w} debited"], money[f"{w} charged"]
                    if d != c:
                        self.fail(Violation(ONCE, f"wallet {w!r}: debited {d}, charged {c} once its callers had left: "
                                                  "a payment left half done, with nobody to resend it"),
                                  at_last_step=False)
            for op in [*(o for o in self.closed if o.pending), *self.ops.values()]:
                for payload in sorted(op.pending):           # each caller comes back once, after the worker
                    request, before = (op.caller, op.key, payload, "returns"), self.money()
                    answer = self.call(request, lambda step: None, op)
                    self.note(request, answer, " (its caller comes back once, after the recovery worker)")
                    self.judge(request, answer, {k: v - before[k] for k, v in self.money().items()}, op)
                    if _kind(answer) not in FINAL:
                        self.fail(Violation(LIVE, f"{op.caller}'s key {op.key!r} ({payload[1]} from {payload[0]!r}) "
                                                  f"came back after the recovery worker and got {in_words(answer)}, "
                                                  "not a final answer"))
            subject.drain()
            self.window_rule()
            money = self.money()
            try:
                check_money([*self.closed, *self.ops.values()], {w: money[f"{w} debited"] for w in WALLETS},
                            {w: money[f"{w} charged"] for w in WALLETS} if subject.provider else None)
            except Violation as violation:
                self.fail(violation, at_last_step=False)

        def window_rule(self) -> None:
            """Issue 35, step 2: no charge request with a key whose first charge is older than the provider's window
            less the design's margin (`cutoff`): past it the provider may forget the key and charge again, so the
            charge is looked up instead."""
            provider = subject.provider
            if provider is None or subject.cutoff is None:
                return
            first: dict[str, float] = {}
            for charge in provider.made:
                first.setdefault(charge.idempotency_key, charge.charged_at)
            for key, at in provider.asked:
                if key in first and at - first[key] >= subject.cutoff:
                    self.fail(Violation(ONCE, f"a charge was asked again with provider key {key!r} "
                                              f"{(at - first[key]) / 3600:.1f} h after its first charge, past the "
                                              "provider's window less the margin: it may have forgotten the key and "
                                              "charge twice (look the charge up instead)"), at_last_step=False)

        def drive(self, caller: str, key: str, op: Operation, payload: tuple[str, int],
                  why: str = " (resent at quiescence)") -> None:
            request = (caller, key, payload, "quiesce")
            if getattr(subject, "one_call_per_key", False):      # issue 23: a client's call cannot be resent
                self.fail(Violation(LIVE, f"{caller}'s payment {key!r} ({payload[1]} from {payload[0]!r}) got no "
                                          "final answer: the client gave up where a resend would have finished it"),
                          at_last_step=False)
            for _ in range(RESENDS_AT_QUIESCENCE):
                before = self.last
                answer = self.call(request, lambda step: None, op)
                self.note(request, answer, why)
                self.judge(request, answer, {k: v - before[k] for k, v in self.money().items()}, op)
                if _kind(answer) in FINAL:
                    return
                subject.clock.advance(subject.lease + 1)
            self.fail(Violation(LIVE, f"{caller}'s key {key!r} ({payload[1]} from {payload[0]!r}) got no final "
                                      f"answer in {RESENDS_AT_QUIESCENCE} resends after its lease ran out"))

        def teardown(self) -> None:
            if not self.broken:
                self.quiesce()


    History.base = History           # the exhaustive phase (helpers.explorer) sends its histories through it
    # What narrows or budgets the search is a subclass (the histories come from the fixed SEED, not the source).
    focused = (one_at_a_time or search.limit is not None or not subject.invocations or not subject.waits
               or not subject.crashes)
    if not focused:
        return History
    narrowed = (_one_at_a_time(subject.invocations, payloads) if one_at_a_time
                else _requests(keys_reused, subject.invocations, payloads))
    meanwhile = st.none() if one_at_a_time else during
    crash_steps = steps if subject.crashes else st.none()

    class Focused(History):
        """History, narrowed and budgeted: one request at a time (`one_at_a_time`), no crash where the handler
        has no hook, no invocation ID or wait where it means nothing, and a budget for shrinking (`search`)."""

        def __init__(self) -> None:
            self.skip = search.spent(subject.run)        # the shrinking budget is spent: this history passes
            if self.skip:
                RuleBasedStateMachine.__init__(self)
                self.broken = False
                return
            super().__init__()
            self.current: tuple[str, str, tuple[str, int]] | None = None   # one at a time: the request in hand
            self.keys = 0                                                   # one at a time: keys sent so far

        def fail(self, violation: Violation, at_last_step: bool = True) -> None:
            if at_last_step and self.said:
                self.said[-1]["broken"] = True
            violation.history = list(self.said)
            search.offer(violation, subject.run)
            History.fail(self, violation, at_last_step)

        def note(self, request: tuple, answer: Any, what: str = "", when: str = "", fault: tuple | None = None,
                 crash_at: int | None = None) -> None:
            History.note(self, request, answer, what, when, fault, crash_at)
            caller, key, (wallet, amount), invocation = request
            as_, words = f" as {invocation}" if subject.invocations else "", subject.words(answer)
            self.said[-1].update(answer=words,
                                 said=f"{caller} sends {key} ({amount} from {wallet}){as_}{what} -> {words}")

        def in_turn(self, drawn: tuple) -> tuple:
            """One request at a time: a copy of the request in hand, or the next one -- after the one in hand got
            a final answer (resent until then), and never to be sent again (so no older key follows a newer)."""
            caller, which, payload, invocation = drawn
            if which == "copy" and self.current is not None:
                caller, key, first = self.current
                return caller, key, payload if keys_reused else first, invocation
            if self.current is not None:
                caller_, key_, _ = self.current
                op = self.ops[(caller_, key_)]
                for pending in sorted(op.pending):
                    self.drive(caller_, key_, op, pending, " (resent before the next request)")
            self.keys += 1
            self.current = (caller, f"k{self.keys}", payload)
            return caller, f"k{self.keys}", payload, invocation

        @rule(request=narrowed, crash_at=crash_steps, fault=faults, during=meanwhile)
        def send(self, request: tuple, crash_at: int | None, fault: tuple | None, during: tuple | None) -> None:
            if self.skip:
                return
            History.send(self, self.in_turn(request) if one_at_a_time else request, crash_at, fault, during)

        def wait(self, span: str) -> None:
            if self.skip:
                return
            History.wait(self, span)
            if span == "retention":
                self.current = None                      # the keys sent from now on are new ones

        if subject.waits:            # a rule only where time matters (leases, retention windows)
            wait = rule(span=st.sampled_from(spans))(wait)

        def teardown(self) -> None:
            if not self.skip:
                History.teardown(self)

    return Focused


def _first_violation(group: BaseExceptionGroup) -> Violation | None:
    for error in group.exceptions:
        found = _first_violation(error) if isinstance(error, BaseExceptionGroup) else error
        if isinstance(found, Violation):
            return found
    return None


def _kind(answer: Any) -> str:
    return classify(answer)


def _record_fault_words(fault: tuple | None) -> str:
    if fault is None:
        return ""
    write = "its write" if fault[1] == 0 else f"write {fault[1]}"
    return f", {write}'s answer lost" if fault[0] == "lost" else f", DynamoDB answers {write} with {fault[2]}"


def _fault_words(fault: tuple | None) -> str:
    if fault is None:
        return ""
    if fault[0] == "provider down":
        return f", the provider down for {fault[1]} request(s)"
    if fault[0] == "answer":
        return f", DynamoDB answers write {fault[1]} with {fault[2]}"
    if fault[0] == "answers":
        return f", DynamoDB answers transaction {fault[1]} with {fault[2]}, and each resend of it"
    if fault[0] == "lost":
        return f", write {fault[1]}'s answer lost"
    original = "its original commits" if fault[2] else "not applied"
    return f", transaction {fault[1]} answered TransactionInProgress ({original})"


# --- issue 23: a history as swimlane events (Verdict.draw) ---------------------------------------------------------

def _history_events(history: list[dict[str, Any]], store: str, sentence: str) -> tuple[Any, list[str]]:
    """The events of `history` (a Verdict's) on lanes -- the callers, the handler, `store`, the provider -- one
    per unit of x, in the order they happened: a request sent while another was in flight (its entry says
    `when`) is drawn between that one's sending and its answer."""
    from .clock import VirtualClock
    from .swimlanes import Timeline

    timeline, colors, used = Timeline(VirtualClock(start=0)), [], set()

    def event(lane: str, text: str, color: str = "black", to: str | None = None) -> None:
        timeline.record(lane, text, to=to, at=len(colors))
        colors.append(color)
        used.add(lane)

    def sent(step: dict[str, Any]) -> None:
        how = "resent at quiescence" if step["invocation"] == "quiesce" else step["invocation"]
        event(step["caller"], f"{step['key']}: {step['amount']} {step['wallet']} ({how})", to="handler")
        fault = step.get("fault")
        if fault:
            kind = fault[0]
            event("provider" if kind == "provider down" else store,
                  {"lost": f"write {fault[1]}: answer lost", "answer": f"write {fault[1]}: {fault[-1]}",
                   "answers": f"transaction {fault[1]}: {fault[-1]}, resends too",
                   "in progress": f"transaction {fault[1]}: in progress",
                   "provider down": f"down for {fault[1]}"}[kind], "tab:orange")

    def answered(step: dict[str, Any]) -> None:
        if step.get("crashed_at"):
            event("handler", f"crash at {step['crashed_at']}", "tab:orange")
        event("handler", step["answer"], "tab:red" if step.get("broken") else "black", to=step["caller"])

    n = 0
    while n < len(history):
        step = history[n]
        if "caller" not in step:                                    # time passing: a lease, a retention window
            event("handler", step["said"].split(";")[0].replace(" (leases run out)", ": leases run out"), "0.4")
        elif step.get("when") and n + 1 < len(history) and "caller" in history[n + 1]:
            outer = history[n + 1]                                  # the request in flight when this one came
            sent(outer)
            event("handler", step["when"].replace("while the next one is ", "in flight, "), "0.4")
            sent(step)
            answered(step)
            answered(outer)
            n += 1
        else:
            sent(step)
            answered(step)
        n += 1
    if not any(step.get("broken") for step in history):             # broken at quiescence: the money
        event(store, textwrap.shorten(f"at quiescence: {sentence}", 70, placeholder="..."), "tab:red")
    frame = timeline.frame()
    frame["color"] = colors
    callers = sorted({step["caller"] for step in history if "caller" in step})
    return frame, [*callers, "handler", *(lane for lane in (store, "provider") if lane in used)]


def check_handler(handler: Callable[..., Any] | Subject | RecordSubject, *, histories: int = 100, steps: int = 6,
                  name: str | None = None, seed_search: bool = False, shrink: bool | int = True,
                  keys_reused: bool = True, one_at_a_time: bool = False, departed: bool = False,
                  explore_first: bool | None = None) -> Verdict:
    """Send `handler` `histories` generated histories (deterministic unless `seed_search`); return the Verdict.

    With `shrink=False` the first failing history is returned as found, not shortened (faster); with a number,
    shrinking may spend that many more histories, and the shortest failing one found by then is returned (an
    exercise's budget of seconds). With
    `keys_reused=False` no caller ever sends one key with two payloads (for designs that give up *bound* on
    purpose: what else do they hold?). With `one_at_a_time=True` the callers send one request at a time: each
    is resent until it gets a final answer before the next is sent, and a key, once another was sent after it,
    is never sent again -- no interleaving, and no old key after a newer one (for designs that remember only
    the last key, `last_request_id`, which give up *once* under ABA on purpose: what do they hold without it?).
    A `RecordSubject` (a write that is not money) is held to *truthful* and *live* only; the key options do
    not apply to it.

    With `departed=True` (issue 35) a caller without a final answer has left: at quiescence nobody resends for it.
    Time passes past every lease and the recovery worker's grace, the handler's recovery worker runs twice
    (`recover_unfinished` in the handler's module: `Subject.recover`), and *once* must hold then -- no payment half
    done -- and again after each caller came back once with its request, which must get a final answer. The
    histories also wait to the provider's edge (`PROVIDER_WINDOW - MARGIN` in the handler's module). Without it,
    the histories and the quiescence are as they always were.

    Before the random histories, an exhaustive phase (`helpers.explorer`) places each event of the catalogue
    (`helpers.catalogue`) at each point of one attempt, and sends amounts at the model's edges -- all of them
    from `histories=100` on, the first `histories` below that -- for a 06-shaped handler (a `Subject` whose
    `explores` is true), unless
    `explore_first=False` or one request at a time.
    """
    if not callable(handler) and not isinstance(handler, (Subject, RecordSubject)):
        raise TypeError(f"check_handler needs a handler function, got {type(handler).__name__}")
    if isinstance(histories, bool) or not isinstance(histories, int) or histories < 1:
        raise ValueError(f"histories must be a whole number >= 1, got {histories!r}")
    subject = handler if isinstance(handler, (Subject, RecordSubject)) else Subject(handler, name)
    record = isinstance(subject, RecordSubject)
    search = _Search(None if isinstance(shrink, bool) else shrink)
    between = _Between()
    machine = (_record_machine(subject, search) if record else
               _machine(subject, keys_reused, one_at_a_time, search, between, departed))
    subject.run = 0
    if not seed_search:    # issue 23: a fixed seed, not derandomize's digest of the machine's source, so the
        machine = seed(SEED)(machine)   # histories (and the notebooks' outputs) stay put when the checker is edited
    config = settings(max_examples=histories, stateful_step_count=steps, deadline=None, derandomize=not seed_search,
                      database=None, verbosity=Verbosity.quiet, report_multiple_bugs=False,
                      suppress_health_check=list(HealthCheck),
                      phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate])
    with subject.installed(), without_local_constants():   # the histories do not hang on the project's literals
        if not record and subject.interleaves and subject.between_calls:
            for client in subject.clients:
                between.install(client)
        try:
            # a subject's own class says whether it explores: a subclass made elsewhere (an exercise's) opts in itself
            exploring = explore_first if explore_first is not None else vars(type(subject)).get("explores", False)
            limit = None if histories >= EXPLORE_ALL else histories     # a small budget: the first placements
            found = (explore(machine.base, subject, keys_reused, limit=limit)
                     if exploring and not record and not one_at_a_time else None)
            if found is not None:
                return _found(subject, found, False, placed=True)
            run_state_machine_as_test(machine, settings=config)
        except (Violation, Flaky, BaseExceptionGroup) as error:
            # Flaky: the budget cut shrinking short (the final replay of the shortest history was skipped), or
            # hypothesis could not replay a failure exactly: the history that failed is still a real counterexample
            violation = error if isinstance(error, Violation) else search.best or (
                _first_violation(error) if isinstance(error, BaseExceptionGroup) else None)
            if violation is None:
                raise
            return _found(subject, violation, shrink)
        finally:
            between.uninstall()
    return Verdict(subject.name, subject.run,
                   untried=(ONCE, BOUND, USEFUL) if record else () if keys_reused else (BOUND,),
                   store=getattr(subject, "store", "DynamoDB"))


def _found(subject: Any, violation: Violation, shrink: bool | int, placed: bool = False) -> Verdict:
    return Verdict(subject.name, subject.run, violation.prop, violation.sentence, violation.history,
                   store=getattr(subject, "store", "DynamoDB"), shrunk=shrink is not False, placed=placed)
