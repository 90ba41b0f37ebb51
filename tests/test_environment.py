"""The set-up files agree with each other, and a learner installs only what the lessons need.

Four pip lists, each building on the one before (`-r`): requirements.txt (the lessons' packages: `make lab`),
requirements-postgres.txt (lesson 10's embedded Postgres, its own pip call), requirements-test.txt (`make test`),
requirements-dev.txt (the book and the linter: `make lint`, `make book`). environment.yml is the learner's
environment for conda and Binder: the first two lists, exactly.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
LISTS = ("requirements.txt", "requirements-postgres.txt", "requirements-test.txt", "requirements-dev.txt")
# What only the tests or the maintainers use: never in a learner's install.
NOT_FOR_LEARNERS = {"pytest", "pytest-xdist", "nbval", "nbstripout", "playwright", "ruff", "jupyter-book", "sphinx"}


def lines(name: str) -> list[str]:
    return [line.strip() for line in (ROOT / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def requirements(name: str = "requirements.txt") -> list[str]:
    """The pinned packages a list names itself (its `-r` includes left out), sorted."""
    return sorted(line for line in lines(name) if not line.startswith("-"))


def project(requirement: str) -> str:
    return re.split(r"[\[=<>;~! ]", requirement, maxsplit=1)[0].lower()


def test_environment_yml_lists_exactly_the_learners_packages():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(p for p in pip if p != "-e .") == sorted(requirements() + requirements("requirements-postgres.txt"))
    assert "-e ." in pip and "pip" in env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in env["dependencies"])


def test_every_requirement_is_pinned_and_named_once():
    named = [project(r) for name in LISTS for r in requirements(name)]
    assert all("==" in r for name in LISTS for r in requirements(name))
    assert sorted(set(named)) == sorted(named), "a package pinned in two lists"


def test_each_list_builds_on_the_one_before():
    assert [line for line in lines("requirements-test.txt") if line.startswith("-")] == ["-r requirements.txt"]
    assert [line for line in lines("requirements-dev.txt") if line.startswith("-")] == ["-r requirements-test.txt"]
    assert not [line for line in lines("requirements.txt") + lines("requirements-postgres.txt") if line.startswith("-")]


def test_a_learner_installs_no_test_or_maintainer_tool():
    learner = {project(r) for r in requirements() + requirements("requirements-postgres.txt")}
    assert learner & NOT_FOR_LEARNERS == set()
    assert {"ruff", "jupyter-book"} <= {project(r) for r in requirements("requirements-dev.txt")}
    assert {"pytest", "nbval", "playwright"} <= {project(r) for r in requirements("requirements-test.txt")}


def test_the_embedded_postgres_is_installed_apart_and_its_failure_does_not_stop_make_lab():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("$(VENV)/.installed:"):].split("\n\n")[0]
    learner_step = next(line for line in recipe.splitlines() if "-r requirements.txt" in line)
    assert learner_step.endswith("-r requirements.txt -e .") and "postgres" not in learner_step
    postgres_step = next(line for line in recipe.splitlines() if "-r requirements-postgres.txt" in line)
    assert postgres_step.lstrip().startswith("@$(INSTALL) -r") and "||" in recipe.split(postgres_step)[1]
    assert "NO_EMBEDDED_POSTGRES" in recipe


def test_each_make_target_installs_its_layer_only():
    makefile = (ROOT / "Makefile").read_text()

    def needs(target: str) -> str:
        return re.search(rf"^{re.escape(target)}: (\S+)$", makefile, re.M).group(1)

    assert needs("lab") == "$(VENV)/.installed"
    assert needs("test") == needs("check") == "$(VENV)/.installed-test"
    assert needs("lint") == needs("book") == "$(VENV)/.installed-dev"
    assert re.search(r"^\$\(VENV\)/\.installed-test: \$\(VENV\)/\.installed requirements-test\.txt$", makefile, re.M)


def test_the_supported_pythons_are_the_same_in_pyproject_the_makefile_and_the_readme():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["requires-python"] == ">=3.11,<3.15"
    python = "Programming Language :: Python :: 3."
    listed = sorted(c.rsplit(" ", 1)[1] for c in meta["classifiers"] if c.startswith(python))
    assert listed == ["3.11", "3.12", "3.13", "3.14"]
    assert "(3, 11) <= v < (3, 15)" in (ROOT / "Makefile").read_text()
    assert "CPython 3.11, 3.12, 3.13 or 3.14" in (ROOT / "README.md").read_text()


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


def test_ci_installs_debians_chromium_for_the_browser_tests_and_never_playwrights_download():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install -y -qq chromium" in ci and '"$(id -u)" = 0' in ci
    assert ci.index("chromium") < ci.index("make test")
    makefile = (ROOT / "Makefile").read_text()
    assert "tests/test_browser.py" in makefile[makefile.index("\ntest-browser:"):].split("\n\n")[0]
    assert "playwright install" not in ci + makefile
