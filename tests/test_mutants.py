"""The mutation set (tools/mutants.py, tests/mutation/): it still applies, and its CI subset is still killed.

`make mutants` runs every mutant (about 40 minutes); here, in `make test`, the subset marked `ci` runs, each mutant
stopping at its first killing test: the one that killed it last time first (its `ci_killer`, written by
`tools/mutants.py --ci --remember-killers`), then the cheapest. A killer that no longer kills costs time, not the
check: the rest of the mutant's tests run after it. A notebook edited under a mutant fails the first test,
naming the mutant, before anything runs.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.lessons import lesson_cells

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import mutants  # noqa: E402

pytestmark = pytest.mark.backend_independent    # the runner runs its mutants on moto, whatever the tier


def test_every_mutant_applies_once_parses_and_changes_its_cell():
    ids = [m.id for m in mutants.load_mutants()]
    assert len(ids) == len(set(ids)) >= 80
    for mutant in mutants.load_mutants():
        source = lesson_cells(mutant.notebook, "lesson")[mutant.cell]
        changed = mutant.apply(source)                    # StaleMutant if its text is not there exactly once
        assert ast.dump(ast.parse(changed)) != ast.dump(ast.parse(source)), mutant.id
        assert mutant.notebook[:2] in mutants.LESSONS


def test_a_mutant_whose_text_is_gone_is_named():
    mutant = mutants.load_mutants()[0]
    with pytest.raises(mutants.StaleMutant, match=mutant.id):
        mutant.apply("def nothing():\n    pass\n")


def test_each_lesson_has_mutants_and_every_equivalent_one_says_why():
    entries = json.loads(mutants.MUTANTS.read_text())
    assert {e["notebook"][:2] for e in entries} == set(mutants.LESSONS)
    for entry in entries:
        assert entry["equivalent"] == "" or len(entry["equivalent"]) > 20, entry["id"]


def test_the_ci_subset_is_killed():
    """The `ci` mutants, one or more per lesson, each killed by the tests the map says call its function."""
    assert sum(m.ci for m in mutants.load_mutants()) >= 11
    done = subprocess.run([sys.executable, "tools/mutants.py", "--ci"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "survived: none" in done.stdout
