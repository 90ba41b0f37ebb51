"""Notebook 01's exercise: a status update that refuses a late, older write.

The reader writes `update(table, order_id, status, seq)`. Each status update
carries the sender's event number `seq` (every order starts ``placed``, seq 1).
The update returns "applied" or "already applied" (its own earlier attempt
committed), and refuses an update older than what the order holds by raising
(the notebook's `StaleUpdate`), writing nothing. The checker sends updates
under seeded lost responses, the late-retry order, out-of-order delivery,
a newer update landing between the update's read and its write (run on the
wire, `helpers.wire.Between`: the same on every run and every backend),
concurrent updates, and bad input (an order that does not exist included:
LookupError, nothing written). Then it holds the update to the *truthful*
and *live* parts of the collection's specification (`helpers.checker`):
generated histories of updates with lost responses and DynamoDB's failure
answers injected, where "applied" and "already applied" must find the order
holding that update (read back), `StaleUpdate` must find it untouched, and an
update sent again must get one of those answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import Backend, connect
from ..concurrency import race
from ..faults import LostResponses
from ..tables import fresh_table, read_item
from ..wire import Between
from .specified import ItemSubject, Specification
from .verdict import Counterexample, Verdict, answer, expect_bad_input, expect_not_found, raised, resend, said, verdict

Update = Callable[[Any, str, str, int], Any]
TABLE, ORDER, STATUSES, COPIES = "exercise-01", "order-1", ("placed", "packed", "shipped"), 16


class _Updates(ItemSubject):
    """The reader's update as the checker's subject: one order, updates drawn from three."""

    requests = (("packed", 2), ("shipped", 3), ("placed", 1))
    refusing = ("StaleUpdate",)
    fields, nothing = ("status", "seq"), "no order"

    def begin(self) -> None:
        self.table.put_item(Item={"pk": ORDER, "status": "placed", "seq": 1})

    def call(self, request: tuple) -> Any:
        return self.write(self.table, ORDER, *request)

    def key(self, request: tuple) -> dict[str, Any]:
        return {"pk": ORDER}

    def describe(self, values: tuple) -> str:
        return f"{values[0]} (seq {values[1]})"


def check_order_safe_update(update: Update, *, db: Backend | None = None, schedules: int = 8) -> Verdict:
    """Is `update(table, order_id, status, seq)` safe to retry and to deliver late? Returns a `Verdict`."""
    db = db or connect()

    def new_order() -> Any:
        table = fresh_table(db, TABLE)
        table.put_item(Item={"pk": ORDER, "status": "placed", "seq": 1})
        return table

    def state(table: Any) -> str:
        item = read_item(table, {"pk": ORDER}) or {}
        return f"{item.get('status')} (seq {item.get('seq')})"

    def send(table: Any, status: str, seq: int) -> Any:
        return answer(lambda: update(table, ORDER, status, seq))

    def prompt_retries() -> None:
        for seed in range(schedules):
            table = new_order()
            faults = LostResponses(p=0.4, seed=seed).install(table)
            for status, seq in (("packed", 2), ("shipped", 3)):
                result = resend(lambda: update(table, ORDER, status, seq))
                if isinstance(result, Exception):
                    raise Counterexample(
                        f"{status} (seq {seq}), resent after each lost response (responses of write requests "
                        f"{faults.lost} lost, seed {seed}), finally got {raised(result)}: a retry of your own update "
                        "is a success ('already applied'), not an error.")
            if state(table) != "shipped (seq 3)":
                raise Counterexample(f"packed (seq 2) then shipped (seq 3), responses of write requests {faults.lost} "
                                     f"lost (seed {seed}): expected shipped (seq 3), your update left {state(table)}.")

    def late_retry() -> None:
        table = new_order()
        LostResponses(at=[0]).install(table)
        send(table, "packed", 2)                          # committed, the response lost
        send(table, "shipped", 3)
        result = send(table, "packed", 2)                 # packed's retry, late
        story = ("packed (seq 2) committed but its response was lost; shipped (seq 3) was applied; then packed's "
                 "retry arrived late")
        if not isinstance(result, Exception) or state(table) != "shipped (seq 3)":
            raise Counterexample(f"{story}: expected it refused (StaleUpdate) and the order still shipped (seq 3); "
                                 f"your update answered {said(result)} and left {state(table)}.")

    def out_of_order() -> None:
        table = new_order()
        send(table, "shipped", 3)
        result = send(table, "packed", 2)
        if not isinstance(result, Exception) or state(table) != "shipped (seq 3)":
            raise Counterexample("shipped (seq 3) arrived before packed (seq 2): expected packed refused and the order "
                                 f"still shipped (seq 3); your update answered {said(result)} and left {state(table)}.")

    def in_between() -> None:
        table = new_order()
        other = db.table(TABLE)                           # another sender, on a client of its own
        newer = Between(lambda: other.put_item(Item={"pk": ORDER, "status": "shipped", "seq": 3})).install(table)
        result = send(table, "packed", 2)
        newer.uninstall()
        if not isinstance(result, Exception) or state(table) != "shipped (seq 3)":
            raise Counterexample(
                "you sent packed (seq 2) to an order placed (seq 1); just before your write reached the table, "
                "another sender's shipped (seq 3) was applied: expected packed refused (StaleUpdate) and the order "
                f"still shipped (seq 3); your update answered {said(result)} and left {state(table)}. Anything "
                "can happen between a read and a write: the condition on seq must be checked by the write itself.")

    def concurrent() -> None:
        table = new_order()
        outcomes = race(lambda i: update(table, ORDER, "packed", 2), COPIES)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if errors or state(table) != "packed (seq 2)":
            saw = f"one raised {raised(errors[0])}" if errors else f"they left {state(table)}"
            raise Counterexample(f"{COPIES} copies of packed (seq 2) at the same instant: expected every copy to "
                                 f"succeed and the order packed (seq 2); {saw}.")
        table = new_order()
        updates = [(STATUSES[1 + i % 2], 2 + i) for i in range(COPIES)]
        race(lambda i: update(table, ORDER, *updates[i]), COPIES)
        newest = updates[-1]
        if state(table) != f"{newest[0]} (seq {newest[1]})":
            raise Counterexample(f"{COPIES} updates with seq 2 to {newest[1]} at the same instant: "
                                 f"expected the newest, {newest[0]} (seq {newest[1]}), to win; "
                                 f"your update left {state(table)}.")

    def bad_input() -> None:
        table = new_order()
        for status, seq in (("lost", 2), ("packed", 0), ("packed", -1), ("packed", 2.5), ("packed", "2")):
            expect_bad_input(table, f"status {status!r} with seq {seq!r}", lambda: update(table, ORDER, status, seq))
        expect_not_found(table, lambda: update(table, "order-404", "packed", 2),
                         "packed (seq 2) for order-404, an order that does not exist, should raise LookupError and "
                         "write nothing: there is no order to move", "your update")

    held = Specification.staged(lambda: _Updates(update, fresh_table(db, TABLE)), name="your update")
    return verdict(
        [prompt_retries, late_retry, out_of_order, in_between, concurrent, bad_input, held],
        passed=lambda: f"{schedules} lost-response schedules, the late retry, out-of-order delivery, a newer "
                       f"update between your read and your write, {COPIES} "
                       f"concurrent updates and bad input all handled. {held.passed()}",
    )
