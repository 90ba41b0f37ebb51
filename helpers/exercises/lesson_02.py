"""Notebook 02's exercise: a sign-up that tells its own retry from someone else's row.

The reader writes `sign_up(table, username, email)`, which creates the item
``{"pk": username, "email": email}`` once. It returns "created", or
"already created" for a retry of the same sign-up; a username that already
belongs to a different email is an error (raised), and nothing is written.
The checker sends sign-ups under seeded lost responses, a collision with
someone else's row, someone else's sign-up landing between the sign-up's read
and its write (run on the wire, `helpers.wire.Between`: the same on every run
and every backend), concurrent sign-ups and bad input. Then it holds the sign-up
to the *truthful* and *live* parts of the collection's specification
(`helpers.checker`): generated histories of sign-ups with lost responses and
DynamoDB's failure answers injected, where "created" and "already created" must
find the user's item holding that email (read back), `UsernameTaken` must find
the item untouched, and a sign-up sent again must get one of those answers.
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
from .verdict import Counterexample, Verdict, answer, expect_bad_input, raised, resend, said, verdict

SignUp = Callable[[Any, str, str], Any]
TABLE, COPIES = "exercise-02", 16
PEOPLE = {"alice": "alice@example.com", "bob": "bob@example.com", "carol": "carol@example.com"}


class _SignUps(ItemSubject):
    """The reader's sign-up as the checker's subject: two usernames, and someone else's email for one of them."""

    requests = (("alice", PEOPLE["alice"]), ("alice", "mallory@example.com"), ("bob", PEOPLE["bob"]))
    success = ("created", "already created")
    refusing = ("UsernameTaken",)
    fields = ("pk", "email")

    def begin(self) -> None:
        for username in ("alice", "bob"):
            self.table.delete_item(Key={"pk": username})

    def key(self, request: tuple) -> dict[str, Any]:
        return {"pk": request[0]}

    def describe(self, values: tuple) -> str:
        return f"{values[0]!r} with {values[1]}"


def check_sign_up(sign_up: SignUp, *, db: Backend | None = None, schedules: int = 8) -> Verdict:
    """Is `sign_up(table, username, email)` safe to retry, and does it refuse someone else's row? A `Verdict`."""
    db = db or connect()

    def lost_responses() -> None:
        for seed in range(schedules):
            table = fresh_table(db, TABLE)
            faults = LostResponses(p=0.4, seed=seed).install(table)
            for username, email in PEOPLE.items():
                result = resend(lambda: sign_up(table, username, email))
                story = (f"{username} signed up, resent after each lost response (responses of write requests "
                         f"{faults.lost} lost, seed {seed})")
                if isinstance(result, Exception):
                    raise Counterexample(f"{story}, and finally got {raised(result)}: a retry of your own sign-up "
                                         "is a success ('already created'), not an error.")
                if read_item(table, {"pk": username}) is None:
                    raise Counterexample(f"{story}: your sign-up answered {result!r}, "
                                         f"but there is no item {username!r}.")

    def someone_elses_row() -> None:
        table = fresh_table(db, TABLE)
        first = answer(lambda: sign_up(table, "alice", "alice@example.com"))
        if isinstance(first, Exception):
            raise Counterexample(f"alice's first sign-up raised {raised(first)}")
        before = read_item(table, {"pk": "alice"})
        result = answer(lambda: sign_up(table, "alice", "mallory@example.com"))
        story = "alice@example.com signed up as 'alice'; then mallory@example.com signed up as 'alice' too"
        if not isinstance(result, Exception):
            raise Counterexample(f"{story}: expected UsernameTaken (the username is taken), your sign-up answered "
                                 f"{result!r} — mallory was told she has an account, and the row is alice's.")
        if read_item(table, {"pk": "alice"}) != before:
            raise Counterexample(f"{story}: your sign-up raised {raised(result)} but changed alice's row; a taken "
                                 "username should write nothing.")
        if type(result).__name__ != "UsernameTaken":
            raise Counterexample(f"{story}: expected UsernameTaken, your sign-up raised {raised(result)}. A caller "
                                 "tells a taken username by its error: raise UsernameTaken, the exercise's own.")

    def in_between() -> None:
        table = fresh_table(db, TABLE)
        other = db.table(TABLE)                           # another sender, on a client of its own
        mallory = Between(lambda: other.put_item(Item={"pk": "eve", "email": "mallory@example.com"})).install(table)
        result = answer(lambda: sign_up(table, "eve", "eve@example.com"))
        mallory.uninstall()
        stored = (read_item(table, {"pk": "eve"}) or {}).get("email")
        if not isinstance(result, Exception) or stored != "mallory@example.com":
            outcome = (f"the row now holds {stored} — mallory's account was overwritten"
                       if stored != "mallory@example.com" else "the row is mallory's")
            raise Counterexample(
                "eve@example.com signed up as 'eve'; just before your sign-up's write reached the table, "
                "mallory@example.com's sign-up as 'eve' was applied: expected UsernameTaken and the row left to "
                f"mallory; your sign-up answered {said(result)} and {outcome}. Anything can happen between a read "
                "and a write: the write itself must be conditional (attribute_not_exists).")

    def concurrent() -> None:
        table = fresh_table(db, TABLE)
        outcomes = race(lambda i: sign_up(table, "dave", "dave@example.com"), COPIES)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if errors:
            raise Counterexample(f"{COPIES} copies of dave's sign-up at the same instant: "
                                 f"one raised {raised(errors[0])}; "
                                 "every copy of your own sign-up should succeed.")
        emails = [f"user{i}@example.com" for i in range(COPIES)]
        outcomes = race(lambda i: sign_up(table, "eve", emails[i]), COPIES)
        winners = [emails[i] for i, o in enumerate(outcomes) if not isinstance(o, Exception)]
        stored = (read_item(table, {"pk": "eve"}) or {}).get("email")
        if len(winners) != 1 or winners[0] != stored:
            raise Counterexample(f"{COPIES} different people signed up as 'eve' at the same instant: "
                                 f"expected exactly one to succeed, and the row to hold that one's email; "
                                 f"{len(winners)} were told they succeeded, and the row holds {stored!r}.")

    def bad_input() -> None:
        table = fresh_table(db, TABLE)
        for username, email in (("", "x@example.com"), (" ", "x@example.com"), ("frank", ""), ("frank", None)):
            expect_bad_input(table, f"username {username!r} with email {email!r}",
                             lambda: sign_up(table, username, email))

    held = Specification.staged(lambda: _SignUps(sign_up, fresh_table(db, TABLE)), name="your sign-up")
    return verdict(
        [lost_responses, someone_elses_row, in_between, concurrent, bad_input, held],
        passed=lambda: f"{schedules} lost-response schedules, someone else's row (also between your read and your "
                       f"write), {COPIES} concurrent sign-ups and "
                       f"bad input all handled. {held.passed()}",
    )
