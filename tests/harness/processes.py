"""Processes a test starts or watches: whether one is alive, waiting for a server, stopping one, a DynamoDB Local.

`alive(pid)` counts a zombie (exited, not yet reaped by its parent) as dead. `wait_until_it_answers` waits for
a server the test started; `stop(process)` asks a process to end and kills it if it does not within `timeout`.
`own_dynamodb_local()` starts a DynamoDB Local server for the caller alone, or skips the test where none can be
had (outside CI; in CI that is a failure).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

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


def wait_until_it_answers(process: subprocess.Popen, log: IO[str], answers: Callable[[], bool], timeout: float,
                          what: str) -> None:
    """Poll `answers()` until it is true; fail the test, with the end of `log`, if `process` exits first or
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while not answers():
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            exited = process.poll() is not None
            how = f"exited ({process.returncode})" if exited else f"did not answer within {timeout} s"
            pytest.fail(f"{what} {how} at start-up:\n{log.read()[-3000:]}")
        time.sleep(0.2)


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
