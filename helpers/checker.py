"""One checker for every payment handler: generated histories, held to `helpers.specification`.

`check_handler(pay)` takes a handler shaped like notebook 06's --
``pay(key, payload, invocation, hook=..., caller=...)`` answering ``{"status": ..., "body": ...}`` --
and sends it histories: first a small exhaustive phase (`helpers.explorer`: each event of the catalogue,
`helpers.catalogue`, at each point of an attempt, and values at the model's edges), then histories that
hypothesis generates and shrinks (`helpers.machine`: requests, faults, another request at any point of an attempt
in flight, the clock to either side of every clock, the world changing). After each history it quiesces (leases
over, each key's first request sent again until it gets a final answer) and `helpers.specification` judges it:
every judgment is there. The answer is a `Verdict`: the properties held, or the first broken one with the
shortest history the search found, as data (`helpers.history`: each step a record with one wording).

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
    >>> verdict.broken, verdict.placed, verdict.history[0].event, verdict.history[1].caller
    ('once', True, 'lease after', 'shop-a')
    >>> verdict.draw()                     # the same history as a swimlane chart (None when every property held)
    <Figure size ... with 1 Axes>
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from .explorer import explore
from .fidelity.search_constants import without_local_constants
from .history import Step, history_events, line
from .machine import Points, Search, machine_for, record_machine_for
from .specification import BOUND, ONCE, PROPERTIES, USEFUL, Violation
from .subjects import RecordSubject, Subject

EXPLORE_ALL = 100   # from this budget on (the reader's default), the exhaustive phase sends every placement
SEED = 5            # the histories a check sends, unless `seed_search` (issue 23: see check_handler)


@dataclass
class Verdict:
    """What the checker found: `broken` is None when every property held over `histories` histories."""

    handler: str
    histories: int
    broken: str | None = None
    sentence: str = ""
    history: list[Step] = field(default_factory=list)
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
            lines += line(n, step)
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
        frame, lanes = history_events(self.history, self.store, self.sentence)
        title = "\n".join([f"{self.handler} breaks {self.broken}", *textwrap.wrap(self.sentence, 100)[:3]])
        fig = swimlane_figure(frame, lanes=lanes, xlabel="events of the history, in order", title=title)
        fig.axes[0].title.set_fontsize(10)
        plt.close(fig)
        return fig


def _first_violation(group: BaseExceptionGroup) -> Violation | None:
    for error in group.exceptions:
        found = _first_violation(error) if isinstance(error, BaseExceptionGroup) else error
        if isinstance(found, Violation):
            return found
    return None


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
    from `histories=100` on, the first `histories` below that (and at most the subject's `explore_budget`) --
    for every subject whose class declares `explores` (all but a record's; an exercise's subject keeps the random
    histories only), unless `explore_first=False` or one request at a time.
    """
    if not callable(handler) and not isinstance(handler, (Subject, RecordSubject)):
        raise TypeError(f"check_handler needs a handler function, got {type(handler).__name__}")
    if isinstance(histories, bool) or not isinstance(histories, int) or histories < 1:
        raise ValueError(f"histories must be a whole number >= 1, got {histories!r}")
    subject = handler if isinstance(handler, (Subject, RecordSubject)) else Subject(handler, name)
    record = isinstance(subject, RecordSubject)
    search = Search(None if isinstance(shrink, bool) else shrink)
    points = Points()
    machine = (record_machine_for(subject, search) if record else
               machine_for(subject, keys_reused, one_at_a_time, search, points, departed))
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
                points.install(client)
        try:
            # a subject's own class says whether it explores: a subclass made elsewhere (an exercise's) opts in itself
            exploring = explore_first if explore_first is not None else vars(type(subject)).get("explores", False)
            limit = None if histories >= EXPLORE_ALL else histories     # a small budget: the first placements
            found = (explore(machine, subject, keys_reused, limit=limit)
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
            points.uninstall()
    return Verdict(subject.name, subject.run,
                   untried=(ONCE, BOUND, USEFUL) if record else () if keys_reused else (BOUND,),
                   store=getattr(subject, "store", "DynamoDB"))


def _found(subject: Any, violation: Violation, shrink: bool | int, placed: bool = False) -> Verdict:
    return Verdict(subject.name, subject.run, violation.prop, violation.sentence, violation.history,
                   store=getattr(subject, "store", "DynamoDB"), shrunk=shrink is not False, placed=placed)
