"""Generated schedules: the strategies, their canonical form, the example counts, and what ran.

A delivery schedule is a list of ``(op, lost, copies)``: operation `op` is sent once (its response lost if
`lost`), or as a burst of `copies` concurrent duplicates. A failure-answer schedule is the answer each send
of one request gets: DynamoDB's own (None) or one of `helpers.dynamodb_errors.KINDS`.

`Counts` keeps, per pattern, how many schedules ran and how many were distinct, and prints a line per
pattern at the end of the run (tests/summary_lines.py); `Counts.proving` runs each distinct schedule once
(a repeat is rejected, so hypothesis draws another and `max_examples` counts distinct schedules);
`Counts.search` asks hypothesis for the smallest counterexample and records it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import HealthCheck, find, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from summary_lines import summary_from

from helpers import backends
from helpers.dynamodb_errors import KINDS

Delivery = tuple[int, bool, int]   # (op, lost, copies)


def examples(moto: int, elsewhere: int) -> int:
    """The examples per pattern: RETRY_PROPERTY_EXAMPLES if set (a quick local look), else the backend's count."""
    return int(os.environ.get("RETRY_PROPERTY_EXAMPLES", moto if backends.backend_name() == "moto" else elsewhere))


# --- delivery schedules ---------------------------------------------------------------------------

def canonical(schedule: list[tuple]) -> list[tuple]:
    """Relabel operations in order of first delivery (op 0 first): every shape, without its relabelings.

    >>> canonical([(2, False, 1), (0, True, 1), (2, False, 3)])
    [(0, False, 1), (1, True, 1), (0, False, 3)]
    """
    labels: dict[int, int] = {}
    return [(labels.setdefault(op, len(labels)), *rest) for op, *rest in schedule]


def deliveries(ops: int, max_size: int = 8, bursts: bool = True) -> st.SearchStrategy[list[Delivery]]:
    """(op, lost, copies): `copies` > 1 is a burst of concurrent duplicates (their responses arrive)."""
    copies = st.sampled_from([1, 1, 1, 3]) if bursts else st.just(1)
    step = st.tuples(st.integers(0, ops - 1), st.booleans(), copies).map(
        lambda s: (s[0], s[1] and s[2] == 1, s[2]))
    return st.lists(step, min_size=1, max_size=max_size).map(canonical)


def in_order(ops: int, max_size: int = 8) -> st.SearchStrategy[list[Delivery]]:
    """Each operation's copies back to back, the last one answered: duplicates and losses, no reordering."""
    def group(schedule):
        grouped = sorted(schedule, key=lambda s: s[0])
        return [(op, lost and (n + 1 < len(grouped) and grouped[n + 1][0] == op), c)
                for n, (op, lost, c) in enumerate(grouped)]
    return deliveries(ops, max_size).map(group)


def has_aba(order: list[int]) -> bool:
    """Whether an operation arrives again after another one came between (A, B, A).

    >>> has_aba([0, 1, 0]), has_aba([0, 0, 1])
    (True, False)
    """
    return any(order[i] == order[k] != order[j] for i, j, k in itertools.combinations(range(len(order)), 3))


def as_delivered(schedule: list[Delivery]) -> list[int]:
    """The ops in the order they reached the table, the final retries of unanswered ones included.

    >>> as_delivered([(0, True, 1), (1, False, 1)])     # op 0's response lost: its caller tries again
    [0, 1, 0]
    """
    order = [op for op, *_ in schedule]
    return order + [op for op in dict.fromkeys(order) if all(lost for o, lost, _ in schedule if o == op)]


# --- failure-answer schedules ------------------------------------------------------------------------

failure_answers = st.lists(st.one_of(st.none(), st.sampled_from(KINDS)), min_size=0, max_size=6)


# --- searches and counts ---------------------------------------------------------------------------

def searching(max_examples: int) -> settings:
    """A search's settings: derandomized (the same schedules every run), no database, no deadline."""
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


def smallest(strategy: st.SearchStrategy[Any], violated: Callable[[Any], bool], max_examples: int) -> Any | None:
    """The smallest example hypothesis finds for which `violated` holds, or None if it finds none."""
    try:
        return find(strategy, violated, settings=searching(max_examples))
    except NoSuchExample:
        return None


class Counts:
    """Per pattern: the schedules run, how many were distinct, and what a search found.

    Its lines are printed at the end of the run under `title`, one per pattern, in the order patterns ran:
    ``pattern: 1000 schedules (874 distinct)`` (under `proving`: ``pattern: 1000 distinct schedules``), and
    for a pattern whose name ends in "searched", ``; smallest counterexample found: ...``.
    """

    def __init__(self, title: str) -> None:
        self.patterns: dict[str, dict[str, Any]] = {}
        summary_from(title, self.lines)

    def _entry(self, pattern: str) -> dict[str, Any]:
        return self.patterns.setdefault(pattern, {"runs": 0, "distinct": set(), "found": None, "repeats": None})

    def count(self, pattern: str, schedule: Any) -> None:
        entry = self._entry(pattern)
        entry["runs"] += 1
        entry["distinct"].add(repr(schedule))

    @contextlib.contextmanager
    def proving(self, pattern: str, schedule: Any) -> Iterator[None]:
        """Check `schedule` unless it was already proved for `pattern`: a repeat is rejected (hypothesis draws
        another in its place), so a test's `max_examples` is a count of distinct schedules. A schedule counts as
        proved only once its checks pass -- a failing one is replayed and shrunk as usual.
        """
        entry = self._entry(pattern)
        key = repr(schedule)
        if key in entry["distinct"]:
            entry["repeats"] = (entry["repeats"] or 0) + 1
            reject()
        yield
        entry["runs"] += 1
        entry["distinct"].add(key)
        entry["repeats"] = entry["repeats"] or 0

    def search(self, strategy: st.SearchStrategy[Any], fails: Callable[[Any], list[str]], pattern: str,
               *, max_examples: int) -> Any | None:
        """The smallest schedule hypothesis finds that violates an invariant (None if it finds none); counted."""
        def violated(schedule):
            self.count(pattern, schedule)
            return bool(fails(schedule))

        found = smallest(strategy, violated, max_examples)
        self._entry(pattern)["found"] = found
        return found

    def lines(self) -> list[str]:
        lines = []
        for pattern, entry in self.patterns.items():
            line = f"{pattern}: {entry['runs']} schedules ({len(entry['distinct'])} distinct)"
            if entry["repeats"] is not None:
                line = f"{pattern}: {entry['runs']} distinct schedules ({entry['repeats']} repeats drawn, not re-run)"
            if pattern.endswith("searched"):
                line += f"; smallest counterexample found: {entry['found']}"
            lines.append(line)
        return lines
