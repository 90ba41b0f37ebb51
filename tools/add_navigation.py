"""Write every lesson's navigation line and the README's list of lessons, from the notebooks themselves.

    python tools/add_navigation.py           # rewrite what is out of date, say what changed
    python tools/add_navigation.py --check   # change nothing; exit 1 if anything is out of date

The lessons are `notebooks/NN_*.ipynb`, in number order. Each one's first cell starts with `# NN · Title`, and
its notebook metadata holds the README's "what you learn" text, the question 00's map asks of it, whether it is
on the workshop's core path or a deep dive (and what a deep dive assumes), and its minutes by the model of
tools/minutes.py: `metadata["lesson"]` = `{"summary": ..., "question": ..., "path": "core" | "deep-dive",
"assumes": "06" (deep dives, optional), "minutes": {"teaching": N, "exercises": M}}`. From those this writes:

- the navigation line (`*Is it safe to retry?* · [← previous] · [Index] · [next →]`) in each lesson's first
  cell and as the last line of its last cell; on the core path, when the next lesson is a deep dive, it also
  points to the next core lesson;
- the header's time line (`*Core path · about N minutes of teaching, M of exercise.*`), which starts the
  italic line after **What you will learn**;
- a solution's line back to its exercise (`notebooks/solutions/NN_*_solution.ipynb`);
- the three lists of lessons: the README's course table (between its `<!-- lessons -->` markers), the README's
  "The story" line (between its `<!-- story -->` markers) and notebook 00's map (the table headed
  `| # | notebook | the question |`);
- WORKSHOP.md's schedule (between its `<!-- schedule -->` markers), from the core lessons' minutes.

A new lesson needs its file, its title and its metadata: nothing here is typed twice.
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
TIME_LINE = re.compile(r"^\*(?:Core path|Deep dive)[^.*]*\.", re.MULTILINE)
PATHS = {"core": "core", "deep-dive": "deep dive"}
BEGIN = "<!-- lessons: written by tools/add_navigation.py from each notebook; edit the notebooks, not this table -->"
END = "<!-- end of lessons -->"
STORY_BEGIN, STORY_END = "<!-- story: written by tools/add_navigation.py -->", "<!-- end of story -->"
MAP_HEADER = "| # | notebook | the question |"
WORKSHOP = ROOT / "WORKSHOP.md"
SCHEDULE_BEGIN = "<!-- schedule: written by tools/add_navigation.py from the core lessons' minutes -->"
SCHEDULE_END = "<!-- end of schedule -->"
OPENING, BREAK, WORKSHOP_MINUTES = 10, 10, 180
BREAK_AFTER = (2, 4)          # a break after the second and the fourth core lesson


@dataclass(frozen=True)
class Lesson:
    path: Path
    number: str
    title: str
    summary: str
    question: str
    path_name: str     # "core" or "deep-dive"
    teaching: int
    exercises: int
    assumes: str = ""

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}"

    @property
    def core(self) -> bool:
        return self.path_name == "core"

    @property
    def time_line(self) -> str:
        """The header's generated sentence: which path, and the declared minutes."""
        where = "Core path" if self.core else "Deep dive" + (f", assumes {self.assumes}" if self.assumes else "")
        exercise = f", {self.exercises} of exercise" if self.exercises else "; no exercise"
        return f"*{where} · about {self.teaching} minutes of teaching{exercise}."

    @property
    def minutes_cell(self) -> str:
        """The README's minutes: teaching + exercise."""
        return f"{self.teaching} + {self.exercises}" if self.exercises else f"{self.teaching}"


