"""Notebook 10's exercise: an outbox worker that charges every payment exactly once.

The reader writes `my_deliver(conn, provider)`: deliver **one** undelivered row of notebook 10's
``outbox`` table -- charge the provider, record ``charge_id`` and ``delivered_at`` -- and return
True, or return False when nothing is pending. `conn` is a psycopg autocommit connection (the
reader sends BEGIN / COMMIT), `provider` a `PaymentProvider`.

The checker works in a schema of its own (the notebook's tables are not touched) and plays:
an outbox drained by one worker; a worker that dies just before the provider is called, and
one that dies just after the provider charged (its connection ended on the server, as a dead
process's is); a provider that fails; eight workers at once; an empty outbox. After each, a
healthy worker drains what is left, and every payment must be charged exactly once and
recorded. The first failure is the verdict: one counterexample, in lines of at most 100 chars.

When those pass, the worker is held to the specification (`helpers/specification.py`): notebook 10's
own `pay` (its namespace: the worker's module globals, or notebook 10's lesson cells loaded here)
takes generated requests (`helpers.subjects.OutboxSubject`) with the provider down for a request or
two, and its outbox is drained by the reader's worker instead of the notebook's -- rounds of calls
until it returns False, a raise leaving the row for the next round. Per wallet, the money debited,
the money charged and the amounts answered must agree; a worker that marks a row delivered
whose charge failed gets the shortest history that loses the payment. (Workers that die mid-way,
and eight at once, are the scenarios above: the generated histories do not crash the worker.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..clock import VirtualClock
from ..concurrency import race
from ..postgres import Postgres, postgres
from ..services.payment_provider import PaymentProvider
from .specified import SHRINK, Specification, namespace_of
from .verdict import Counterexample, Verdict, answer, raised, verdict

Deliver = Callable[[Any, PaymentProvider], Any]
HISTORIES = 20               # generated histories for notebook 10's pay drained by the reader's worker
STAGE_ONE = 6                # one-request histories tried first (a worker's mistake shows in one, within 2 s)
ROUNDS, CALLS_PER_ROUND = 4, 12
INJECTED = "the provider down"

OUTBOX = """
CREATE TABLE outbox (
    outbox_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id          text NOT NULL,
    idempotency_key  text NOT NULL,
    wallet_id        text NOT NULL,
    amount           bigint NOT NULL,
    charge_id        text,
    delivered_at     bigint
)
"""


class WorkerDied(BaseException):
    """The worker's process dies here: no except-clause runs, its connection ends."""


class ProviderDown(ConnectionError):
    """The provider could not be reached; nothing was charged."""


class Provider(PaymentProvider):
    """A `PaymentProvider` that, once, dies before or after charging, or fails."""

    def __init__(self, clock: VirtualClock, fault: str | None = None) -> None:
        super().__init__(clock)
        self.fault = fault

    def charge(self, wallet_id: str, amount: int, idempotency_key: str) -> Any:
        fault, self.fault = self.fault, None
        if fault == "die before":
            raise WorkerDied("before the provider call")
        if fault == "fail":
            raise ProviderDown("the provider did not answer; nothing was charged")
        made = super().charge(wallet_id, amount, idempotency_key)
        if fault == "die after":
            raise WorkerDied("after the provider charged")
        return made


class _Run:
    """One check's outbox, in the checker's own schema."""

    def __init__(self, pg: Postgres, schema: str, deliver: Deliver, payments: int) -> None:
        self.pg, self.schema, self.deliver = pg, schema, deliver
        self.clock = VirtualClock()
        self.payments = payments
        with pg.connect(schema=schema, counted=False) as conn:
            conn.execute("DROP TABLE IF EXISTS outbox")
            conn.execute(OUTBOX)
            for i in range(1, payments + 1):
                conn.execute("INSERT INTO outbox (user_id, idempotency_key, wallet_id, amount) "
                             "VALUES (%s, %s, %s, %s)", ("alice", f"key-{i}", f"wallet-{i}", 10 * i))

    def once(self, provider: PaymentProvider) -> Any:
        """One call of the reader's worker on a new connection; its answer, WorkerDied, or its error."""
        conn = self.pg.connect(schema=self.schema, counted=False)
        try:
            result = self.deliver(conn, provider)
        except WorkerDied as died:
            self.pg.terminate(conn)                     # the process is gone, and its connection with it
            return died
        except Exception as error:  # the reader's code: reported, not propagated
            result = error
        conn.close()
        return result

    def drain(self, provider: PaymentProvider, story: str) -> None:
        """A healthy worker runs until it says nothing is pending (a bounded number of times)."""
        for _ in range(self.payments + 3):
            result = self.once(provider)
            if result is False:
                return
            if isinstance(result, BaseException):
                raise Counterexample(f"{story}\nthen a healthy worker raised {raised(result)}")
        rows = self.rows()
        pending = sum(1 for row in rows if row[4] is None)
        calls = self.payments + 3
        state = (f"{pending} of its {len(rows)} rows still have no delivered_at, so they are still pending"
                 if pending else f"all {len(rows)} rows are delivered")
        raise Counterexample(f"{story}\nthen a healthy worker never returned False: it answered {result!r} "
                             f"{calls} times,\nand {state}.\nTrue means one row delivered "
                             "(charged, charge_id and delivered_at recorded); False, nothing pending.")

    def rows(self) -> list[tuple[Any, ...]]:
        with self.pg.connect(schema=self.schema, counted=False) as conn:
            return conn.execute("SELECT outbox_id, wallet_id, amount, charge_id, delivered_at "
                                "FROM outbox ORDER BY outbox_id").fetchall()

    def verify(self, provider: PaymentProvider, story: str) -> None:
        """Every payment charged exactly once by the provider, and its row recording that charge."""
        made: dict[tuple[str, int], list[str]] = {}
        for charge in provider.made:
            made.setdefault((charge.wallet_id, charge.amount), []).append(charge.charge_id)
        for outbox_id, wallet_id, amount, charge_id, delivered_at in self.rows():
            charges = made.get((wallet_id, amount), [])
            what = f"outbox row {outbox_id} ({wallet_id}, {amount})"
            if not charges:
                state = "is marked delivered" if delivered_at is not None else "is still pending"
                raise Counterexample(f"{story}\nexpected every payment charged once and recorded, but\n"
                                     f"{what} {state} and was never charged: that payment is lost.")
            if len(charges) > 1:
                raise Counterexample(f"{story}\nexpected every payment charged once, but\n"
                                     f"{what} was charged {len(charges)} times: {', '.join(charges)}.")
            if delivered_at is None or charge_id != charges[0]:
                raise Counterexample(f"{story}\nexpected every row to record its charge, but\n{what} was "
                                     f"charged ({charges[0]}) and its row says\ncharge_id={charge_id!r}, "
                                     f"delivered_at={delivered_at!r}.")


