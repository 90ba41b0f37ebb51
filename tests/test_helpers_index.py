"""The index in each helpers package's docstring names exactly the modules that exist.

helpers/__init__.py, helpers/services/__init__.py, helpers/fidelity/__init__.py and
helpers/exercises/__init__.py each open with an index, one indented line a module:
``    name  what it does`` (``charts, notebook  ...`` for two, ``exercises/`` for a folder).
A reader who opens helpers/ from a notebook finds the module there; this test fails when a
module is added, moved or removed without its line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

HELPERS = Path(__file__).resolve().parent.parent / "helpers"
PACKAGES = sorted(p.parent for p in HELPERS.rglob("__init__.py") if "__pycache__" not in p.parts)
ENTRY = re.compile(r"^    (?P<names>[a-z_0-9]+/?(?:, [a-z_0-9]+/?)*)(?: |$)")


def listed(package: Path) -> set[str]:
    """The names an __init__ docstring's index lists (a folder keeps its trailing slash)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()), clean=False) or ""
    names: set[str] = set()
    for line in doc.splitlines():
        match = ENTRY.match(line)
        if match:
            names.update(match["names"].split(", "))
    return names


def present(package: Path) -> set[str]:
    """The modules (name) and folders (name/) a package holds, its __init__ aside."""
    modules = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    folders = {f"{p.name}/" for p in package.iterdir()
               if p.is_dir() and p.name != "__pycache__" and not p.name.startswith(".")}
    return modules | folders


def test_every_package_is_found():
    assert {p.relative_to(HELPERS.parent).as_posix() for p in PACKAGES} >= {
        "helpers", "helpers/services", "helpers/fidelity", "helpers/exercises"}


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.relative_to(HELPERS.parent).as_posix())
def test_the_index_lists_every_module(package: Path):
    missing = present(package) - listed(package)
    assert not missing, f"{package.name}/__init__.py's index does not list {sorted(missing)}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.relative_to(HELPERS.parent).as_posix())
def test_every_listed_name_exists(package: Path):
    stale = listed(package) - present(package)
    assert not stale, f"{package.name}/__init__.py's index lists {sorted(stale)}, which do not exist"
