"""The set-up files agree with each other."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent


def requirements() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return sorted(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def test_environment_yml_lists_the_same_pip_packages_as_requirements_txt():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(p for p in pip if p != "-e .") == requirements()
    assert "-e ." in pip and "pip" in env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in env["dependencies"])


def test_every_requirement_is_pinned():
    assert all("==" in line for line in requirements())


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_make_lab_starts_at_the_top_of_the_project_and_allows_root_only_when_root():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\nlab:"):].split("\n\n")[0]
    assert "--ServerApp.root_dir=." in recipe, "Lab must start at the project's top, or ../README.md is a 404"
    assert "notebooks/00_" in recipe, "make lab opens the collection's start"
    assert 'id -u)" = 0 ] && echo --allow-root' in makefile, "--allow-root only for uid 0"
    assert "jupyter lab --ServerApp.root_dir=. notebooks/00_" in (ROOT / "README.md").read_text()