def lessons() -> list[Lesson]:
    """Every lesson, in number order; raises ValueError naming the notebook whose header is not as above."""
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0].source if nb.cells else ""
        meta = nb.metadata.get("lesson", {})
        title, time_line = TITLE.match(first), TIME_LINE.search(first)
        summary, question = meta.get("summary", "").strip(), meta.get("question", "").strip()
        minutes = meta.get("minutes", {})
        timed = (isinstance(minutes, dict) and set(minutes) == {"teaching", "exercises"}
                 and all(isinstance(v, int) and v >= 0 for v in minutes.values()))
        if not (title and time_line and summary and question and meta.get("path") in PATHS and timed):
            missing = [name for name, ok in (("'# NN · Title' first line", title),
                                             ("an italic time line ('*Core path' or '*Deep dive')", time_line),
                                             ("metadata.lesson.summary", summary),
                                             ("metadata.lesson.question", question),
                                             ("metadata.lesson.path, 'core' or 'deep-dive'", meta.get("path") in PATHS),
                                             ("metadata.lesson.minutes, {'teaching': N, 'exercises': M}", timed))
                       if not ok]
            raise ValueError(f"{path.name}: needs {', '.join(missing)}")
        if not path.name.startswith(title[1] + "_"):
            raise ValueError(f"{path.name}: its title says {title[1]}, its file name does not")
        found.append(Lesson(path, title[1], title[2], summary, question, meta["path"], minutes["teaching"],
                            minutes["exercises"], str(meta.get("assumes", ""))))
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
    if all_lessons[index].core:
        next_core = next((x for x in all_lessons[index + 1:] if x.core), None)
        if next_core is not None and next_core is not all_lessons[index + 1]:
            parts.append(f"[core path: {next_core.label} →]({next_core.path.name})")
    return " · ".join(parts)


def solution_navigation(lesson: Lesson) -> str:
    return f"{BRAND} · [← back to the exercise](../{lesson.path.name}) · [Index](../../README.md)"


def course_table(all_lessons: list[Lesson]) -> str:
    rows = ["| # | notebook | what you learn | path | minutes (teaching + exercise) |", "|---|---|---|---|---|"]
    rows += [f"| {x.number} | [{x.title}](notebooks/{x.path.name}) | {x.summary} | {_path_cell(x)} | "
             f"{x.minutes_cell} |" for x in all_lessons]
    core = [x for x in all_lessons if x.core]
    total = sum(x.teaching + x.exercises for x in core)
    rows.append(f"| | **the core path** | {', '.join(x.number for x in core)} | core | {total} |")
    return "\n".join(rows)


def _path_cell(lesson: Lesson) -> str:
    if lesson.core:
        return "**core**"
    return "deep dive" + (f" (assumes {lesson.assumes})" if lesson.assumes else "")


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


def schedule(all_lessons: list[Lesson]) -> str:
    """WORKSHOP.md's schedule: the opening, each core lesson's declared minutes, two breaks, and the close."""
    def clock(minute: int) -> str:
        return f"{minute // 60}:{minute % 60:02d}"

    rows = ["| time | what | minutes |", "|---|---|---|"]
    now = 0

    def add(what: str, minutes: int) -> None:
        nonlocal now
        rows.append(f"| {clock(now)}–{clock(now + minutes)} | {what} | {minutes} |")
        now += minutes

    add("**Opening.** The question: *is it safe to retry?* Show 00's first swimlane (a client times out, the write "
        "had committed, the resend debits again) and its table of the four ways a request arrives twice. Learners "
        "check their Run All of 00.", OPENING)
    core = [x for x in all_lessons if x.core]
    for n, lesson in enumerate(core, 1):
        add(f"**{lesson.label}** ({lesson.teaching} teaching + {lesson.exercises} exercise)",
            lesson.teaching + lesson.exercises)
        if n in BREAK_AFTER:
            add("break", BREAK)
    close = WORKSHOP_MINUTES - now
    if close < 10:
        raise ValueError(f"the core path leaves {close} minutes of {WORKSHOP_MINUTES} for the close: at least 10")
    add("**Close.** Each lesson's three key points, read back by the room; questions; the deep dives.", close)
    total = sum(x.teaching + x.exercises for x in core)
    return "\n".join(rows) + (f"\n\nThe core path: {total} minutes by the model, in a workshop of "
                              f"{WORKSHOP_MINUTES} with the opening, two breaks and {close} minutes to close.")


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


def _write_notebook(path: Path, navs: list[tuple[int, str, bool]], write: bool, map_table: str = "",
                    time_line: str = "") -> bool:
    nb = nbformat.read(path, as_version=4)
    changed = False
    if time_line:
        new = TIME_LINE.sub(lambda _: time_line, nb.cells[0].source, count=1)
        if new != nb.cells[0].source:
            nb.cells[0].source, changed = new, True
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
        if _write_notebook(lesson.path, [(0, nav, False), (-1, nav, True)], write, map_table, lesson.time_line):
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
    workshop = WORKSHOP.read_text(encoding="utf-8")
    new = _between(workshop, SCHEDULE_BEGIN, SCHEDULE_END, schedule(all_lessons), "WORKSHOP.md (around the schedule)")
    if new != workshop:
        changed.append("WORKSHOP.md")
        if write:
            WORKSHOP.write_text(new, encoding="utf-8")
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
