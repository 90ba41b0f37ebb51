"""Shared fixtures: the backend under test (RETRY_BACKEND), fresh tables, notebook code."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

import helpers

# Property-based tests: derandomized, so a CI run is reproducible; `HYPOTHESIS_PROFILE=explore` searches afresh.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_names = itertools.count()


def _quiet_kernels() -> None:
    """Kernels started by the tests (nbval's, the hygiene walk's) log only errors of their own start-up.

    ipykernel warns "Kernel is running over TCP without encryption" on every start, on stderr: noise in
    every test log. A private IPython profile (IPYTHONDIR, inherited by each kernel) sets the kernel
    application's log level; the notebooks' own warnings and outputs are untouched.
    """
    if os.environ.get("IPYTHONDIR", "").endswith("retry-test-ipython"):
        return
    folder = os.path.join(tempfile.mkdtemp(), "retry-test-ipython")
    os.makedirs(os.path.join(folder, "profile_default"))
    with open(os.path.join(folder, "profile_default", "ipython_kernel_config.json"), "w") as config:
        json.dump({"IPKernelApp": {"log_level": "ERROR"}}, config)
    os.environ["IPYTHONDIR"] = folder
    atexit.register(shutil.rmtree, os.path.dirname(folder), True)


_quiet_kernels()


@pytest.fixture(scope="session")
def db() -> helpers.backends.Backend:
    return helpers.connect()


@pytest.fixture
def fresh(db):
    """Make an empty table with a name unique to this test run: ``fresh(sdk_retries=True)``."""

    def make(**options):
        return helpers.fresh_table(db, f"test-{os.getpid()}-{next(_names)}", **options)

    return make


@pytest.fixture
def table(fresh):
    return fresh()


@pytest.fixture
def sqs(db):
    """moto's SQS on a virtual clock of its own: ``client, clock = sqs`` (the wall clock back afterwards)."""
    from helpers.fidelity.sqs_clock import use_virtual_time, use_wall_clock

    clock = helpers.VirtualClock()
    use_virtual_time(clock)
    yield db.sqs(), clock
    use_wall_clock()


# --- tests that do not touch a backend run once, on the moto tier ---------------------------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "backend_independent: reads files or libraries only (rendering, chapter shape, packaging); "
        "run on the moto tier only, since another backend would repeat the same check")


LESSON_10 = ("test_postgres.py", "test_lesson_10.py", "10_postgres_shaped.ipynb", "10_postgres_shaped_solution.ipynb")


def _needs_postgres(item) -> bool:
    """A test of lesson 10: its files, nbval's cells of its notebooks, or a test parametrized with one of them."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    names = [item.path.name] + [Path(str(v)).name for v in params.values() if isinstance(v, (str, os.PathLike))]
    return any(name in LESSON_10 for name in names)


def _skip_lesson_10_without_postgres(items) -> None:
    """Where no Postgres can be had (helpers.postgres.NO_EMBEDDED_POSTGRES), lesson 10's tests skip with that
    sentence; in CI (CI set) they run, and fail with it: CI must find a Postgres."""
    from helpers.postgres import unavailable_reason

    reason = unavailable_reason()
    if reason is None or os.environ.get("CI"):
        return
    for item in items:
        if _needs_postgres(item):
            item.add_marker(pytest.mark.skip(reason=reason))


# The files that take longest (minutes per tier, measured in CI), run first: under xdist (whole files per worker,
# tools/run_tests.py passes --no-loadscope-reorder) a long file started last keeps one worker busy while the
# other has nothing left, and xdist's own order puts files with few tests -- these -- last.
LONGEST_FIRST = ("test_notebook_hygiene.py", "test_properties.py", "test_concurrency.py", "test_browser.py",
                 "test_specification_lessons.py")


def pytest_collection_modifyitems(config, items):
    """Lesson 10 without a Postgres: skip its tests (above). The longest files first (a stable sort: each file's
    tests keep their order). On a tier other than moto, deselect the tests marked backend_independent (they ran
    on moto)."""
    _skip_lesson_10_without_postgres(items)
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
               else len(LONGEST_FIRST))
    backend = helpers.backends.backend_name()
    if backend == "moto":
        return
    keep = [item for item in items if item.get_closest_marker("backend_independent") is None]
    dropped = [item for item in items if item.get_closest_marker("backend_independent") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        from summary_lines import summary

        files = sorted({item.path.name for item in dropped})
        summary(f"backend-independent on {backend}").append(
            f"{len(dropped)} tests in {len(files)} files run on the moto tier only: {', '.join(files)}")


# --- one terminal summary for every module's counts (tests/summary_lines.py), under xdist too -------------

_from_workers: dict[str, list[str]] = {}


def pytest_sessionfinish(session):
    from summary_lines import collected

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:                       # an xdist worker: hand the lines to the controller
        workeroutput["summary_lines"] = json.dumps(collected())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for title, lines in json.loads(getattr(node, "workeroutput", {}).get("summary_lines", "{}")).items():
        _from_workers.setdefault(title, []).extend(lines)


def pytest_terminal_summary(terminalreporter):
    from summary_lines import collected

    sections = collected()
    for title, lines in _from_workers.items():
        sections.setdefault(title, []).extend(lines)
    for title, lines in sections.items():
        if title.startswith("backend-independent"):   # every worker deselected the same tests: say it once
            lines = list(dict.fromkeys(lines))
        terminalreporter.write_sep("-", title)
        for line in lines:
            terminalreporter.write_line(line)
