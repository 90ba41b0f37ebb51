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
    assert set(catalogue.NOT_DRAWN) == {"ItemCollectionSizeLimitExceededException", "ValidationException (item size)",
                                        "ReplicatedWriteConflictException", "ResourceNotFoundException"}
    text = " ".join(specification.__doc__.split())
    assert "every success answered under one key is for one payload" in text
    assert "A failed first attempt is not judged by its answer" in text
    assert "every failure answer DynamoDB can give" not in text


@pytest.mark.backend_independent
def test_names_at_the_edges_where_the_subject_declares_its_limits():
    """Issue 44: a key with the separators keys are built from, for every subject (less what the design refuses by
    name); a key exactly as long as the design takes, and a wallet ID as long, where it declares them (09)."""
    from types import SimpleNamespace

    from helpers import explorer
    from helpers.subjects import KINDS, RecordSubject

    plain = SimpleNamespace(key_limit=None, wallet_limit=None, refused_in_keys="")
    assert [p.request[1] for p in explorer.names(plain)] == ["k#1@2"]
    declared = SimpleNamespace(key_limit=255, wallet_limit=64, refused_in_keys="#")
    keyed, long_key, long_wallet = explorer.names(declared)
    assert "#" not in keyed.request[1] and "@" in keyed.request[1] and long_key.key_length == 255
    assert len(long_wallet.request[2][0]) == 64
    history = SimpleNamespace(tag=123, epoch=0)
    sized = explorer._sized(history, long_key.request, 255)[1]
    assert len(f"r123-0-{sized}") == 255 and "@" in sized
    for cls, _ in KINDS:     # every subject but a record's explores first (check_handler reads the class's own)
        assert vars(cls).get("explores", False) is (cls is not RecordSubject), cls.__name__


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
