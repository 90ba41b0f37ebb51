"""Write every lesson's navigation line and the README's list of lessons, from the notebooks themselves.

    python tools/add_navigation.py           # rewrite what is out of date, say what changed
    python tools/add_navigation.py --check   # change nothing; exit 1 if anything is out of date

The lessons are `notebooks/NN_*.ipynb`, in number order. Each one's first cell starts with `# NN · Title`, says
`*Reading time: about M minutes`, and its notebook metadata holds the README's "what you learn" text and the
question 00's map asks of it (`metadata["lesson"]["summary"]`, `metadata["lesson"]["question"]`). From those
this writes:

- the navigation line (`*Is it safe to retry?* · [← previous] · [Index] · [next →]`) in each lesson's first
  cell and as the last line of its last cell;
- a solution's line back to its exercise (`notebooks/solutions/NN_*_solution.ipynb`);
- the three lists of lessons: the README's course table (between its `<!-- lessons -->` markers), the README's
  "The story" line (between its `<!-- story -->` markers) and notebook 00's map (the table headed
  `| # | notebook | the question |`).

A new lesson needs its file, its title, its reading time and its summary: nothing here is typed twice.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
BRAND = "*Is it safe to retry?*"
TITLE = re.compile(r"^# (\d\d) · (.+)$", re.MULTILINE)
MINUTES = re.compile(r"\*Reading time: about (\d+) minutes")
BEGIN = "<!-- lessons: written by tools/add_navigation.py from each notebook; edit the notebooks, not this table -->"
END = "<!-- end of lessons -->"
STORY_BEGIN, STORY_END = "<!-- story: written by tools/add_navigation.py -->", "<!-- end of story -->"
MAP_HEADER = "| # | notebook | the question |"


@dataclass(frozen=True)
class Lesson:
    path: Path
    number: str
    title: str
    minutes: str
    summary: str
    question: str

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}"


def lessons() -> list[Lesson]:
    """Every lesson, in number order; raises ValueError naming the notebook whose header is not as above."""
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0].source if nb.cells else ""
        title, minutes = TITLE.match(first), MINUTES.search(first)
        summary = nb.metadata.get("lesson", {}).get("summary", "").strip()
        question = nb.metadata.get("lesson", {}).get("question", "").strip()
        if not (title and minutes and summary and question):
            missing = [name for name, ok in (("'# NN · Title' first line", title),
                                             ("'*Reading time: about M minutes'", minutes),
                                             ("metadata.lesson.summary", summary),
                                             ("metadata.lesson.question", question)) if not ok]
            raise ValueError(f"{path.name}: needs {', '.join(missing)}")
        if not path.name.startswith(title[1] + "_"):
            raise ValueError(f"{path.name}: its title says {title[1]}, its file name does not")
        found.append(Lesson(path, title[1], title[2], minutes[1], summary, question))
    numbers = [lesson.number for lesson in found]
    if numbers != [f"{n:02d}" for n in range(len(found))]:
        raise ValueError(f"lessons must be numbered 00, 01, ... without gaps; found {numbers}")
    return found


def navigation(all_lessons: list[Lesson], index: int) -> str:
    """The one navigation line of lesson `index`."""
    parts = [BRAND]
    if index == 0:
        parts.append("[← Index](../README.md)")
    else:
        before = all_lessons[index - 1]
        parts += [f"[← {before.label}]({before.path.name})", "[Index](../README.md)"]
    if index + 1 < len(all_lessons):
        after = all_lessons[index + 1]
        parts.append(f"[{after.label} →]({after.path.name})")
    return " · ".join(parts)


def solution_navigation(lesson: Lesson) -> str:
    return f"{BRAND} · [← back to the exercise](../{lesson.path.name}) · [Index](../../README.md)"


def course_table(all_lessons: list[Lesson]) -> str:
    rows = ["| # | notebook | what you learn | minutes |", "|---|---|---|---|"]
    rows += [f"| {x.number} | [{x.title}](notebooks/{x.path.name}) | {x.summary} | {x.minutes} |" for x in all_lessons]
    return "\n".join(rows)


def story(all_lessons: list[Lesson]) -> str:
    """The README's one-line story, wrapped at 110 characters."""
    words = [f"{x.number} {x.title[0].lower()}{x.title[1:]}" for x in all_lessons]
    text = " · ".join(words) + "."
    lines, line = [], ""
    for part in text.split(" · "):
        candidate = f"{line} · {part}" if line else part
        if len(candidate) > 108 and line:
            lines.append(line + " ·")
            line = part
        else:
            line = candidate
    return "\n".join(lines + [line])


