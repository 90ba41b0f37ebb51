"""Show a checker's verdict wrapped to GitHub's width (100 characters a line).

A counterexample is one long sentence; printed as one line it runs off the right edge of a
rendered notebook, and the part that matters ("expected 80, your debit left 60") is the part
cut off. `shown(check)` wraps a checker so that the `Verdict` it returns *displays* wrapped;
its `message` and `str()` stay one line, so code that searches them is unaffected.
`shown_by_line(check)` does the same for a checker whose message has lines of its own (a
counterexample, then the shortest history that shows it): each line is wrapped on its own.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from typing import Any

from .verdict import Verdict

WIDTH = 100


class ShownVerdict(Verdict):
    """A `Verdict` that a notebook displays wrapped to `WIDTH` characters a line."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(textwrap.fill(str(self), width=WIDTH, break_long_words=False, break_on_hyphens=False))


def shown(check: Callable[..., Verdict]) -> Callable[..., ShownVerdict]:
    """Decorate a checker: same checks, same verdict, displayed wrapped."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> ShownVerdict:
        verdict = check(*args, **kwargs)
        return ShownVerdict(verdict.passed, verdict.message)

    return wrapper


class LinedVerdict(ShownVerdict):
    """A `Verdict` whose message keeps its lines when displayed: each is wrapped to `WIDTH` on its own."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("\n".join(textwrap.fill(line, width=WIDTH, break_long_words=False, break_on_hyphens=False)
                                for line in str(self).splitlines()))


def shown_by_line(check: Callable[..., Verdict]) -> Callable[..., LinedVerdict]:
    """Decorate a checker whose messages have lines of their own: same checks, displayed line by line."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> LinedVerdict:
        verdict = check(*args, **kwargs)
        return LinedVerdict(verdict.passed, verdict.message)

    return wrapper
