"""Every lesson has the same header and the same previous / index / next links, and the README agrees with it."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
TITLE = re.compile(r"^# (\d\d) · (.+)$", re.MULTILINE)


def title(path: Path) -> tuple[str, str]:
    first = nbformat.read(path, as_version=4).cells[0].source
    match = TITLE.match(first)
    assert match, f"{path.name}: the first cell must start with '# NN · Title'"
    return match.group(1), match.group(2)


def expected_nav(index: int) -> str:
    parts = ["*Is it safe to retry?*"]
    if index == 0:
        parts.append("[← Index](../README.md)")
    else:
        number, name = title(LESSONS[index - 1])
        parts += [f"[← {number} {name}]({LESSONS[index - 1].name})", "[Index](../README.md)"]
    if index + 1 < len(LESSONS):
        number, name = title(LESSONS[index + 1])
        parts.append(f"[{number} {name} →]({LESSONS[index + 1].name})")
    return " · ".join(parts)


def test_there_are_eight_lessons_numbered_in_order():
    assert [title(p)[0] for p in LESSONS] == [f"{n:02d}" for n in range(8)]
    assert all(p.name.startswith(title(p)[0] + "_") for p in LESSONS)


@pytest.mark.parametrize("index", range(len(LESSONS)), ids=[p.name for p in LESSONS])
def test_header_and_footer_carry_the_same_navigation(index):
    cells = nbformat.read(LESSONS[index], as_version=4).cells
    nav = expected_nav(index)
    header = cells[0].source
    assert nav in header.splitlines(), f"header navigation should read: {nav}"
    assert "**What you will learn**" in header
    assert re.search(r"\*Reading time: about \d+ minutes", header)
    assert cells[-1].cell_type == "markdown" and cells[-1].source.strip().splitlines()[-1] == nav


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_readme_lists_the_lesson_with_its_reading_time(path):
    number, name = title(path)
    minutes = re.search(r"Reading time: about (\d+) minutes", nbformat.read(path, as_version=4).cells[0].source)[1]
    row = re.search(rf"^\| {number} \| \[{re.escape(name)}\]\(notebooks/{re.escape(path.name)}\) \|.*\| (\d+) \|$",
                    README, re.MULTILINE)
    assert row, f"README's course table needs a row: | {number} | [{name}](notebooks/{path.name}) | … | minutes |"
    assert row[1] == minutes, f"README says {row[1]} minutes for {path.name}, the notebook says {minutes}"
