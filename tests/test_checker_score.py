"""Issue 33, step 4: measure the checker, not only the handlers.

`tests/wrong_handlers.py` is a catalogue of deliberately wrong handlers -- each a mistake a practitioner makes,
across every subject kind: 06's saved-response handler, 03-05's debit functions, 07's consumer, 09's endpoint,
10's Postgres handler and 01/02's writes that move no money. `check_handler` must refuse every one of them
(`verdict.broken` is not None) within a modest budget. An entry today's checker does not refuse stays in the
catalogue, marked xfail (strict) with the dimension the checker lacks, so the day it is refused the mark must go.

The lessons' correct handlers are held to every property by tests/test_specification.py and
test_specification_lessons.py (and the exercises' tests, for 01/02's solutions); here only the catalogue's own
constructions with nothing swapped are checked at this file's budget -- a refusal in the catalogue must come from
its mistake, not from the way the entry is built.

The score, "the checker refuses N of M wrong handlers", is printed in the terminal summary.
"""

from __future__ import annotations

import os

import pytest
import wrong_handlers as catalogue
from summary_lines import summary_from
from wrong_handlers import CATALOGUE, CONTROLS, KINDS, POSTGRES, Wrong

from helpers.checker import check_handler

BACKEND = os.environ.get("RETRY_BACKEND", "moto")
TITLE = f"the checker's own score on {BACKEND}"
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")

ON_MOTO_ONLY = pytest.mark.skipif(BACKEND != "moto", reason="10 is Postgres: its check does not depend on the "
                                                            "DynamoDB backend (it runs once, on the moto tier)")
_score: dict[str, tuple[str, str | None]] = {}     # name -> (kind, the property broken; None: held)


def _score_lines() -> list[str]:
    if not _score:
        return []
    refused = sum(broken is not None for _, broken in _score.values())
    lines = [f"the checker refuses {refused} of {len(_score)} wrong handlers"]
    for name, (kind, broken) in _score.items():
        lines.append(f"  {name} ({kind}): {'breaks ' + broken if broken else 'NOT refused'}")
    return lines


summary_from(TITLE, _score_lines)


@pytest.fixture(scope="module", autouse=True)
def _closed():
    yield
    catalogue.close()                               # 09's server


def _marks(wrong: Wrong) -> list[pytest.MarkDecorator]:
    marks = [ON_MOTO_ONLY] if wrong.kind == POSTGRES else []
    if wrong.lacks:
        marks.append(pytest.mark.xfail(strict=True, reason=f"today's checker lacks {wrong.lacks}"))
    elif wrong.lacks_on and BACKEND in wrong.lacks_on:
        marks.append(pytest.mark.xfail(strict=True, reason=f"today's checker lacks {wrong.lacks_on[BACKEND]}"))
    return marks


def _check(wrong: Wrong):
    with wrong.build() as (subject, options):
        return check_handler(subject, histories=wrong.histories, shrink=False, **options)


@pytest.mark.backend_independent
def test_the_catalogue_covers_every_subject_kind_with_at_least_30_mistakes():
    names = [wrong.name for wrong in CATALOGUE]
    assert len(CATALOGUE) >= 30 and len(set(names)) == len(names)
    assert {wrong.kind for wrong in CATALOGUE} == set(KINDS)
    for wrong in CATALOGUE:
        assert wrong.kind in KINDS and wrong.mistake.endswith("."), wrong.name
        assert wrong.lacks is None or wrong.lacks.strip(), wrong.name


@pytest.mark.parametrize("wrong", [pytest.param(w, marks=_marks(w), id=w.name) for w in CATALOGUE])
def test_the_checker_refuses_the_wrong_handler(wrong):
    verdict = _check(wrong)
    _score[wrong.name] = (wrong.kind, verdict.broken)
    assert verdict.broken is not None, f"{wrong.name}: {wrong.mistake}\n{verdict}"
    assert verdict.history, "the history that broke it comes back as data"


def _control_marks(control: Wrong) -> list[pytest.MarkDecorator]:
    marks = [ON_MOTO_ONLY] if control.kind == POSTGRES else []
    if control.lacks:
        marks.append(pytest.mark.xfail(strict=True, reason=control.lacks))
    return marks


@pytest.mark.parametrize("control", [pytest.param(c, marks=_control_marks(c), id=c.name) for c in CONTROLS])
def test_the_catalogues_constructions_hold_with_nothing_swapped(control):
    verdict = _check(control)
    assert verdict.broken is None, str(verdict)
