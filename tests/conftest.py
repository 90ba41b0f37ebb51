"""Shared fixtures: the backend under test (RETRY_BACKEND), fresh tables, notebook code."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import runpy
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

# The tests' processes collect cyclic garbage less often than Python's default (700 allocations): the checker and
# moto allocate millions of short-lived objects, and at the default the collector ran so often that raising the
# first threshold took 13% of the CPU off test_specification_lessons.py + test_exercises_checker.py (44-46 s of
# user time to 38-40, measured twice each for issue 37). Reference counting still frees everything not in a cycle
# at once; cycles are collected, only later. The setting is the one make test's kernels start with
# (harness/gc_startup.py, their PYTHONSTARTUP); learners' kernels keep Python's default.
runpy.run_path(str(Path(__file__).parent / "harness" / "gc_startup.py"))

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


# --- tests whose outcome no backend can change run once, on the moto tier (issue 37) ----------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "backend_independent: reads files or libraries only (rendering, chapter shape, packaging); "
        "run on the moto tier only, since another backend would repeat the same check")


# A test runs on the other tiers only where their backend can change its outcome. Besides the tests marked
# backend_independent (in their own files), this table names what runs on the moto tier only -- kept here, not in
# the test files, so one place says what each tier runs. Keys: "file.py" (the whole file), "file.py::test_name"
# (every parametrization of it), "file.py::test_name[id]" (one). "no request" was measured: tools/backend_calls.py
# counts each test's botocore requests (moto's included) and the processes it starts, fixtures and imports
# included; these made none and started none. A test added to those files runs on every tier until listed here.
MOTO_ONLY: dict[str, tuple[str, tuple[str, ...]]] = {
    "no request": (
        "no DynamoDB/SQS request, no process (measured): bad input, clocks, fakes",
        ("test_copies.py", "test_gateway.py", "test_swimlanes.py",
         *(f"test_backends.py::{t}" for t in (
             "test_a_shared_dynamodb_local_gives_each_process_its_own_tables", "test_aws_needs_explicit_opt_in",
             "test_dynamodb_local_without_java_says_what_to_install",
             "test_dynamodb_local_without_the_package_says_what_to_install",
             "test_sdk_retries_make_three_attempts_one_fewer_than_botocores_dynamodb_default",
             "test_surrounding_spaces_are_ignored_alike_in_the_name_and_the_opt_in",
             "test_unknown_backend_names_the_choices")),
         *(f"test_bad_input.py::{t}" for t in ("test_dynamodb_limits_are_refused_first_by_name",
                                               "test_the_limits_themselves_are_accepted",
                                               "test_there_are_at_least_ten_bad_inputs")),
         "test_callers.py::test_a_callers_error_is_its_result_and_a_bad_sleep_is_refused",
         "test_callers.py::test_callers_wake_in_virtual_time_order_and_nothing_waits",
         "test_capacity.py::test_item_size_follows_the_documented_rules",
         "test_doctests.py::test_the_examples_are_found",
         *(f"test_doctests.py::test_docstring_examples_hold[helpers.{m}]" for m in (   # not helpers.checker's
             "callers", "clock", "dynamodb_errors", "events", "faults", "http_faults", "ids", "schedule",
             "services.gateway", "swimlanes", "wire")),
         *(f"test_dynamodb_errors.py::{t}" for t in ("test_a_seeded_schedule_is_the_same_every_run",
                                                     "test_bad_schedules_are_refused_by_name",
                                                     "test_botocore_rules_for_answers_no_helper_produces",
                                                     "test_the_doctests_hold")),
         *(f"test_faults.py::{t}" for t in ("test_a_schedule_must_let_responses_through",
                                            "test_install_rejects_what_is_not_a_client",
                                            "test_request_ids_are_seeded_uuids", "test_schedules_are_seeded")),
         "test_http_contract.py::test_a_bare_tenacity_retry_retries_any_exception_forever_without_waiting",
         "test_http_contract.py::test_urllib3_retries_a_refused_post_with_the_default_allowed_methods",
         *(f"test_http_server.py::{t}" for t in (
             "test_a_held_answer_is_sent_late_to_a_client_that_never_gives_up",
             "test_a_keep_alive_connection_does_not_keep_the_server_alive",
             "test_a_lost_answer_is_committed_and_never_sent", "test_bad_arguments_are_refused_before_anything_starts",
             "test_bad_schedules_are_refused", "test_close_needs_uvicorn", "test_server_class_is_what_serve_returns",
             "test_serving_again_under_a_name_replaces_the_server",
             "test_start_serves_and_stop_leaves_no_thread_process_or_port",
             "test_stopping_while_an_answer_is_held_still_leaves_nothing")),
         "test_lesson_05.py::test_time_in_items_is_stated_in_05_and_linked_from_06_and_07",
         *(f"test_lesson_06.py::{t}" for t in (
             "test_powertools_clock_bad_input", "test_powertools_reads_the_virtual_clock_only_inside_the_block",
             "test_provider_bad_input_charges_nothing",
             "test_provider_keys_up_to_255_characters_down_means_nothing_charged_and_watchers_hear_each_answer",
             "test_provider_replays_a_key_refuses_a_changed_charge_and_forgets_after_the_window",
             "test_provider_window_must_be_positive")),
         "test_lesson_08.py::test_the_checker_names_each_answer_it_injects",
         "test_lesson_10.py::test_call_with_passes_what_the_signature_names",
         "test_lesson_10.py::test_load_lesson_names_a_missing_notebook",
         *(f"test_queues.py::{t}" for t in ("test_a_bad_visibility_timeout_is_refused",
                                            "test_bad_crash_numbers_are_refused", "test_the_handler_must_be_callable")),
         "test_resends.py::test_attempts_must_be_a_whole_number_of_at_least_one",
         *(f"test_specification.py::{t}" for t in (     # histories written by hand, judged by the checker alone
             "test_a_replay_that_differs_breaks_truthful_and_a_success_for_another_payload_breaks_bound",
             "test_an_answer_that_says_nothing_was_written_while_money_moved_breaks_truthful",
             "test_answers_are_classified_by_what_they_tell_the_caller",
             "test_money_must_match_the_answers_per_wallet",
             "test_truthful_a_resend_after_success_gets_the_first_answer_not_a_refusal",
             "test_useful_a_refusal_needs_a_reason_in_the_model")),
         "test_sqs_clock.py::test_bad_input", "test_sqs_clock.py::test_wall_clock_comes_back",
         "test_wire.py::test_client_of_names_what_it_was_given", "test_wire.py::test_the_order_is_stated_once")),
    "Postgres": (
        "lesson 10's Postgres: no DynamoDB request (measured), only Postgres's processes",
        ("test_postgres.py", "test_exercises_specification.py::test_10_the_solution_passes_the_scenarios_and_the_"
                             "specification")),
    "a notebook's own check": (
        # Notebook 11 runs check_handler(pay_powertools, histories=200, steps=5) -- this test's first call -- and
        # asserts it breaks truthful in two steps, under strict nbval on every tier. (It took 42 s on DynamoDB Local.)
        "a notebook asserts the same call under strict nbval on every tier",
        ("test_specification.py::test_powertools_in_lambda_gives_up_truthful",)),
    "hygiene walk": (
        # Every cell run twice in a real kernel: a property of the notebook's own Python state (a cell that cannot
        # be run again). What a rerun asks of the backend -- fresh_table on an existing table, with and without a
        # sort key; a stream table deleted and made again -- runs on every tier in test_backends.py
        # (test_connect_is_reused_and_tables_are_created_idempotently), the exercises' checkers (fresh_table per
        # history, sort key "sk") and test_lesson_07.py; strict nbval runs every notebook on every tier.
        "each cell twice: the notebook's Python state; strict nbval runs on both",
        ("test_notebook_hygiene.py",)),
    "checker's score": (
        # The wrong handlers measure the checker's search -- backend-independent logic -- though each makes requests.
        # Kept on every tier (CHECKER_SCORE_EVERY_TIER): the entries whose mistake is in what DynamoDB evaluates -- a
        # condition, a transaction's grouping, a cancellation's reasons, ClientRequestToken, ALL_OLD -- and the
        # controls of their kinds, so a refusal there comes from the mistake on that backend too.
        "the checker's search; on both only entries wrong in a DynamoDB semantic",
        ("test_checker_score.py",)),
}
CHECKER_SCORE_EVERY_TIER = tuple(f"test_checker_score.py::{test}[{name}]" for test, names in (
    ("test_the_checker_refuses_the_wrong_handler", (
        "06 claim without the fingerprint", "06 claim never taken over", "06 complete not fenced",   # conditions
        "ledger marker attribute_exists", "ledger marker kept 60 s",
        "06 marker and debit in two writes", "ledger marker outside the transaction",               # transactions
        "06 every cancellation already debited", "ledger swallowing every ClientError",             # cancellations
        "ledger cancellations as WalletNotFound", "07 every cancellation already applied",
        "05 debit_token",                                                       # ClientRequestToken (xfail per tier)
        "02 sign-up taking any row as its own")),                               # ReturnValuesOnConditionCheckFailure
    ("test_the_catalogues_constructions_hold_with_nothing_swapped", (
        "06 pay", "05 debit_ledger", "05 debit_ledger as rewritten here", "07 debit_by_operation", "02 my_sign_up")),
) for name in names)


def _test_key(item) -> str:
    """"file.py::test_name[id]": the node id from the file's name on (the table above is keyed by it)."""
    return item.path.name + ("::" + item.nodeid.split("::", 1)[1] if "::" in item.nodeid else "")


