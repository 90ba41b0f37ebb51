"""Issue 44: the checker as an explorer -- the catalogue as data, and the exhaustive phase finding by itself the
history of issue 43 (a stalled attempt, a refused takeover, the world changing back, a resend paid, the first
attempt waking) on 06 as it was before that issue, at the reader's default budget."""

from __future__ import annotations

import time

import pytest
import wrong_handlers

from helpers import catalogue
from helpers.checker import check_handler
from helpers.history import Sent
from helpers.specification import ONCE


@pytest.mark.backend_independent
def test_every_event_is_data_with_one_name_one_wording_and_a_source():
    names = [event.name for event in catalogue.CATALOGUE]
    assert len(names) == len(set(names))
    for event in catalogue.CATALOGUE:
        assert event.source.startswith("https://"), event.name
        assert event.words and event.at and event.needs, event.name
        assert event.undo is None or event.undo in catalogue.BY_NAME, event.name
    for code, (why, source) in catalogue.NOT_DRAWN.items():
        assert why and source.startswith("https://"), code


def test_the_default_check_finds_issue_43s_history_on_06_before_it_by_itself():
    started = time.monotonic()
    with wrong_handlers._before_43("06 before issue 43") as (pay, options):
        verdict = check_handler(pay, **options)
    assert time.monotonic() - started < 20
    assert verdict.broken == ONCE and verdict.placed, str(verdict)
    events = [getattr(step, "event", None) for step in verdict.history]
    answers = [step.answer for step in verdict.history if isinstance(step, Sent)]
    assert "lease after" in events and ("close" in events or "elsewhere" in events), str(verdict)
    assert answers[0] in ("WalletNotFound", "InsufficientFunds") and answers[-1].startswith("201"), str(verdict)
    assert "charged 20" in verdict.sentence, str(verdict)


@pytest.mark.backend_independent
def test_the_specification_says_what_it_judges():
    """Issue 45: the failure answers drawn are named, with why not the others; *bound* says what check_answer
    judges (two successes under one key), and where *once* takes over (a failed first attempt)."""
    from helpers import specification
    from helpers.dynamodb_errors import DISTINCT_KINDS, MORE_KINDS

    drawn = {event.kind for event in catalogue.ANSWERS}
    assert set(DISTINCT_KINDS) | set(MORE_KINDS) <= drawn
    assert set(catalogue.NOT_DRAWN) == {"ItemCollectionSizeLimitExceededException",
                                        "ReplicatedWriteConflictException", "ResourceNotFoundException"}
    text = " ".join(specification.__doc__.split())
    assert "every success answered under one key is for one payload" in text
    assert "A failed first attempt is not judged by its answer" in text
    assert "every failure answer DynamoDB can give" not in text


CHECKER_MODULES = ("checker", "machine", "history", "explorer", "specification", "catalogue", "subjects")


@pytest.mark.backend_independent
@pytest.mark.parametrize("module", CHECKER_MODULES)
def test_no_function_of_the_checker_is_over_100_lines(module):
    """Issue 44: the state machine at module level, in small functions -- none over 100 lines."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parent.parent / "helpers" / f"{module}.py").read_text())
    long = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 100}
    assert not long, f"helpers/{module}.py: functions over 100 lines: {long}"


@pytest.mark.backend_independent
@pytest.mark.parametrize("module", [m for m in CHECKER_MODULES if m != "specification"])
def test_every_judgment_is_the_specifications(module):
    """Issue 44: the checker generates and records; only helpers/specification.py says a property broke (a
    `Violation` is made there and nowhere else)."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parent.parent / "helpers" / f"{module}.py").read_text())
    made = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Violation"]
    assert not made, f"helpers/{module}.py makes a Violation (a judgment) at lines {made}"
