"""Run a notebook's own code in a test: the cells tagged `imports` and `lesson`.

Tests exercise exactly the functions a reader sees and edits, not a copy of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def cells(notebook: str, tag: str) -> list[str]:
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def lesson(notebook: str, **globals_: Any) -> dict[str, Any]:
    """The notebook's namespace after its `imports` and `lesson` cells, with `globals_` set first.

    The `imports` cell also connects to the backend and creates the notebook's table; tests
    override what they need (e.g. ``table=...``) after it runs.
    """
    namespace: dict[str, Any] = {"__name__": f"notebook:{notebook}"}
    for source in cells(notebook, "imports"):
        exec(compile(source, f"{notebook}[imports]", "exec"), namespace)
    namespace.update(globals_)
    for source in cells(notebook, "lesson"):
        exec(compile(source, f"{notebook}[lesson]", "exec"), namespace)
    return namespace
