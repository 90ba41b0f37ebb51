"""Every lesson has the one chapter shape CONTRIBUTING.md writes down, and its generated parts are up to date."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ENDING = ["## Your turn", "## What you saw", "## Sources"]
NUMBERED = re.compile(r"^## \d")


def has_exercise(path: Path) -> bool:
    """Every core lesson has an exercise; a deep dive may have none, and then declares 0 exercise minutes."""
    lesson = nbformat.read(path, as_version=4).metadata.get("lesson", {})
    return lesson.get("path") == "core" or lesson.get("minutes", {}).get("exercises", 1) != 0


def test_lessons_are_numbered_00_onwards_without_gaps():
    numbers = [p.name[:2] for p in LESSONS]
    assert numbers == [f"{n:02d}" for n in range(len(LESSONS))], numbers


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_the_header_has_title_what_you_will_learn_and_its_path_and_minutes(path):
    header = nbformat.read(path, as_version=4).cells[0].source
    assert re.match(rf"^# {path.name[:2]} · \S", header), f"{path.name}: the first line is '# {path.name[:2]} · Title'"
    assert "**What you will learn**" in header, f"{path.name}: the header lists **What you will learn**"
    assert re.search(r"^\*(Core path|Deep dive)[^.]* · about \d+ minutes of teaching", header, re.MULTILINE), \
        f"{path.name}: the header says its path and minutes (written by tools/add_navigation.py)"


def headings(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [line.strip() for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_sections_setup_first_then_your_turn_what_you_saw_sources(path):
    found = headings(path)
    ending = ENDING if has_exercise(path) else ENDING[1:]
    assert found[0] == "## Setup", f"{path.name}: the first section is '## Setup', not {found[0]!r}"
    assert found[-len(ending):] == ending, f"{path.name}: it ends with {ending}, not {found[-len(ending):]}"
    if not has_exercise(path):
        assert "## Your turn" not in found, f"{path.name}: it has an exercise but declares 0 exercise minutes"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_numbered_sections_are_numbered_one_way(path):
    numbered = [h for h in headings(path) if NUMBERED.match(h)]
    wrong = [h for h in numbered if not re.match(r"^## \d+ · \S", h)]
    assert not wrong, f"{path.name}: number sections as '## 1 · Title': {wrong}"
    numbers = [int(re.match(r"^## (\d+)", h)[1]) for h in numbered]
    assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}: sections numbered {numbers}"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_setup_imports_and_the_lesson_code_are_tagged(path):
    nb = nbformat.read(path, as_version=4)
    tags = [tag for cell in nb.cells if cell.cell_type == "code" for tag in cell.metadata.get("tags", [])]
    assert "imports" in tags, f"{path.name}: the setup cell is tagged 'imports'"
    assert "lesson" in tags, f"{path.name}: the cells a reader edits, and tests run, are tagged 'lesson'"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_sources_link_at_least_three_pages_and_the_exercise_has_a_solution(path):
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    sources = text.split("## Sources", 1)[1]
    links = {a or b for a, b in re.findall(r"\]\((https?://[^)\s]+)\)|<(https?://[^>\s]+)>", sources)}  # [](url), <url>
    assert len(links) >= 3, f"{path.name}: Sources links {len(links)} pages; at least three"
    if not has_exercise(path):
        return
    solution = ROOT / "notebooks" / "solutions" / f"{path.stem}_solution.ipynb"
    assert solution.exists(), f"{path.name}: its exercise needs notebooks/solutions/{solution.name}"


def test_navigation_and_the_lesson_lists_are_generated_and_up_to_date():
    """tools/add_navigation.py writes every header's and footer's navigation, each header's path and minutes, the
    solutions' back links, the README's course table (with each lesson's path and minutes) and story, and 00's
    map: nothing is typed twice."""
    result = subprocess.run([sys.executable, "tools/add_navigation.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, "run `python tools/add_navigation.py`:\n" + result.stdout + result.stderr


MAX_CELL_LINES = 25   # CONTRIBUTING.md: "a code cell of more than about 25 lines is two cells"
EVERY_NOTEBOOK = LESSONS + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=[p.name for p in EVERY_NOTEBOOK])
def test_no_code_cell_is_longer_than_25_lines(path):
    cells = nbformat.read(path, as_version=4).cells
    long = [(i, len(c.source.splitlines())) for i, c in enumerate(cells)
            if c.cell_type == "code" and len(c.source.splitlines()) > MAX_CELL_LINES]
    assert not long, f"cells over {MAX_CELL_LINES} lines (index, lines): {long}; split each at a natural seam"


CORE = [p for p in LESSONS if nbformat.read(p, as_version=4).metadata.get("lesson", {}).get("path") == "core"]


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_a_core_lesson_ends_with_three_key_points_and_its_exercise_says_what_it_tests(path):
    """WORKSHOP.md's close reads each core lesson's key points back: three numbered sentences after What you saw."""
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    saw = text.split("## What you saw", 1)[1].split("## Sources", 1)[0]
    assert "**Key points**" in saw, f"{path.name}: What you saw is followed by **Key points**"
    points = re.findall(r"^\d\. ", saw.split("**Key points**", 1)[1], re.MULTILINE)
    assert len(points) == 3, f"{path.name}: three key points, not {len(points)}"
    turn = text.split("## Your turn", 1)[1].split("## What you saw", 1)[0]
    assert "**What it tests:**" in turn, f"{path.name}: its exercise says **What it tests:**"
