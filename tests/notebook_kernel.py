"""Run a notebook's code cells in a real Jupyter kernel, the way a reader does.

Used by the hygiene and server tests. Unlike nbval (which compares outputs) and
nbclient (which runs a notebook once), this keeps one kernel alive so a test can
run every cell, then every cell again, and look at what each run printed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from notebook_list import notebooks  # noqa: E402

CELL_TIMEOUT_SECONDS = 300
_RAISES = re.compile(r"^\s*#\s*NBVAL_RAISES_EXCEPTION\b", re.MULTILINE)
_IGNORE_OUTPUT = re.compile(r"^\s*#\s*NBVAL_(IGNORE_OUTPUT|SKIP)\b", re.MULTILINE)


def notebook_paths() -> list[Path]:
    """Every committed notebook (lessons, then solutions), as it exists right now."""
    return notebooks()


def notebook_id(path: Path) -> str:
    return str(path.relative_to(ROOT / "notebooks"))


def code_cells(nb: Any) -> Iterator[tuple[int, Any]]:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            yield index, cell


def tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def may_raise(cell: Any) -> bool:
    """The cell is marked to raise on purpose (nbval comment or cell tag)."""
    return "raises-exception" in tags(cell) or bool(_RAISES.search(cell.source))


def output_not_compared(cell: Any) -> bool:
    """nbval does not compare this cell's output (so it may vary between runs)."""
    return bool({"nbval-ignore-output", "nbval-skip"} & set(tags(cell))) or bool(_IGNORE_OUTPUT.search(cell.source))


@dataclass
class CellRun:
    """What one execution of one cell produced."""

    index: int
    status: str = "ok"
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [o for o in self.outputs if o.get("output_type") == "error"]

    def error_text(self) -> str:
        return "\n".join(f"{e.get('ename')}: {e.get('evalue')}" for e in self.errors) or self.status

    def text(self) -> str:
        """The outputs as text, the way nbval compares them (stdout/stderr and text/plain)."""
        parts = []
        previous_stream = None
        for o in self.outputs:
            if o.get("output_type") == "stream":
                # a stream may arrive in several messages; nbval merges them, and so do we
                marker = "" if o.get("name") == previous_stream else f"[{o.get('name')}]"
                parts.append(marker + o.get("text", ""))
                previous_stream = o.get("name")
                continue
            previous_stream = None
            if o.get("output_type") in ("execute_result", "display_data"):
                parts.append(o.get("data", {}).get("text/plain", ""))
            elif o.get("output_type") == "error":
                parts.append(f"[error]{o.get('ename')}: {o.get('evalue')}")
        return "".join(parts)


def read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)


def kernel_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.update(extra or {})
    return env
