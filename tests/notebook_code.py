"""Run a notebook's own code in a test: the cells tagged `imports` and `lesson`.

Tests exercise exactly the functions a reader sees and edits, not a copy of them. The loader is the
helpers' own (`helpers.lessons.run_cells`, which notebook 10's `load_lesson` uses too); here it prints
what the cells print and keeps the display settings they set.
"""

from __future__ import annotations

from typing import Any

from helpers.lessons import NOTEBOOKS, lesson_cells, run_cells

__all__ = ["NOTEBOOKS", "cells", "lesson"]


def cells(notebook: str, tag: str) -> list[str]:
    """The source of `notebook`'s code cells tagged `tag`, in order."""
    return lesson_cells(notebook, tag)


def lesson(notebook: str, **globals_: Any) -> dict[str, Any]:
    """The notebook's namespace after its `imports` and `lesson` cells, with `globals_` set first.

    The `imports` cell also connects to the backend and creates the notebook's table; tests
    override what they need (e.g. ``table=...``) after it runs.
    """
    return run_cells(notebook, globals_, name=f"notebook:{notebook}")


def exercise_starter(notebook: str, name: str) -> Any:
    """The reader's function as a lesson's *Your turn* leaves it: the lesson's code, then its `exercise` cell."""
    namespace = lesson(notebook)
    exec(cells(notebook, "exercise")[0], namespace)
    return namespace[name]


def exercise_solution(notebook: str, name: str) -> Any:
    """The same function as the exercise's solution notebook writes it."""
    return lesson(f"solutions/{notebook.removesuffix('.ipynb')}_solution.ipynb")[name]