def _listed(key: str, patterns: tuple[str, ...]) -> bool:
    return any(key == p or key.startswith(p + ("[" if "::" in p else "::")) for p in patterns)


def moto_only(item) -> str | None:
    """Why `item` runs on the moto tier only (a MOTO_ONLY group, or "backend_independent"); None: every tier."""
    if item.get_closest_marker("backend_independent") is not None:
        return "backend_independent"
    key = _test_key(item)
    if _listed(key, CHECKER_SCORE_EVERY_TIER):
        return None
    return next((group for group, (_, patterns) in MOTO_ONLY.items() if _listed(key, patterns)), None)


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


# The files that take longest run first, longest first: under xdist (whole files per worker, tools/run_tests.py
# passes --no-loadscope-reorder) a long file started last keeps one worker busy while the other has nothing left,
# and xdist's own order puts files with few tests -- most of these -- last. A worker is sent its next file when two
# of its tests are left, so a file of a few long tests (test_mutants.py, test_specification_departed.py) must not
# come late. The order is the files' summed test times on the moto tier (junit, a full run with 2 workers, 2026-12-06:
# hygiene 557 s, the score 449, learners 355, mutants 230, departed 208, browser 161, properties_failures 151,
# bad_input 114, then 40-90 s each); test_properties.py and test_concurrency.py, long on DynamoDB Local (its threads
# and hypothesis runs), stay early. Every other file keeps pytest's order after these.
LONGEST_FIRST = ("test_notebook_hygiene.py", "test_checker_score.py", "test_learners.py", "test_mutants.py",
                 "test_specification_departed.py", "test_browser.py", "test_properties_failures.py",
                 "test_properties.py", "test_concurrency.py", "test_bad_input.py", "test_exercises.py",
                 "test_specification_lessons.py", "test_exercises_checker.py", "test_exercises_specification.py",
                 "test_lesson_07.py", "test_postgres.py", "test_book.py")


