"""Every notebook survives "Restart & Run All", then every cell run again in the same kernel.

A workshop attendee restarts, runs everything, then goes back and re-runs cells. Each
notebook's setup must be idempotent and its "check yourself" asserts must still hold the
second time round. This runs each notebook in a real Jupyter kernel (jupyter_client's
KernelManager, in the notebook's folder, on the backend RETRY_BACKEND names):

1. every code cell in order (Restart & Run All): no cell raises, except cells marked
   `# NBVAL_RAISES_EXCEPTION` or tagged `raises-exception`;
2. every code cell in order again, in the same kernel: the same;
3. the second run prints the same text as the first, for cells whose output nbval compares.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager
from nbformat.v4 import output_from_msg

from notebook_kernel import (
    CELL_TIMEOUT_SECONDS, CellRun, code_cells, kernel_env, may_raise, notebook_id, notebook_paths,
    output_not_compared, read,
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
        from helpers.dynamodb_local import DynamoDBLocalServer, DynamoDBLocalUnavailable

        try:
            server = DynamoDBLocalServer()
        except DynamoDBLocalUnavailable as error:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"DynamoDB Local unavailable: {error}")
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
    nb = read(path)
    cells = list(code_cells(nb))
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(path.parent), env=env)
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        first = [run_cell(client, i, cell.source) for i, cell in cells]
        second = [run_cell(client, i, cell.source) for i, cell in cells]
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
