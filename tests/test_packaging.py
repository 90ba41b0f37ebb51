"""A non-editable install (`pip install .`) carries all of `helpers`, and the licence pyproject names.

Builds the wheel pip would install (`pip wheel . --no-deps`, into a temporary folder) and lists it: every
module and data file under `helpers/` that git tracks must be in it, with the LICENSE.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--quiet", "--wheel-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    assert "deprecat" not in built.stderr.lower(), built.stderr[-2000:]
    [path] = out.glob("*.whl")
    return zipfile.ZipFile(path)


def tracked_helpers() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "helpers"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [line for line in listed.stdout.splitlines() if line.endswith((".py", ".java"))]
    return files or [str(p.relative_to(ROOT)) for p in (ROOT / "helpers").rglob("*") if p.suffix in (".py", ".java")]


def test_the_wheel_holds_every_helper_module_and_the_java_launcher(wheel):
    names = set(wheel.namelist())
    missing = [f for f in tracked_helpers() if f not in names]
    assert missing == [], f"left out of a non-editable install: {missing}"
    assert "helpers/exercises/verdict.py" in names and "helpers/fidelity/java/LoopbackDynamoDBLocal.java" in names


def test_the_wheel_carries_the_license_pyproject_names(wheel):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    licence = [n for n in wheel.namelist() if n.endswith("/LICENSE")]
    assert licence, "no LICENSE in the wheel"
    text = wheel.read(licence[0]).decode()
    assert text.startswith("MIT License") and text == (ROOT / "LICENSE").read_text()
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith("METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