def pytest_collection_modifyitems(config, items):
    """Lesson 10 without a Postgres: skip its tests (above). The longest files first (a stable sort: each file's
    tests keep their order). On a tier other than moto, deselect the tests marked backend_independent and those
    MOTO_ONLY names (they ran on moto)."""
    _skip_lesson_10_without_postgres(items)
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
               else len(LONGEST_FIRST))
    backend = helpers.backends.backend_name()
    if backend == "moto":
        return
    why = {item.nodeid: moto_only(item) for item in items}
    dropped = [item for item in items if why[item.nodeid]]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not why[item.nodeid]]
        from summary_lines import summary

        lines = summary(f"run on the moto tier only, not on {backend}")
        lines.append(f"{len(dropped)} tests: the {backend} backend cannot change their outcome (tests/conftest.py)")
        marked = {item.path.name for item in dropped if why[item.nodeid] == "backend_independent"}
        files = f"{len(marked)} file{'s' * (len(marked) != 1)}"
        groups = {"backend_independent": f"marked in {files}: read files or libraries only",
                  **{group: reason for group, (reason, _) in MOTO_ONLY.items()}}
        for group, reason in groups.items():
            count = sum(why[item.nodeid] == group for item in dropped)
            if count:
                lines.append(f"{count:5} {group}: {reason}")          # at most 100 characters
        keys, files = {_test_key(item) for item in items + dropped}, {item.path.name for item in items + dropped}
        for pattern in [p for _, patterns in MOTO_ONLY.values() for p in patterns] + list(CHECKER_SCORE_EVERY_TIER):
            if pattern.split("::")[0] in files and not any(_listed(key, (pattern,)) for key in keys):
                lines.append(f"  matches no test (renamed? fix tests/conftest.py): {pattern}"[:100])


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
        if title.startswith("run on the moto tier only"):   # every worker deselected the same tests: say it once
            lines = list(dict.fromkeys(lines))
        terminalreporter.write_sep("-", title)
        for line in lines:
            terminalreporter.write_line(line)
