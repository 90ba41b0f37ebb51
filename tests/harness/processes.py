"""Processes a test starts or watches: whether one is alive, stopping one, a DynamoDB Local of the test's own.

`alive(pid)` counts a zombie (exited, not yet reaped by its parent) as dead. `stop(process)` asks a process to
end and kills it if it does not within `timeout`. `own_dynamodb_local()` starts a DynamoDB Local server for the
caller alone, or skips the test where none can be had (outside CI; in CI that is a failure).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest


def alive(pid: int) -> bool:
    """Whether process `pid` runs: it exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def stop(process: subprocess.Popen, timeout: float) -> None:
    """Terminate `process`; kill it if it has not ended after `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def own_dynamodb_local() -> Any:
    """A DynamoDB Local server of the caller's own (stop it when done); skips the test where none can be started,
    except in CI, where that is an error."""
    from helpers.fidelity.dynamodb_local import DynamoDBLocalServer, DynamoDBLocalUnavailable

    try:
        return DynamoDBLocalServer()
    except DynamoDBLocalUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"DynamoDB Local unavailable: {error}")
