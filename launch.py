"""The two commands with nothing but Python: no make, no shell (Windows PowerShell, macOS, Linux).

    python3 launch.py lab      # `make lab`: creates .venv on first use, then opens the collection in JupyterLab
    python3 launch.py test     # `make test`: adds the test tools on first use, then runs every test
    python3 launch.py check    # `make check`: the evening-before check (under two minutes)

On Windows, name the Python with the launcher that comes with it: `py -3.13 launch.py lab`.

It does what the Makefile's targets do, in the same steps: the Python's version is checked (CPython 3.11 to
3.14) before anything is installed; `.venv` is made with the Python that runs this file; each layer is
installed with the same pip calls and marked done with the same stamp file in `.venv` (so `make` and this
launcher share one `.venv` and neither reinstalls what the other did), and redone, as make does, when a
requirements file is newer than its stamp; lesson 10's embedded Postgres is a pip call of its own whose failure
prints a note and goes on. tests/test_launcher.py holds the two to each other.

Anything after the command is passed on: `launch.py test --backend moto tests/test_wire.py` runs
`tools/run_tests.py --backend moto tests/test_wire.py`; `launch.py lab --port 8899` gives Lab a port.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
SUPPORTED = ((3, 11), (3, 15))          # from 3.11, below 3.15: the Makefile's `(3, 11) <= v < (3, 15)`
WINDOWS = os.name == "nt"

# The Makefile's INSTALL, after `$(BIN)/python`.
PIP_INSTALL = ["-m", "pip", "--disable-pip-version-check", "install", "--quiet", "--no-compile"]

# The Makefile's stamp files: each layer's stamp, what it is remade after (another layer's stamp, or a file of the
# project), and the requirements it installs. The learner's layer also makes .venv, installs the project itself
# (`-e .`) and tries lesson 10's embedded Postgres apart (install_learner).
LAYERS = {
    ".installed": (["requirements.txt", "requirements-postgres.txt", "pyproject.toml"], ["requirements.txt"]),
    ".installed-test": ([".installed", "requirements-test.txt"], ["requirements-test.txt"]),
    ".installed-dev": ([".installed-test", "requirements-dev.txt"], ["requirements-dev.txt"]),
}
POSTGRES_REQUIREMENTS = "requirements-postgres.txt"
POSTGRES_LOG = "postgres-install.log"

LAB_ARGS = ["lab", "--ServerApp.root_dir=.", "notebooks/00_why_retries_happen.ipynb"]

# command: (the layer it needs, what it runs in .venv: a script of .venv's own, or its Python with arguments)
COMMANDS = {
    "lab": (".installed", ["jupyter", *LAB_ARGS]),
    "check": (".installed-test", ["python", "tools/run_tests.py", "--check"]),
    "test": (".installed-test", ["python", "tools/run_tests.py"]),
}


def scripts(venv=VENV, windows=WINDOWS):
    """Where a virtual environment keeps its programs: .venv/bin, or .venv\\Scripts on Windows."""
    return venv / ("Scripts" if windows else "bin")


def program(name, venv=VENV, windows=WINDOWS):
    """A program of .venv's own (python, jupyter), by the name it has on this system."""
    return scripts(venv, windows) / (name + (".exe" if windows else ""))


def how_to_run(windows=WINDOWS):
    """How this launcher is started with a supported Python, for the messages."""
    return "py -3.13 launch.py" if windows else "python3.13 launch.py"


def version_refused(version=None):
    """None for a supported Python; else the sentence the Makefile's check prints."""
    version = tuple(version or sys.version_info[:2])
    if SUPPORTED[0] <= version < SUPPORTED[1]:
        return None
    return (f"Python {version[0]}.{version[1]}: the collection supports CPython 3.11 to 3.14; "
            f"try {how_to_run()} lab")


def base_python():
    """The Python that makes .venv: this one, or the one beneath it when this one is itself a venv's."""
    if sys.prefix != sys.base_prefix:
        return getattr(sys, "_base_executable", sys.executable)
    return sys.executable


def shown(part):
    """A command's part as printed: a path inside the project relative to it, as make prints them."""
    path = Path(str(part))
    return str(path.relative_to(ROOT)) if path.is_absolute() and ROOT in path.parents else str(part)


def run(command, **kwargs):
    """Run a command in the project's folder, printed first as make prints it; its exit code."""
    print(" ".join(shown(part) for part in command), flush=True)
    return subprocess.run([str(part) for part in command], cwd=ROOT, **kwargs).returncode


def install(*arguments, venv=VENV):
    code = run([program("python", venv), *PIP_INSTALL, *arguments])
    if code:
        raise SystemExit(f"pip failed (exit {code}): see above")


def install_learner(venv=VENV):
    """The Makefile's `$(VENV)/.installed` recipe."""
    refused = version_refused()
    if refused:
        raise SystemExit(refused)
    if run([base_python(), "-m", "venv", venv]):
        raise SystemExit(f"could not create {venv}")
    install("-r", "requirements.txt", "-e", ".", venv=venv)
    log = venv / POSTGRES_LOG
    with open(log, "w") as errors:
        failed = subprocess.run([str(program("python", venv)), *PIP_INSTALL, "-r", POSTGRES_REQUIREMENTS],
                                cwd=ROOT, stderr=errors).returncode
    if failed:   # no wheel for this platform or Python: the rest works, and lesson 10 says what to do
        print("".join(log.read_text(errors="replace").splitlines(keepends=True)[-2:]), end="", flush=True)
        subprocess.run([str(program("python", venv)), "-c",
                        "from helpers.postgres import NO_EMBEDDED_POSTGRES as s; print('note:', s)"], cwd=ROOT)


def stale(layer, venv=VENV):
    """Whether a layer's stamp is missing or older than anything it is made after (make's rule)."""
    stamp = venv / layer
    if not stamp.exists():
        return True
    made = stamp.stat().st_mtime_ns
    needs, _ = LAYERS[layer]
    return any((venv / need if need in LAYERS else ROOT / need).stat().st_mtime_ns > made for need in needs)


def ensure(layer, venv=VENV):
    """Make `layer` (and the layers beneath it) as make would: only what is missing or out of date."""
    needs, requirements = LAYERS[layer]
    for need in needs:
        if need in LAYERS:
            ensure(need, venv)
    if not stale(layer, venv):
        return
    if layer == ".installed":
        install_learner(venv)
    else:
        install(*[a for r in requirements for a in ("-r", r)], venv=venv)
    (venv / layer).touch()


def is_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def command_line(name, extra=(), venv=VENV, windows=WINDOWS, root=None):
    """What `name` runs once its layer is installed."""
    _, (first, *arguments) = COMMANDS[name]
    if name == "lab" and (is_root() if root is None else root):
        arguments.insert(-1, "--allow-root")   # containers usually run as root: only then, as `make lab`
    return [program(first, venv, windows), *arguments, *extra]


def wait(command, env):
    """Run the command until it ends: a Ctrl-C reaches it too, and it decides (Lab asks whether to stop)."""
    process = subprocess.Popen([str(part) for part in command], cwd=ROOT, env=env)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            continue


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    name, extra = argv[0], argv[1:]
    layer, _ = COMMANDS[name]
    ensure(layer)
    command = command_line(name, extra)
    print(" ".join(shown(part) for part in command), flush=True)
    # what tools/run_tests.py --check names as the way to open the collection
    env = dict(os.environ, RETRY_LAB_COMMAND="py launch.py lab" if WINDOWS else "python3 launch.py lab")
    return wait(command, env)


if __name__ == "__main__":
    sys.exit(main())
