"""What every exercise checker shares: the `Verdict`, and small steps for building one.

A checker runs a list of checks. A check that finds a problem raises
`Counterexample` with one concrete story (the schedule, what was expected,
what happened); `verdict()` turns the first one into a NOT YET verdict. The
reader's own errors are caught and reported, never propagated, so an unsolved
exercise does not stop "Run All".

The last check of lessons 00-05 and 08 is `Specification`: after the scenarios
that give a specific hint, the reader's function goes through the collection's
one checker (`helpers.checker.check_handler`), which generates histories with
lost responses and DynamoDB's failure answers injected and holds it to
`helpers.specification`'s properties. A broken one is told in one sentence,
with the shortest history found.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ReadTimeoutError


@dataclass
class Verdict:
    passed: bool
    message: str

    def __str__(self) -> str:
        return ("PASS: " if self.passed else "NOT YET: ") + self.message

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class Counterexample(Exception):
    """A check found a case the reader's function gets wrong; the message tells the story."""


def verdict(checks: Iterable[Callable[[], None]], passed: str | Callable[[], str]) -> Verdict:
    """Run `checks` in order; the first counterexample is the verdict, else PASS with `passed` (or its result)."""
    try:
        for check in checks:
            check()
    except Counterexample as found:
        return Verdict(False, str(found))
    return Verdict(True, passed if isinstance(passed, str) else passed())


# (steps, histories): one-request histories first, so that a fault one request meets is shown alone, then longer
STAGES = ((1, 10), (4, 40))
SHRINK = 20           # histories the search may spend shortening a counterexample (then: the shortest found)
GLOSS = {             # each property in a few words, for the sentence that says which one broke
    "once": "each request takes effect once, and exactly once if it was answered success",
    "bound to its payload": "a request ID takes effect for one payload only",
    "truthful": "a success means the write is there; an answer that says nothing was written means nothing was",
    "live": "a request sent again gets a final answer",
}


class Specification:
    """A check: the reader's function through `helpers.checker.check_handler`, over generated histories.

    `subject()` makes the checker's subject (a `DebitSubject` or a `RecordSubject` on a fresh table), when the
    check runs; `noun` names the function in the sentence ("debit"); `options` go to `check_handler`
    (`keys_reused`, `one_at_a_time`: what the lesson's design promises). The histories are short, few and
    derandomized (`STAGES`): the same on every run and every backend, within a notebook's second or two.
    After a PASS, `passed()` says which properties held over how many histories.
    """

    def __init__(self, subject: Callable[[], Any], noun: str, **options: Any) -> None:
        self.subject, self.noun, self.options = subject, noun, options
        self.held: Any = None

    def __call__(self) -> None:
        from ..checker import check_handler  # hypothesis: imported when a checker first needs it

        subject = self.subject()
        for steps, histories in STAGES:
            held = check_handler(subject, histories=histories, steps=steps, shrink=SHRINK, **self.options)
            if held.broken is not None:
                raise Counterexample(self.story(held))
        self.held = held

    def story(self, held: Any) -> str:
        lines = [f"with lost responses and DynamoDB's failure answers injected (generated histories), your "
                 f"{self.noun} breaks '{held.broken}' ({GLOSS[held.broken]}): {held.sentence}.",
                 "The shortest history found:"]
        for n, step in enumerate(held.history, 1):
            said = step["said"] + (f" ({step['when']})" if step.get("when") else "")
            lines += textwrap.wrap(f"{n}. {said}", 100, initial_indent="  ", subsequent_indent="     ",
                                   break_long_words=False, break_on_hyphens=False)
        return "\n".join(lines)

    def passed(self) -> str:
        held, restricted = self.held, []
        if not self.options.get("keys_reused", True):
            restricted.append("one payload per request ID")
        if self.options.get("one_at_a_time"):
            restricted.append("one request at a time")
        within = f" ({', '.join(restricted)})" if restricted else ""
        return (f"Held to the specification over {held.histories} generated histories with lost responses and "
                f"DynamoDB's failure answers injected{within}: {_and(held.holds)}.")


def debit_subject(debit: Callable[..., Any], table: Any, db: Any, *, name: str | None = None,
                  success: tuple[Any, ...] = ("applied", "already applied"), refused: tuple[Any, ...] = (),
                  wallet_sort_key: bool = False, writes: int = 1, opening: dict[str, int] | None = None) -> Any:
    """The checker's `DebitSubject` for an exercise's `debit(table, wallet_id, amount, request_id)`, on `table`.

    A return value in `success` is a success; one in `refused` a refusal (nothing taken, told so); anything
    else, or an error, says nothing -- the caller sends again. With `wallet_sort_key` the wallet is the item
    ``pk=wallet_id, sk="wallet"`` (notebooks 04, 05, 08). Faults fall on the request's first `writes` writes
    (more than one for a function that resends by itself), each drawn alike; no leases, no retention windows.
    """
    from ..subjects import DebitSubject

    def answer(result: Any, payload: dict[str, Any]) -> Any:
        if any(result == said for said in success):
            return {"status": 200, "body": "{}"}      # one body for every success: a replay is the first answer
        if any(result == said for said in refused):
            return {"status": 402, "body": "{}", "said": repr(result)}   # refused, nothing taken (a 4xx: final)
        return result

    def key(wallet_id: str) -> dict[str, str]:
        return {"pk": wallet_id, "sk": "wallet"} if wallet_sort_key else {"pk": wallet_id}

    subject = DebitSubject(debit, name=name, answer=answer, table=table, db=db, key=key, opening=opening)
    subject.writes, subject.faults_alike, subject.waits = writes, True, False
    return subject


def _and(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def answer(call: Callable[[], Any]) -> Any:
    """What `call()` returned, or the exception it raised (as a value, to inspect)."""
    try:
        return call()
    except Exception as error:  # the reader's code: reported, not propagated
        return error


def resend(call: Callable[[], Any], attempts: int = 8) -> Any:
    """Call again after every timeout, as a client does; the answer, or the exception it finally raised."""
    for _ in range(attempts - 1):
        result = answer(call)
        if not isinstance(result, ReadTimeoutError):
            return result
    return answer(call)


def raised(error: BaseException) -> str:
    """How an error reads in a counterexample (a timeout's message names the endpoint: left out)."""
    if isinstance(error, ReadTimeoutError):
        return "ReadTimeoutError (the response was lost)"
    return f"{type(error).__name__}: {error}"


def run_prefix() -> str:
    """A prefix for request IDs that must not repeat between checker runs (never printed)."""
    return uuid.uuid4().hex[:8]


def snapshot(table: Any) -> list[dict[str, Any]]:
    """Every item in the table, in key order (strongly consistent)."""
    items = table.scan(ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: sorted((k, str(v)) for k, v in item.items() if k in ("pk", "sk")))


def expect_bad_input(table: Any, label: str, call: Callable[[], Any]) -> None:
    """`call()` must raise ValueError (BadInput is one) and leave `table` as it was."""
    before = snapshot(table)
    result = answer(call)
    if not isinstance(result, Exception):
        raise Counterexample(f"{label} was accepted; bad input should raise ValueError and write nothing.")
    if not isinstance(result, ValueError):
        raise Counterexample(f"{label} should raise ValueError (such as BadInput), got {raised(result)}")
    if snapshot(table) != before:
        raise Counterexample(f"{label} changed the table; bad input should write nothing.")
