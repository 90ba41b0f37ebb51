"""Every code cell can be run twice in a row at any point of a first walk-through, and the lesson still holds.

A workshop attendee runs the notebook top to bottom and, anywhere along the way, runs a cell again before
going on. This walks each notebook once in a real Jupyter kernel (jupyter_client's KernelManager, in the
notebook's folder, on the backend RETRY_BACKEND names), running every code cell twice in a row before the
next one -- so each cell's second run, and every cell after it, happen after a re-run, in one kernel:

1. no cell's first run raises (nor reports an error status: an unknown magic's UsageError is one), except
   cells marked `# NBVAL_RAISES_EXCEPTION` or tagged `raises-exception`; strict nbval checks a plain
   Restart & Run All;
2. no cell's second run raises: its own asserts, and every later cell's, still hold;
3. the second run prints the same text as the first, for cells whose output nbval compares;
4. cells marked to raise really raise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness.processes import own_dynamodb_local
from jupyter_client.manager import KernelManager
from nbformat.v4 import output_from_msg

from notebook_kernel import (
    CELL_TIMEOUT_SECONDS,
    CellRun,
    code_cells,
    kernel_env,
    may_raise,
    notebook_id,
    notebook_paths,
    output_not_compared,
    read,
)

NOTEBOOKS = notebook_paths()


@pytest.fixture(scope="module")
def backend_env():
    """Environment for the kernels: on dynamodb-local, one DynamoDB Local for the whole module."""
    extra: dict[str, str] = {}
    server = None
    if os.environ.get("RETRY_BACKEND", "moto").strip().lower() == "dynamodb-local" and not os.environ.get(
        "RETRY_DYNAMODB_ENDPOINT"
    ):
        server = own_dynamodb_local()
        extra["RETRY_DYNAMODB_ENDPOINT"] = server.endpoint_url
    try:
        yield kernel_env(extra)
    finally:
        if server is not None:
            server.stop()


def run_cell(client, index: int, source: str) -> CellRun:
    run = CellRun(index)

    def on_output(msg):
        if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
            run.outputs.append(dict(output_from_msg(msg)))

    reply = client.execute_interactive(
        source, store_history=True, allow_stdin=False, timeout=CELL_TIMEOUT_SECONDS, output_hook=on_output
    )
    run.status = reply["content"]["status"]
    if run.status == "error" and not run.errors:  # an error reply without an error output
        content = reply["content"]
        run.outputs.append({"output_type": "error", "ename": content.get("ename"), "evalue": content.get("evalue")})
    return run


def run_twice(path: Path, env: dict[str, str]) -> tuple[list[CellRun], list[CellRun]]:
    """One walk through the notebook, each code cell run twice in a row: (first runs, second runs)."""
    nb = read(path)
    cells = list(code_cells(nb))
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(path.parent), env=env)
    client = km.client()
    client.start_channels()
    first: list[CellRun] = []
    second: list[CellRun] = []
    try:
        client.wait_for_ready(timeout=120)
        for i, cell in cells:
            first.append(run_cell(client, i, cell.source))
            second.append(run_cell(client, i, cell.source))
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=False)
    return first, second


def unexpected_errors(nb, runs: list[CellRun]) -> list[str]:
    problems = []
    for run in runs:
        cell = nb.cells[run.index]
        if (run.errors or run.status != "ok") and not may_raise(cell):
            first_line = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            problems.append(f"cell {run.index} ({first_line[:60]!r}): {run.error_text()}")
    return problems


@pytest.fixture(scope="module")
def executions(backend_env):
    cache: dict[Path, tuple[list[CellRun], list[CellRun]]] = {}

    def get(path: Path):
        if path not in cache:
            cache[path] = run_twice(path, backend_env)
        return cache[path]

    return get


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_id)
def test_restart_and_run_all_raises_nothing(path, executions):
    first, _ = executions(path)
    problems = unexpected_errors(read(path), first)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_id)
def test_running_every_cell_again_raises_nothing_and_the_checks_still_hold(path, executions):
    _, second = executions(path)
    problems = unexpected_errors(read(path), second)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_id)
def test_running_every_cell_again_prints_the_same(path, executions):
    nb = read(path)
    first, second = executions(path)
    differ = [
        f"cell {a.index}:\n--- first run\n{a.text()}\n--- second run\n{b.text()}"
        for a, b in zip(first, second)
        if not output_not_compared(nb.cells[a.index]) and a.text() != b.text()
    ]
    assert not differ, "a second run printed something else:\n\n" + "\n\n".join(differ)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_id)
def test_marked_cells_really_raise(path, executions):
    """A cell marked raises-exception that stops raising has lost its lesson (nbval checks this too)."""
    nb = read(path)
    first, _ = executions(path)
    silent = [run.index for run in first if may_raise(nb.cells[run.index]) and not run.errors]
    assert silent == []
