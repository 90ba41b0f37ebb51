"""One terminal-summary section per test module that counts what it ran, printed once at the end of the run.

    from summary_lines import summary
    summary("property schedules on moto").append("03 debit_idempotent: 1000 schedules (1000 distinct)")

`print()` inside a test is captured; a line appended here is shown in pytest's terminal summary, under its
section's title -- with pytest-xdist too: each worker hands its lines to the controller when it finishes
(`conftest.py` holds the hooks), so `--workers 2` prints the same counts as one process.
"""

from __future__ import annotations

from collections.abc import Callable

_SECTIONS: dict[str, list[str]] = {}
_LATE: dict[str, Callable[[], list[str]]] = {}


def summary(title: str) -> list[str]:
    """The lines of section `title` (created empty on first use): append to it."""
    return _SECTIONS.setdefault(title, [])


def summary_from(title: str, lines: Callable[[], list[str]]) -> None:
    """Section `title` is `lines()`, computed when the run ends (for counts that grow test by test)."""
    _LATE[title] = lines


def collected() -> dict[str, list[str]]:
    """Every section with lines, as this process has them now."""
    sections = {title: list(lines) for title, lines in _SECTIONS.items()}
    for title, lines in _LATE.items():
        sections.setdefault(title, []).extend(lines())
    return {title: lines for title, lines in sections.items() if lines}
