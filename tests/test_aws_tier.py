"""The `aws` backend's own code path, against DynamoDB Local standing in for AWS.

RETRY_BACKEND=aws with the opt-in, dummy credentials and AWS_ENDPOINT_URL_DYNAMODB pointing at a DynamoDB
Local: the code that would talk to a real account (credentials from the environment, the endpoint botocore
resolves, unique table names, deletion at exit) runs for real, and costs nothing. Notebook 03 must reproduce its
committed outputs under strict nbval there, and leave no table behind; `make aws-cleanup` deletes what a
killed kernel left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from harness.processes import own_dynamodb_local

import helpers

# One tier is enough: these start a DynamoDB Local of their own, whatever the tier's backend.
pytestmark = pytest.mark.skipif(helpers.backends.backend_name() != "dynamodb-local",
                                reason="runs in the dynamodb-local tier")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_request_id_increments.ipynb"


@pytest.fixture(scope="module")
def endpoint():
    server = own_dynamodb_local()   # even in the dynamodb-local tier: the clean-up deletes every run's tables on it
    try:
        yield server.endpoint_url
    finally:
        server.stop()


def aws_env(endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RETRY_"))}
    env.update(RETRY_BACKEND="aws", RETRY_AWS_OPT_IN="yes ", AWS_ACCESS_KEY_ID="dummy",
               AWS_SECRET_ACCESS_KEY="dummy", AWS_REGION="us-east-1", AWS_ENDPOINT_URL_DYNAMODB=endpoint,
               AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, PYTHONHASHSEED="0")
    return env


def tables(endpoint: str) -> list[str]:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="dummy", aws_secret_access_key="dummy")
    return sorted(client.list_tables()["TableNames"])


def aws_cleanup(endpoint: str) -> subprocess.CompletedProcess:
    """What `make aws-cleanup` runs (the Makefile's recipe, checked below), in this environment."""
    code = "import sys; from helpers.backends import main; sys.exit(main(['--delete-leftovers']))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=aws_env(endpoint), capture_output=True,
                          text=True, timeout=120)


def test_make_aws_cleanup_runs_the_same_command():
    makefile = (ROOT / "Makefile").read_text()
    assert "aws-cleanup:" in makefile and "from helpers.backends import main" in makefile
    assert "'--delete-leftovers'" in makefile


PROBE = """
import helpers, json
db = helpers.connect()
table = helpers.fresh_table(db, "wallets-03")
helpers.open_wallet(table, "w", 5)
print(json.dumps({"name": table.name, "backend": db.name, "balance": helpers.read_balance(table, "w")}))
"""


def test_aws_gets_unique_table_names_and_deletes_them_at_exit(endpoint):
    before = tables(endpoint)
    runs = [subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=aws_env(endpoint), capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    import json

    names = [json.loads(r.stdout.strip().splitlines()[-1])["name"] for r in runs]
    assert names[0] != names[1] and all(n.startswith("wallets-03-run") for n in names)
    assert tables(endpoint) == before, "a run left its tables behind"


def test_notebook_03_reproduces_on_the_aws_code_path(endpoint):
    before = tables(endpoint)
    done = subprocess.run([sys.executable, "-m", "pytest", str(NOTEBOOK), "--nbval", "--nbval-current-env",
                           "-p", "no:cacheprovider", "-q"], cwd=ROOT, env=aws_env(endpoint), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:]
    # nbval kills its kernel (shutdown_kernel(now=True)), as a crash would: its tables stay, named as a run's,
    # and `make aws-cleanup` deletes them.
    left = [n for n in tables(endpoint) if n not in before]
    assert left and all("-run" in n for n in left), left
    cleanup = aws_cleanup(endpoint)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert tables(endpoint) == before


def test_aws_cleanup_deletes_what_a_killed_kernel_left(endpoint):
    killed = subprocess.run([sys.executable, "-c", PROBE + "\nimport os; os._exit(0)  # no atexit: as SIGKILL"],
                            cwd=ROOT, env=aws_env(endpoint), capture_output=True, text=True, timeout=120)
    assert killed.returncode == 0, killed.stderr[-2000:]
    left = [n for n in tables(endpoint) if n.startswith("wallets-03-run")]
    assert left, "the killed process should have left its table"
    cleanup = aws_cleanup(endpoint)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert f"deleting {left[0]}" in cleanup.stdout
    assert not [n for n in tables(endpoint) if n.startswith("wallets-03-run")]
