"""Issue 44: one table in the README says which subject draws which event of the catalogue, and why not where it
does not -- written from the data (tools/catalogue_table.py), so the README and the data cannot drift apart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import catalogue
from helpers.subjects import KINDS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools import catalogue_table  # noqa: E402


@pytest.mark.backend_independent
def test_every_event_a_subject_does_not_draw_has_a_reason_and_no_drawn_one_has():
    for cls, _ in KINDS:
        missing = [name for name, why in catalogue.not_drawn(cls).items() if not why.strip()]
        assert not missing, f"{cls.__name__} does not draw {missing}: say why in its `why_not`"
        drawn = {event.name for event in catalogue.drawn_by(cls)}
        stale = sorted(set(getattr(cls, "why_not", {})) & drawn - {"provider edge", "worker"})
        assert not stale, f"{cls.__name__} draws {stale}, yet its `why_not` says why not"
        assert set(getattr(cls, "why_not", {})) <= set(catalogue.BY_NAME), cls.__name__


@pytest.mark.backend_independent
def test_the_readmes_table_is_the_data():
    found = catalogue_table.in_readme(catalogue_table.README.read_text())
    assert found is not None, "README.md lost its catalogue markers"
    assert found == catalogue_table.rendered(), "README's table differs: run python tools/catalogue_table.py --write"
