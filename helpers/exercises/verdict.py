"""What every exercise checker shares: the `Verdict`, and small steps for building one.

A checker runs a list of checks. A check that finds a problem raises
`Counterexample` with one concrete story (the schedule, what was expected,
what happened); `verdict()` turns the first one into a NOT YET verdict. The
reader's own errors are caught and reported, never propagated, so an unsolved
exercise does not stop "Run All".
"""

from __future__ import annotations

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


def verdict(checks: Iterable[Callable[[], None]], passed: str) -> Verdict:
    """Run `checks` in order; the first counterexample is the verdict, else PASS with `passed`."""
    try:
        for check in checks:
            check()
    except Counterexample as found:
        return Verdict(False, str(found))
    return Verdict(True, passed)


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