def lesson_map(all_lessons: list[Lesson]) -> str:
    """Notebook 00's map of the collection: each lesson and the question it answers."""
    rows = [MAP_HEADER, "|---|---|---|"]
    for x in all_lessons:
        name = f"**{x.title}** (this one)" if x.number == "00" else f"[{x.title}]({x.path.name})"
        rows.append(f"| {x.number} | {name} | {x.question} |")
    return "\n".join(rows)


def _with_map(source: str, table: str) -> str:
    """`source` with the markdown table that starts at MAP_HEADER replaced by `table`."""
    lines = source.split("\n")
    start = lines.index(MAP_HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:start] + table.split("\n") + lines[end:])


def _between(text: str, begin: str, end: str, body: str, where: str) -> str:
    if begin not in text or end not in text:
        raise ValueError(f"{where} needs the markers {begin!r} and {end!r}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def _with_nav(source: str, nav: str, *, last: bool) -> str:
    """`source` with its navigation line replaced by `nav` (added: after the title, or as the last line)."""
    lines = source.rstrip("\n").split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(BRAND)]
    if at:
        lines[at[-1] if last else at[0]] = nav
    elif last:
        lines += ["", nav]
    else:
        lines[1:1] = ["", nav]
    return "\n".join(lines)


def _write_notebook(path: Path, navs: list[tuple[int, str, bool]], write: bool, map_table: str = "") -> bool:
    nb = nbformat.read(path, as_version=4)
    changed = False
    if map_table:
        cells = [cell for cell in nb.cells if cell.cell_type == "markdown" and MAP_HEADER in cell.source.split("\n")]
        if not cells:
            raise ValueError(f"{path.name} needs its map of the lessons, a table headed {MAP_HEADER!r}")
        new = _with_map(cells[0].source, map_table)
        if new != cells[0].source:
            cells[0].source, changed = new, True
    for cell_index, nav, last in navs:
        cell = nb.cells[cell_index]
        new = _with_nav(cell.source, nav, last=last)
        if new != cell.source:
            cell.source, changed = new, True
    if changed and write:
        nbformat.write(nb, path)
    return changed


def run(write: bool) -> list[str]:
    """Bring everything up to date (or only look, `write=False`); the files that were (or would be) changed."""
    all_lessons = lessons()
    changed = []
    for index, lesson in enumerate(all_lessons):
        nav = navigation(all_lessons, index)
        map_table = lesson_map(all_lessons) if index == 0 else ""
        if _write_notebook(lesson.path, [(0, nav, False), (-1, nav, True)], write, map_table):
            changed.append(str(lesson.path.relative_to(ROOT)))
        solution = NOTEBOOKS / "solutions" / f"{lesson.path.stem}_solution.ipynb"
        if solution.exists() and _write_notebook(solution, [(0, solution_navigation(lesson), False)], write):
            changed.append(str(solution.relative_to(ROOT)))
    readme = README.read_text(encoding="utf-8")
    new = _between(readme, BEGIN, END, course_table(all_lessons), "README.md (around the course table)")
    new = _between(new, STORY_BEGIN, STORY_END, story(all_lessons), "README.md (around The story)")
    if new != readme:
        changed.append("README.md")
        if write:
            README.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is out of date")
    args = parser.parse_args(argv)
    try:
        changed = run(write=not args.check)
    except ValueError as error:
        print(f"add_navigation: {error}", file=sys.stderr)
        return 2
    for name in changed:
        print(f"{'out of date' if args.check else 'wrote'}: {name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
