"""Nothing outlives its kernel, and kernels sharing one DynamoDB Local keep their tables apart.

- A process that started DynamoDB Local and is then killed (SIGKILL: no atexit, no clean-up; or SIGTERM)
  must not leave the JVM running: the launcher watches its parent and exits.
- Two kernels on one DynamoDB Local (RETRY_DYNAMODB_ENDPOINT, as a workshop room shares one server) run the
  same notebook at the same time: each gets tables of its own, and both reproduce the committed outputs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness.processes import alive

import helpers

# One tier is enough: these start a DynamoDB Local of their own, whatever the tier's backend.
pytestmark = pytest.mark.skipif(helpers.backends.backend_name() != "dynamodb-local",
                                reason="runs in the dynamodb-local tier")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_request_id_increments.ipynb"

START = """
import os, helpers
db = helpers.connect("dynamodb-local")
print(db._server._process.pid, flush=True)
import time
time.sleep(600)
"""


def java_available() -> None:
    from helpers.fidelity.dynamodb_local import DynamoDBLocalUnavailable, find_jar_dir, java_command

    try:
        java_command()
        find_jar_dir()
    except DynamoDBLocalUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"DynamoDB Local unavailable: {error}")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_dynamodb_local_goes_with_the_process_that_started_it(sig):
    java_available()
    env = {k: v for k, v in os.environ.items() if k != "RETRY_DYNAMODB_ENDPOINT"}
    owner = subprocess.Popen([sys.executable, "-c", START], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        java_pid = int(owner.stdout.readline())
        assert alive(java_pid)
        owner.send_signal(sig)
        owner.wait(timeout=30)
        deadline = time.monotonic() + 15
        while alive(java_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(java_pid), f"DynamoDB Local (pid {java_pid}) outlived its {sig.name}ed parent"
    finally:
        if owner.poll() is None:
            owner.kill()


def test_two_kernels_on_one_dynamodb_local_keep_their_tables_apart():
    java_available()
    from helpers.fidelity.dynamodb_local import DynamoDBLocalServer

    server = DynamoDBLocalServer()
    try:
        env = dict(os.environ, RETRY_BACKEND="dynamodb-local", RETRY_DYNAMODB_ENDPOINT=server.endpoint_url,
                   PYTHONHASHSEED="0")
        command = [sys.executable, "-m", "pytest", str(NOTEBOOK), "--nbval", "--nbval-current-env",
                   "-p", "no:cacheprovider", "-q"]
        runs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for _ in range(2)]
        outputs = [run.communicate(timeout=600)[0] for run in runs]
        for run, output in zip(runs, outputs):
            assert run.returncode == 0, output[-4000:]
        import boto3

        client = boto3.client("dynamodb", endpoint_url=server.endpoint_url, region_name="us-east-1",
                              aws_access_key_id="dummy", aws_secret_access_key="dummy")
        names = client.list_tables()["TableNames"]
        assert "wallets-03" not in names, "a kernel used the fixed name on a shared server"
    finally:
        server.stop()
