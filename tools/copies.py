"""Count the places where the code says the same thing twice: the Python files, and the notebooks' code cells.

    python tools/copies.py              # both counts, and the longest copies of each
    python tools/copies.py --most 20    # more rows

A *copy* is a pair of places (in one file or two) that share a run of at least six identical lines, once each
line is stripped and blank lines, comments, lone brackets and import lines are left out. Each notebook counts
as one file of its code cells, in order. A row is a place to look, not a verdict: a lesson's function and its
exercise's solution share lines on purpose (CONTRIBUTING.md says when a lesson may write earlier code out
again). The counts are the house's measure of "one of each thing"; README.md records them. The learners' answers
in tests/learners/ are left out: each file holds variations of one function, written alike on purpose.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import defaultdict

from notebook_list import ROOT, notebooks

RUN = 6   # lines a copy shares at the least
LEARNERS = "tests/learners/"   # learners' answers: variations of one function each, alike on purpose (data)


def meaningful(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, stripped text) of the lines that say something."""
    kept = []
    for number, line in enumerate(lines, 1):
        text = " ".join(line.split())
        if not text or text.startswith(("#", "import ", "from ", "%", "!")) or text in {")", "]", "}", "):", "],"}:
            continue
        kept.append((number, text))
    return kept


def python_files() -> dict[str, list[str]]:
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return {name: (ROOT / name).read_text(encoding="utf-8").splitlines() for name in tracked.stdout.split()
            if not name.startswith(LEARNERS)}


CELLS: dict[str, list[int]] = {}   # a notebook's code, line by line -> the cell each line is in


def notebook_code() -> dict[str, list[str]]:
    code = {}
    for path in notebooks():
        name, lines = str(path.relative_to(ROOT)), []
        CELLS[name] = [0]                  # line numbers count from 1
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                source = "".join(cell["source"]).splitlines() + [""]
                lines += source
                CELLS[name] += [index] * len(source)
        code[name] = lines
    return code


def place(name: str, first: int, last: int) -> str:
    """`a.py:10-24`, or for a notebook the cells the lines are in (`04_x.ipynb cells 6-7`, counted from 0)."""
    if name not in CELLS:
        return f"{name}:{first}-{last}"
    a, b = CELLS[name][first], CELLS[name][last]
    return f"{name} cell {a}" if a == b else f"{name} cells {a}-{b}"


def copies(files: dict[str, list[str]]) -> list[tuple[int, str, str]]:
    """The pairs of places sharing RUN or more lines: (lines shared, "a.py:10-24", "b.py:40-54"), longest first.

    Two files that share several runs count once, by their longest, as the pair is one place to look."""
    kept = {name: meaningful(lines) for name, lines in files.items()}
    where = defaultdict(list)           # a window of RUN lines -> every (file, index) it starts at
    for name, lines in kept.items():
        for i in range(len(lines) - RUN + 1):
            where[tuple(text for _, text in lines[i:i + RUN])].append((name, i))
    best: dict[tuple[str, ...], tuple[int, str, str]] = {}
    for starts in where.values():
        for n, (a, i) in enumerate(starts):
            for b, j in starts[n + 1:]:
                if a == b and abs(i - j) < RUN:                    # a run overlapping itself
                    continue
                if i > 0 and j > 0 and kept[a][i - 1][1] == kept[b][j - 1][1] and (a != b or i - 1 != j):
                    continue                                        # not where the shared run begins
                length = RUN
                while (i + length < len(kept[a]) and j + length < len(kept[b])
                       and kept[a][i + length][1] == kept[b][j + length][1] and (a != b or i + length < j)):
                    length += 1
                pair = (a, b) if a != b else (a, f"{a}#{min(i, j)}")
                found = (length, place(a, kept[a][i][0], kept[a][i + length - 1][0]),
                         place(b, kept[b][j][0], kept[b][j + length - 1][0]))
                if pair not in best or length > best[pair][0]:
                    best[pair] = found
    return sorted(best.values(), reverse=True)


def starter_and_solution(a: str, b: str) -> bool:
    """A lesson's *Your turn* cell and its own solution notebook (which writes the starter out, fixed)."""
    lesson, solution = sorted((a, b), key=lambda place: "/solutions/" in place)
    return "/solutions/" in solution and solution.split("/solutions/")[1][:3] == lesson.split("notebooks/")[1][:3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--most", type=int, default=8, help="rows per kind (default 8)")
    args = parser.parse_args()
    for kind, files in (("Python files", python_files()), ("notebooks' code cells", notebook_code())):
        found = copies(files)
        exercises = sum(starter_and_solution(a, b) for _, a, b in found)
        print(f"{len(found)} copies of {RUN} or more lines in {len(files)} {kind}"
              + (f" ({exercises} of them an exercise's starter and its solution)" if exercises else ""))
        for length, a, b in found[:args.most]:
            print(f"  {length:3d} lines  {a}  ~  {b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
