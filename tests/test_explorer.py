"""Issue 44: the checker as an explorer -- the catalogue as data, and the exhaustive phase finding by itself the
history of issue 43 (a stalled attempt, a refused takeover, the world changing back, a resend paid, the first
attempt waking) on 06 as it was before that issue, at the reader's default budget."""

from __future__ import annotations

import time

import pytest
import wrong_handlers

from helpers import catalogue
from helpers.checker import check_handler
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
    events = [step.get("event") for step in verdict.history]
    answers = [step.get("answer") for step in verdict.history if "caller" in step]
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
