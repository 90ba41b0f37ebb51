"""Which tests touch a backend: a pytest plugin that counts botocore requests and started processes per test.

    RETRY_BACKEND=moto python -m pytest tests/test_wire.py -p tools.backend_calls -p no:cacheprovider -n 2
    python -m tools.backend_calls /tmp/retry-backend-calls          # the table again, from the saved counts

Every botocore request (`Endpoint.make_request`: moto's in-process mock answers inside it, so moto's requests
count as DynamoDB Local's do), by service, and every `subprocess.Popen` (a kernel, a server, a browser: "kernel"
below), made while a test sets up, runs or tears down. A fixture of wider scope (module, session) is set up once;
what it requested is charged to every test that uses it, and a module's import (collection) to every test in it.
A test skipped on this backend is not counted as requestless: it may run on another.

Each process writes its counts to $RETRY_BACKEND_CALLS (default /tmp/retry-backend-calls/<worker>.json); the
process that reports (xdist's controller, or the only one) prints one line per file: tests, tests with zero
requests (and not skipped, and no process started), and lists those tests' node ids in `zero.txt` beside them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

OUT = Path(os.environ.get("RETRY_BACKEND_CALLS", "/tmp/retry-backend-calls"))

_now: Counter = Counter()          # what the current phase has requested/started so far


def _install() -> None:
    from botocore.endpoint import Endpoint

    if getattr(Endpoint.make_request, "_counted", False):
        return
    make_request = Endpoint.make_request

    def counted_make_request(self: Any, operation_model: Any, request_dict: Any) -> Any:
        _now[operation_model.service_model.service_name] += 1
        return make_request(self, operation_model, request_dict)

    counted_make_request._counted = True  # type: ignore[attr-defined]
    Endpoint.make_request = counted_make_request  # type: ignore[method-assign]

    popen_init = subprocess.Popen.__init__

    def counted_popen(self: Any, *args: Any, **kwargs: Any) -> None:
        _now["kernel"] += 1
        command = args[0] if args else kwargs.get("args", "")
        first = command if isinstance(command, (str, bytes, os.PathLike)) else (list(command) or [""])[0]
        _now["process:" + os.path.basename(str(first)).split()[0] if str(first).strip() else "process:?"] += 1
        popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = counted_popen  # type: ignore[method-assign]


class BackendCalls:
    def __init__(self) -> None:
        self.tests: dict[str, dict[str, Any]] = {}
        self.fixtures: dict[tuple[str, str], Counter] = {}     # (baseid, argname) of a wider-scoped fixture
        self.modules: dict[str, Counter] = defaultdict(Counter)
        self.skipped: set[str] = set()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: Any) -> Any:
        before = Counter(_now)
        yield
        if isinstance(collector, pytest.Module):
            self.modules[str(collector.path.name)] += Counter(_now) - before

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
        before = Counter(_now)
        yield
        if fixturedef.scope != "function":
            self.fixtures[(fixturedef.baseid, fixturedef.argname)] = Counter(_now) - before

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        before = Counter(_now)
        wider_before = set(self.fixtures)
        yield
        own = Counter(_now) - before
        # a wider-scoped fixture set up during this test was counted in `own`; one set up before is charged here
        inherited: Counter = Counter()
        for (baseid, argname), made in self.fixtures.items():
            if (baseid, argname) in wider_before and argname in getattr(item, "fixturenames", ()) \
                    and item.nodeid.startswith(baseid):
                inherited += made
        inherited += self.modules.get(item.path.name, Counter())
        self.tests[item.nodeid] = {"file": item.path.name, "own": dict(own), "inherited": dict(inherited),
                                   "skipped": item.nodeid in self.skipped}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.skipped:
            self.skipped.add(report.nodeid)

    def pytest_sessionfinish(self, session: Any) -> None:
        if not self.tests:          # xdist's controller: the workers ran the tests
            return
        OUT.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        (OUT / f"{worker}.json").write_text(json.dumps(self.tests, indent=0))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "backend requests per test (tools.backend_calls)")
        for line in table(OUT):
            terminalreporter.write_line(line)


def zero(entry: dict[str, Any]) -> bool:
    return not entry["skipped"] and not any(entry["own"].values()) and not any(entry["inherited"].values())


def table(folder: Path) -> list[str]:
    tests: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        tests.update(json.loads(path.read_text()))
    by_file: dict[str, list[str]] = defaultdict(list)
    for nodeid, entry in tests.items():
        by_file[entry["file"]].append(nodeid)
    lines = [f"{'file':<40} {'tests':>6} {'zero':>6} {'skipped':>8} {'kernel':>7}  requests"]
    for name in sorted(by_file):
        ids = by_file[name]
        services: Counter = Counter()
        for nodeid in ids:
            services += Counter(tests[nodeid]["own"]) + Counter(tests[nodeid]["inherited"])
        kernel = sum(1 for n in ids if tests[n]["own"].get("kernel") or tests[n]["inherited"].get("kernel"))
        lines.append(f"{name:<40} {len(ids):>6} {sum(zero(tests[n]) for n in ids):>6} "
                     f"{sum(tests[n]['skipped'] for n in ids):>8} {kernel:>7}  "
                     + ", ".join(f"{s} {c}" for s, c in sorted(services.items()) if s != "kernel"))
    lines.append("(kernel: tests that started a process; process:<program>: how many of each, whatever it did)")
    (folder / "zero.txt").write_text("".join(f"{n}\n" for n in sorted(tests) if zero(tests[n])))
    return lines


def pytest_configure(config: Any) -> None:
    _install()
    if not hasattr(config, "workerinput"):
        for stale in OUT.glob("*.json"):
            stale.unlink()
    config.pluginmanager.register(BackendCalls(), "retry-backend-calls")


if __name__ == "__main__":
    print("\n".join(table(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)))
