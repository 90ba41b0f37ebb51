"""Notebook 11, the deep dive after 06: it runs 06's own cells (not a copy) and only adds to them.

The behaviour it shows -- Powertools side by side, keys per caller, the tempting variants, the checker -- is tested
through the shared namespace in tests/test_lesson_06.py and tests/test_specification.py."""

from __future__ import annotations

import nbformat
import pytest

from notebook_code import NOTEBOOKS, lesson

NB06, NB11 = "06_saved_responses.ipynb", "11_saved_responses_in_depth.ipynb"
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")


@pytest.fixture(scope="module")
def nb():
    return lesson(NB11)


def test_06s_handler_is_loaded_from_06s_cells_not_copied(nb):
    for name in ("pay", "claim", "debit_once", "complete", "end_lease", "do_work", "check_request"):
        assert nb[name].__code__.co_filename == f"{NB06}[lesson]", name
    sources = "\n".join(c.source for c in nbformat.read(NOTEBOOKS / NB11, as_version=4).cells if c.cell_type == "code")
    for name in ("pay", "claim", "debit_once", "complete", "end_lease", "do_work"):
        assert f"def {name}(" not in sources, f"11 defines its own {name}: it must use 06's"


def test_powertools_runs_06s_own_work(nb):
    """Both handlers charge the provider 06's work charges: the checker and the scenarios see one provider."""
    assert nb["pay_powertools"].__globals__ is nb["pay"].__globals__
    assert nb["do_work"].__globals__ is nb


def test_a_swap_lasts_only_for_its_block(nb):
    from helpers.lessons import swapped

    kept = nb["end_lease"]
    with pytest.raises(RuntimeError), swapped(nb, end_lease=lambda key, token: None):
        assert nb["end_lease"] is not kept
        raise RuntimeError("the block ends in an error")
    assert nb["end_lease"] is kept
    with pytest.raises(KeyError, match="no nonesuch"), swapped(nb, nonesuch=1):
        pass