def check_outbox_worker(deliver: Deliver, *, pg: Postgres | None = None, workers: int = 8,
                        histories: int = HISTORIES) -> Verdict:
    """Does `deliver(conn, provider)` charge every outbox payment exactly once, whatever fails? A `Verdict`."""
    pg = pg or postgres()
    schema = pg.fresh_schema(f"exercise_10_{os.getpid()}")

    def one_worker() -> None:
        run, provider = _Run(pg, schema, deliver, 3), Provider(VirtualClock())
        run.drain(provider, "Three payments in the outbox; one worker ran until it returned False;")
        run.verify(provider, "Three payments in the outbox; one worker ran until it returned False;")

    def dies(fault: str, words: str) -> Callable[[], None]:
        def check() -> None:
            run, provider = _Run(pg, schema, deliver, 2), Provider(VirtualClock(), fault)
            story = f"Two payments in the outbox; the first worker\n{words}"
            result = run.once(provider)
            if result is False:
                raise Counterexample(f"{story}\nbut it returned False with two payments pending.")
            run.drain(provider, story)
            run.verify(provider, story)
        return check

    def many_workers() -> None:
        run, provider = _Run(pg, schema, deliver, 2 * workers), Provider(VirtualClock())
        story = f"{2 * workers} payments in the outbox; {workers} workers ran at once until each returned False;"
        assert len(story) <= 100

        def drain_alone(_: int) -> Any:
            return answer(lambda: run.drain(provider, story))
        for result in race(drain_alone, threads=workers):
            if isinstance(result, Counterexample):
                raise result
            if isinstance(result, BaseException):
                raise Counterexample(f"{story}\na worker raised {raised(result)}")
        run.verify(provider, story)

    def empty() -> None:
        run, provider = _Run(pg, schema, deliver, 0), Provider(VirtualClock())
        result = run.once(provider)
        if result is not False or provider.calls:
            raise Counterexample(f"An empty outbox: expected False and no provider call,\ngot {result!r} "
                                 f"and {provider.calls} provider call(s).")

    try:
        found = verdict(
            [one_worker,
             dies("die before", "died just before the provider call (its connection ended);"),
             dies("die after", "died just after the provider charged (its connection ended);"),
             dies("fail", "found the provider down (ProviderDown raised, nothing charged);"),
             many_workers, empty],
            passed="every payment charged exactly once and recorded -- after a worker died before and after the "
                   "charge, a provider failure, and eight workers at once.")
    finally:
        with pg.connect(schema="public", counted=False) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    if not found.passed:
        return found
    held = Specification(lambda: worker_held(deliver, histories=histories), injected=INJECTED)
    return verdict([held], passed=lambda: f"{found.message} {held.passed()}")


# --- issue 23: notebook 10's pay, its outbox drained by the reader's worker, held to the specification ----------

def lesson_namespace(deliver: Deliver) -> dict[str, Any]:
    """Notebook 10's namespace: the worker's own module globals if they hold 10's `pay`, else 10's lesson cells
    loaded here (once per process)."""
    return namespace_of(deliver, "10_postgres_shaped.ipynb",
                        ("pay", "create_tables", "open_account", "balance", "connect", "pg"))


def worker_held(deliver: Deliver, *, histories: int = HISTORIES) -> Any:
    """10's `pay` with its outbox drained by `deliver(conn, provider)`, held to the specification over
    `histories` generated histories: a `helpers.checker.Verdict`."""
    from ..checker import check_handler
    from ..subjects import OutboxSubject

    class WorkerSubject(OutboxSubject):
        def drain(self) -> None:
            for _ in range(ROUNDS):                      # a raise leaves its row for the next round
                for _ in range(CALLS_PER_ROUND):
                    conn = self.ns["connect"]()
                    try:
                        result = deliver(conn, self.provider)
                    except Exception:  # the reader's code: the row stays pending
                        result = None
                    finally:
                        conn.close()
                    if result is not True:
                        break
                if result is False:
                    return

    subject = WorkerSubject(lesson_namespace(deliver), name="10's pay with your worker")
    for steps, count in ((1, STAGE_ONE), (4, histories)):      # one-request histories first: a fault shown alone
        held = check_handler(subject, histories=count, steps=steps, shrink=SHRINK)
        if held.broken is not None:
            break
    return held
