"""The minutes model: how long a lesson takes, computed from its cells (CONTRIBUTING.md, *Minutes*).

    python tools/minutes.py      # each lesson's minutes by the model beside what its metadata declares

Teaching minutes are the lesson read and run at a workshop's pace: **prose at 200 words a minute** (markdown,
every whitespace-separated word, tables included) plus **code at 15 non-blank lines a minute** (a line is read,
explained and run). Not counted: the `## Your turn` section (that is the exercise's time), the `## Sources`
section (reference, not read aloud), the navigation lines, and outputs (looking at a chart is part of
explaining the code that drew it). Exercise minutes are the exercise's own, declared (5 to 10 on the core path):
a learner reads the task, edits a starter and runs the checker until it passes, which no count of lines
predicts; the model only requires that the declared minutes cover reading the section at the same pace.

`tests/test_minutes.py` holds each lesson's declared `metadata["lesson"]["minutes"]` to this model.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 15
NOT_TEACHING = ("Your turn", "Sources")
BRAND = "*Is it safe to retry?*"


@dataclass(frozen=True)
class Measure:
    words: int = 0
    code_lines: int = 0

    def __add__(self, other: Measure) -> Measure:
        return Measure(self.words + other.words, self.code_lines + other.code_lines)

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE


def measure(path: Path) -> dict[str, Measure]:
    """The words and code lines of `path`, by part: 'teaching', 'Your turn' and 'Sources'."""
    parts = {"teaching": Measure(), "Your turn": Measure(), "Sources": Measure()}
    section = ""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            lines = sum(1 for line in cell.source.splitlines() if line.strip())
            parts[section if section in NOT_TEACHING else "teaching"] += Measure(code_lines=lines)
            continue
        for line in cell.source.splitlines():
            if line.startswith("## "):
                section = line[3:].strip()
            if line.startswith(BRAND):
                continue
            words = len(re.findall(r"\S+", line))
            parts[section if section in NOT_TEACHING else "teaching"] += Measure(words=words)
    return parts


def teaching_minutes(path: Path) -> float:
    return measure(path)["teaching"].minutes


def exercise_reading_minutes(path: Path) -> float:
    """Reading the `## Your turn` section at the model's pace: the least its declared minutes can be."""
    return measure(path)["Your turn"].minutes


def main() -> int:
    sys.path.insert(0, str(ROOT / "tools"))
    from add_navigation import lessons

    print(f"{'lesson':32} {'path':9} {'model':>6} {'declared':>9} {'exercise':>9}")
    for lesson in lessons():
        print(f"{lesson.path.name[:32]:32} {lesson.path_name:9} {teaching_minutes(lesson.path):6.1f} "
              f"{lesson.teaching:9d} {lesson.exercises:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
