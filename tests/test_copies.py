"""tools/copies.py, the house's count of code written twice, finds a copy and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from copies import RUN, copies, starter_and_solution  # noqa: E402

BODY = [f"value_{n} = compute({n}, table)" for n in range(RUN + 2)]


def test_a_run_written_twice_is_one_copy_with_its_lines():
    files = {"a.py": ["def f():", *BODY, "    return 1"], "b.py": ["# other", "", *BODY, "x = 2"]}
    assert copies(files) == [(RUN + 2, "a.py:2-9", "b.py:3-10")]


def test_blank_lines_comments_imports_and_white_space_do_not_hide_a_copy():
    spaced = [line for text in BODY for line in ("  " + text.replace(" = ", "  =  "), "# note", "")]
    files = {"a.py": BODY, "b.py": ["import os", *spaced]}
    assert [length for length, _, _ in copies(files)] == [RUN + 2]


def test_runs_shorter_than_six_lines_and_different_code_are_not_copies():
    files = {"a.py": BODY[:RUN - 1] + ["y = 1"], "b.py": BODY[:RUN - 1] + ["y = 2"], "c.py": ["z = 3"] * 3}
    assert copies(files) == []


def test_a_copy_inside_one_file_is_found():
    assert [length for length, _, _ in copies({"a.py": [*BODY, "sep = 0", *BODY]})] == [RUN + 2]


def test_an_exercise_starter_and_its_own_solution_are_told_apart():
    lesson, solution = "notebooks/04_x.ipynb cell 44", "notebooks/solutions/04_x_solution.ipynb cell 2"
    assert starter_and_solution(lesson, solution) and starter_and_solution(solution, lesson)
    assert not starter_and_solution("notebooks/05_y.ipynb cell 20", solution)
