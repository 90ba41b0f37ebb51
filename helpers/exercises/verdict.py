"""What every exercise checker shares: the `Verdict`, and small steps for building one.

A checker runs a list of checks. A check that finds a problem raises
`Counterexample` with one concrete story (the schedule, what was expected,
what happened); `verdict()` turns the first one into a NOT YET verdict. The
reader's own errors are caught and reported, never propagated, so an unsolved
exercise does not stop "Run All". The last check of every exercise is a
`helpers.exercises.specified.Specification`: the reader's answer held to the
collection's specification, told the same way in every exercise.

A `Verdict` prints and displays wrapped to GitHub's width (`WIDTH` characters a
line), each line of its message on its own: a counterexample's sentence runs on
as one paragraph in `message` (so code can search it), and the shortest history
after it keeps its numbered lines.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ReadTimeoutError

from ..dynamodb_errors import ALL_KINDS, ANSWERS, APPLIED, CONFLICT
from ..tables import fresh_table, open_wallet

WIDTH = 100           # characters a line: what GitHub shows of a notebook's output


@dataclass
class Verdict:
    """PASS, or NOT YET with one counterexample: `message` as the checker wrote it, `str()` wrapped to `WIDTH`."""

    passed: bool
    message: str

    def __str__(self) -> str:
        said = ("PASS: " if self.passed else "NOT YET: ") + self.message
        return "\n".join(textwrap.fill(line, WIDTH, break_long_words=False, break_on_hyphens=False)
                         for line in said.splitlines())

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


def said(result: Any) -> str:
    """What the reader's function answered (repr) or raised (`raised`), for a counterexample."""
    return raised(result) if isinstance(result, BaseException) else repr(result)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n` and `word`, its plural when n is not 1: ``counted(1, "send")`` is "1 send", ``counted(2, "time")``
    "2 times"."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def run_prefix() -> str:
    """A prefix for request IDs that must not repeat between checker runs (never printed)."""
    return uuid.uuid4().hex[:8]


def wallet_table(db: Any, name: str, wallet_id: str, balance: int, **options: Any) -> Any:
    """A fresh table `name` (`options` go to `helpers.tables.fresh_table`) holding one wallet with `balance`."""
    table = fresh_table(db, name, **options)
    open_wallet(table, wallet_id, balance)
    return table


def snapshot(table: Any) -> list[dict[str, Any]]:
    """Every item in the table, in key order (strongly consistent)."""
    items = table.scan(ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: sorted((k, str(v)) for k, v in item.items() if k in ("pk", "sk")))


def expect_not_found(table: Any, call: Callable[[], Any], expected: str, who: str) -> None:
    """`call()`, a write for a wallet that does not exist, must raise LookupError (WalletNotFound is one) and leave
    `table` as it was; else the counterexample is `expected`, then what `who` ("your debit") answered."""
    before = snapshot(table)
    result = answer(call)
    wrote = snapshot(table) != before
    if not isinstance(result, LookupError) or wrote:
        raise Counterexample(f"{expected}; {who} answered {said(result)}{' and wrote to the table' if wrote else ''}.")


def expect_bad_debits(table: Any, debit: Callable[..., Any], wallet_id: str, request_id: str, *,
                      not_even: str = "") -> None:
    """`debit(table, wallet_id, amount, request_id)` must refuse a negative and a fractional amount (ValueError) and
    a wallet that does not exist (WalletNotFound), writing nothing (`not_even`: ", not even a marker")."""
    for amount in (-5, 2.5):
        expect_bad_input(table, f"amount {amount!r}", lambda: debit(table, wallet_id, amount, f"{request_id}-bad"))
    expect_not_found(table, lambda: debit(table, "nobody", 10, f"{request_id}-nobody"), "a debit from a wallet that "
                     f"does not exist should raise WalletNotFound and write nothing{not_even}", "your debit")


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


def failure_answers(first: str, last: str) -> list[tuple[str, int, str]]:
    """Each of DynamoDB's failure answers (`helpers.dynamodb_errors.ANSWERS`) as (kind, which action of a transaction
    carries a conflict, how a counterexample names the answer), a conflict on the `first` action coming first:
    ``failure_answers("the wallet (action 0)", "the marker (action 1)")``."""
    return [(kind, item, _named(kind, first if item == 0 else last))
            for kind, item in sorted(ANSWERS, key=lambda answer: (ALL_KINDS.index(answer[0]), answer[1] != 0))]


def _named(kind: str, action: str) -> str:
    if kind == CONFLICT:        # on a transaction: TransactionCanceledException, the reason at that action
        return f"TransactionConflict on {action}: nothing written"
    code = kind.split(" (")[0]  # a kind is the error's code without AWS's suffix (InternalServerError has none)
    code += " (500)" if code.endswith("Error") else "Exception"
    return f"{code}: {'the write was applied' if kind in APPLIED else 'nothing written'}"
