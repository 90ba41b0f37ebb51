"""What the collection costs, measured in one run on this machine.

    make bench                          # everything, the test tiers included (--write --tiers; ~40 minutes)
    python tools/bench.py --learner --write   # only the learner's table (issue 46; ~10 minutes)
    python tools/bench.py --quick       # fewer repetitions, no tiers, README untouched
    python tools/bench.py --skip-notebooks

Markdown tables, written into the README between its bench markers (`--write`):

0. **As a learner runs them** (`--learner`; between the README's own learner markers): each lesson's Run All in
   one kernel (nbclient, every code cell timed by the wall clock and by the kernel's own CPU seconds), its slowest
   cell and what it does; and every committed notebook under strict nbval in ONE pytest process against as many
   floor notebooks in ONE pytest process, in the same run, alternating which goes first (target: at most 2.0×).
   Targets: each cell within 5 s, each lesson's Run All within 20 s. The browser test's Run All table is quoted.
1. **Notebooks under nbval**: each notebook's wall time under
   `pytest NOTEBOOK --nbval --nbval-current-env`, against a baseline notebook that only does
   the same imports and starts the backend; on moto (target: the collection within 2.0× of
   the baseline) and on DynamoDB Local (target: within 2× of moto).
2. **One logical debit per pattern**, through the notebooks' own functions (03's naive and
   `last_request_id` debits, 05's ledger and client-token transactions, 06's saved-response
   handler), each backend in a process of its own: round trips, write units as each backend
   reports them (and as AWS documents them), milliseconds, and whether a resend applies again.
3. **The helpers' overhead** over a bare boto3 call: a client from `helpers.connect()`
   (faithful moto, virtual backoff) against a stock moto boto3 client, same operation, same
   table (target: within 10%).
4. **The HTTP layer's cost per request**: notebook 09's handler called directly and through
   its FastAPI route on uvicorn (`tools/bench_http.py`), on each backend.
5. **Each exercise's check** (issue 34; `--exercises-only`, between the README's own exercise markers): the
   checker cell of every *Your turn*, as the notebook runs it, on the starter (NOT YET, target under 2 s) and on
   the solution (PASS, target under 5 s), on moto: each exercise's median, and the median and slowest of all.
6. **One full check of a handler** (issue 23): `check_handler` on notebook 06's `pay`, its default histories,
   on moto, in a process of its own (target: within 20 seconds).
7. **The test tiers** (`--tiers`): `tools/run_tests.py` once, each tier's wall minutes and the whole run's; or
   (`--tiers-from LOG`) the same table read from a saved run's output, such as CI's log, saying so.
8. **The install** (`--install`, `--install-only`; between the README's own install markers): from a fresh clone,
   each layer's install time, `.venv` size and package count (learner, + tests, + maintainers), and `make lab`
   until a kernel answers, with a warm pip cache.

Times are medians of repeated runs (`time.perf_counter`); the machine is whatever this is,
so compare ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import bench_http  # noqa: E402
from notebook_list import notebooks  # noqa: E402

# The floor: a notebook that imports the packages the lessons import, starts a table and draws one figure.
BASELINE_SOURCE = (
    "# NBVAL_IGNORE_OUTPUT\n"   # the floor has no committed outputs to compare; it is run and timed the same way
    "import boto3, pandas as pd, matplotlib.pyplot as plt\n"
    "import helpers\n"
    "helpers.setup()\n"
    "db = helpers.connect()\n"
    "table = helpers.fresh_table(db, 'bench')\n"
    "helpers.open_wallet(table, 'w', 100)\n"
    "fig, ax = plt.subplots()\n"
    "_ = ax.plot([0, 1], [100, helpers.read_balance(table, 'w')])\n"
    "ax.set(title='floor', xlabel='step', ylabel='balance')\n"
    "plt.show()\n"
)
README_BEGIN, README_END = "<!-- bench:begin (written by tools/bench.py --write) -->", "<!-- bench:end -->"
NOTEBOOK_TARGET, BACKEND_TARGET, OVERHEAD_TARGET = 2.0, 2.0, 0.10


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


# --- 1. notebooks under nbval -----------------------------------------------------------------
def baseline_notebook(folder: Path) -> Path:
    """A notebook with one cell: the imports, a table, one figure (the floor every lesson pays)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cell = nbformat.v4.new_code_cell(BASELINE_SOURCE)
    cell.execution_count = 1
    nb.cells = [cell]
    path = folder / "baseline.ipynb"
    nbformat.write(nb, path)
    return path


def nbval_seconds(path: Path, env: dict[str, str]) -> tuple[float, bool]:
    command = [sys.executable, "-m", "pytest", str(path), "--nbval", "--nbval-current-env",
               "-p", "no:cacheprovider", "-q"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode == 0


def bench_notebooks(paths: list[Path], reps: int, backends: dict[str, dict[str, str]]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        baseline = baseline_notebook(Path(folder))
        targets = [baseline, *paths]
        times: dict[tuple[str, Path], list[float]] = {(b, p): [] for b in backends for p in targets}
        passed: dict[tuple[str, Path], bool] = {}
        for backend, env in backends.items():  # untimed: the first run pays for cold caches
            log(f"nbval {backend} baseline (warm-up, not timed)")
            nbval_seconds(baseline, env)
        for rep in range(reps):
            for backend, env in backends.items():
                for path in targets:
                    log(f"nbval {backend} {path.name} (run {rep + 1}/{reps})")
                    seconds, ok = nbval_seconds(path, env)
                    times[backend, path].append(seconds)
                    passed[backend, path] = passed.get((backend, path), True) and ok
        med = {key: median(value) for key, value in times.items()}

    has_local = "dynamodb-local" in backends
    head = "| notebook | moto s | × baseline |" + (" DynamoDB Local s | × moto |" if has_local else "")
    lines = [head, "|---|---:|---:|" + ("---:|---:|" if has_local else "")]

    def row(name: str, path: Path) -> str:
        moto = med["moto", path]
        base = med["moto", baseline]
        flag = "" if passed["moto", path] else " (FAILED)"
        cells = f"| {name} | {moto:.1f}{flag} | {moto / base:.2f} |"
        if has_local:
            local = med["dynamodb-local", path]
            flag = "" if passed["dynamodb-local", path] else " (FAILED)"
            cells += f" {local:.1f}{flag} | {local / moto:.2f} |"
        return cells

    lines.append(row("floor (imports, a table, one figure)", baseline))
    for path in paths:
        lines.append(row(str(path.relative_to(ROOT / "notebooks")), path))
    total_moto = sum(med["moto", p] for p in paths)
    ratio = total_moto / (len(paths) * med["moto", baseline]) if paths else float("nan")
    summary = f"| **collection ({len(paths)} notebooks)** | {total_moto:.1f} | **{ratio:.2f}** |"
    verdict = [f"collection on moto: {ratio:.2f}× the baseline per notebook (target ≤ {NOTEBOOK_TARGET}×): "
               f"{'met' if ratio <= NOTEBOOK_TARGET else 'NOT met'}"]
    if has_local:
        total_local = sum(med["dynamodb-local", p] for p in paths)
        local_ratio = total_local / total_moto if total_moto else float("nan")
        summary += f" {total_local:.1f} | **{local_ratio:.2f}** |"
        verdict.append(f"collection on DynamoDB Local: {local_ratio:.2f}× moto (target ≤ {BACKEND_TARGET}×): "
                       f"{'met' if local_ratio <= BACKEND_TARGET else 'NOT met'}")
    lines.append(summary)
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {v}" for v in verdict)


# --- 0. the learner's way (issue 46): Run All in one kernel per notebook; the collection against the floor -------
LEARNER_BEGIN = "<!-- learner:begin (written by tools/bench.py --learner --write) -->"
LEARNER_END = "<!-- learner:end -->"
CELL_TARGET, RUN_ALL_TARGET = 5.0, 20.0     # seconds a learner waits: one cell, a lesson's Run All (moto, 2 cores)


def cell_label(source: str, width: int = 56) -> str:
    """What a cell does, in a few words: its first line of code (else its first comment), without markers."""
    lines = [line.strip() for line in source.splitlines()]
    code = [line for line in lines if line and not line.startswith(("#", "%"))]
    comments = [line.lstrip("# ") for line in lines if line.startswith("#") and "NBVAL" not in line]
    label = (code or comments or [""])[0].replace("|", "\\|")
    return label if len(label) <= width else label[:width - 1] + "…"


def learner_child(paths: list[Path]) -> list[dict[str, Any]]:
    """In a process of its own (the backend in its environment): each notebook as a learner runs it -- a kernel
    started, then Run All in that one kernel -- timing the kernel's start and every code cell (nothing written)."""
    from nbclient import NotebookClient

    class Timed(NotebookClient):
        """nbclient's Run All, each code cell timed from the moment it is sent until its reply."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.seconds: dict[int, float] = {}
            self.cpu: dict[int, float] = {}
            self.first: float | None = None

        def kernel_cpu(self) -> float | None:
            """The kernel process's CPU seconds so far (Linux /proc), or None where that cannot be read."""
            try:
                with open(f"/proc/{self.km.provisioner.pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (AttributeError, OSError, ValueError, IndexError):
                return None

        async def async_execute_cell(self, cell: Any, cell_index: int, execution_count: int | None = None,
                                     store_history: bool = True) -> Any:
            started, cpu = time.perf_counter(), self.kernel_cpu()
            if self.first is None:
                self.first = started
            try:
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            finally:
                if cell.cell_type == "code":
                    self.seconds[cell_index] = time.perf_counter() - started
                    after = self.kernel_cpu()
                    if cpu is not None and after is not None:
                        self.cpu[cell_index] = after - cpu

    rows = []
    for path in paths:
        log(f"Run All, one kernel: {path.relative_to(ROOT / 'notebooks')}")
        nb = nbformat.read(path, as_version=4)
        client = Timed(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
        started = time.perf_counter()
        client.execute()
        ended = time.perf_counter()
        index, slowest = max(client.seconds.items(), key=lambda item: item[1])
        code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        cpu = sum(client.cpu.values()) if len(client.cpu) == len(client.seconds) else None
        slowest_cpu = client.cpu.get(index)
        rows.append({"notebook": str(path.relative_to(ROOT / "notebooks")), "kernel": client.first - started,
                     "run_all": ended - client.first, "cells": len(code_cells), "cpu": cpu,
                     "slowest_cpu": slowest_cpu, "most_cpu": max(client.cpu.values(), default=None),
                     "over": sum(s > CELL_TARGET for s in client.seconds.values()),
                     "slowest": slowest, "slowest_at": code_cells.index(index) + 1,
                     "slowest_label": cell_label(nb.cells[index].source),
                     "each": [[code_cells.index(i) + 1, round(t, 3), round(client.cpu.get(i, -1), 2),
                               cell_label(nb.cells[i].source)]
                              for i, t in sorted(client.seconds.items())]})
    return rows


def nbval_one_process(paths: list[Path], env: dict[str, str]) -> tuple[float, bool, str]:
    """Every path under strict nbval in ONE pytest process (a kernel per notebook, as nbval starts them)."""
    command = [sys.executable, "-m", "pytest", *map(str, paths), "--nbval", "--nbval-current-env",
               "-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return time.perf_counter() - started, done.returncode == 0, last


def learner_report(paths: list[Path], env: dict[str, str], reps: int) -> str:
    import boto3
    import moto

    return (f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, moto {moto.__version__}, boto3 {boto3.__version__}, on moto. Run All: "
            f"each lesson in a kernel of its own, as JupyterLab runs it (nbclient; the kernel's start apart), every "
            f"code cell timed. The ratio: every committed notebook under strict nbval in one pytest process, against "
            f"as many floor notebooks (the same imports, a table, one chart) in one pytest process, in the same run, "
            f"alternating which goes first; seconds vary with the machine's load, the ratio much less.\n\n"
            + bench_learner(paths, env, reps) + browser_run_all())


BROWSER_RUN_ALL = ROOT / "build" / "browser" / "run_all.md"


def browser_run_all() -> str:
    """The Run All times the browser test recorded (tests/test_browser.py, `make test-browser`), if it has run."""
    if not BROWSER_RUN_ALL.is_file():
        return "\n\n- in Chromium: `make test-browser` records each core lesson's Run All (not run in this tree yet)"
    return "\n\nFrom the last `make test-browser` (build/browser/run_all.md), not re-run here: " + \
        BROWSER_RUN_ALL.read_text(encoding="utf-8").strip()


def bench_learner(paths: list[Path], env: dict[str, str], reps: int) -> str:
    """The learner's table: each lesson's Run All in one kernel (its slowest cell and what it does), and the
    collection under nbval in one process against as many floor notebooks in one process, in the same run."""
    lessons = [p for p in paths if p.parent.name != "solutions"]
    done = subprocess.run([sys.executable, __file__, "--learner-child", *map(str, lessons)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError("the learner's Run All failed (its stderr is above)")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    lines = ["| notebook | Run All s | kernel CPU s | kernel start s | code cells | slowest cell s (CPU s) "
             "| slowest cell: what it does |", "|---|---:|---:|---:|---:|---:|---|"]

    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    for r in rows:
        flag = " (over)" if r["run_all"] > RUN_ALL_TARGET else ""
        slow = " (over)" if r["slowest"] > CELL_TARGET else ""
        lines.append(f"| {r['notebook']} | {r['run_all']:.1f}{flag} | {seconds(r['cpu'])} | {r['kernel']:.1f} | "
                     f"{r['cells']} | {r['slowest']:.1f} ({seconds(r['slowest_cpu'])}){slow} | "
                     f"cell {r['slowest_at']}: `{r['slowest_label']}` |")
    run_all_met = all(r["run_all"] <= RUN_ALL_TARGET for r in rows)
    cell_met = all(r["slowest"] <= CELL_TARGET for r in rows)

    ratios, seconds = [], {"collection": [], "floor": []}
    ok = {"collection": True, "floor": True}
    with tempfile.TemporaryDirectory() as folder:
        floors = []
        for i in range(len(paths)):
            floor = Path(folder) / f"floor_{i:02d}.ipynb"
            baseline_notebook(Path(folder)).rename(floor)
            floors.append(floor)
        for rep in range(reps):      # the two sides alternate which goes first: the machine's load falls on both
            order = [("collection", paths), ("floor", floors)]
            for side, targets in (order if rep % 2 == 0 else order[::-1]):
                log(f"nbval, one process: {side} ({len(targets)} notebooks, run {rep + 1}/{reps})")
                took, passed, last = nbval_one_process(targets, env)
                seconds[side].append(took)
                ok[side] = ok[side] and passed
                if not passed:
                    log(f"  {side} did not pass: {last}")
            ratios.append(seconds["collection"][-1] / seconds["floor"][-1])
    ratio = median(ratios)
    ratio_met = ratio <= NOTEBOOK_TARGET and ok["collection"]
    failed = "" if ok["collection"] else " (nbval FAILED)"
    cpu_known = all(r["cpu"] is not None for r in rows)
    cpu_met = cpu_known and all(r["most_cpu"] <= CELL_TARGET and r["cpu"] <= RUN_ALL_TARGET for r in rows)
    lines += ["", f"- every cell within {CELL_TARGET:.0f} s: {'met' if cell_met else 'NOT met'}; every lesson's "
              f"Run All within {RUN_ALL_TARGET:.0f} s: {'met' if run_all_met else 'NOT met'} (wall clock, this run)"
              + (f"; in the kernel's own CPU seconds, which the machine's other load does not inflate: "
                 f"{'met' if cpu_met else 'NOT met'}" if cpu_known else ""),
              f"- the collection ({len(paths)} notebooks) under strict nbval in one pytest process: "
              f"{median(seconds['collection']):.0f} s{failed}; {len(paths)} floor notebooks in one process: "
              f"{median(seconds['floor']):.0f} s; ratio **{ratio:.2f}×** (median of {reps}: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}; target ≤ {NOTEBOOK_TARGET}×): "
              f"{'met' if ratio_met else 'NOT met'}"]
    return "\n".join(lines)


# --- 2. one logical debit per pattern -----------------------------------------------------------
def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def s(value: str) -> dict[str, str]:
    return {"S": value}


def naive_update(client: Any, table: str, rid: str, **extra: Any) -> Any:
    return client.update_item(
        TableName=table, Key={"pk": s("w")}, UpdateExpression="SET balance = balance - :a",
        ConditionExpression="attribute_exists(balance)", ExpressionAttributeValues={":a": n(1)}, **extra,
    )


def last_request_id_update(client: Any, table: str, rid: str, **extra: Any) -> Any:
    try:
        return client.update_item(
            TableName=table, Key={"pk": s("w")},
            UpdateExpression="SET balance = balance - :a, last_request_id = :rid",
            ConditionExpression="attribute_exists(balance) AND "
                                "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
            ExpressionAttributeValues={":a": n(1), ":rid": s(rid)},
            ReturnValuesOnConditionCheckFailure="ALL_OLD", **extra,
        )
    except client.exceptions.ConditionalCheckFailedException as error:
        return error.response  # already applied: success


def make_table(client: Any, name: str) -> str:
    try:
        client.create_table(
            TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1})
    except client.exceptions.ResourceInUseException:
        pass
    client.put_item(TableName=name, Item={"pk": s("w"), "balance": n(10**15)})
    return name


# The notebooks' own debit functions (helpers.lessons.run_cells runs their `lesson` cells), timed as they stand.
# (label, notebook, function, write units AWS documents for items under 1 KB: 1 per item written, 2 per item
# in a transaction; 06's handler writes its record (1), a marker + debit transaction (4) and the completion (1)).
NOTEBOOK_PATTERNS: list[tuple[str, str, str, int]] = [
    ("naive debit (03 `debit_naive`)", "03_request_id_increments.ipynb", "debit_naive", 1),
    ("`last_request_id` debit (03 `debit_idempotent`)", "03_request_id_increments.ipynb", "debit_idempotent", 1),
    ("ledger transaction (05 `debit_ledger`)", "05_remembering_every_request.ipynb", "debit_ledger", 4),
    ("`ClientRequestToken` transaction (05 `debit_token`)", "05_remembering_every_request.ipynb", "debit_token", 2),
    ("saved-response handler (06 `pay`)", "06_saved_responses.ipynb", "pay", 6),
]
EMPTY_EVERY = 20   # untimed: moto deep-copies a table per transaction, so a table that only grows would time moto


class Rig:
    """One notebook debit function with its tables: `debit(request_id)`, `balance()`, `empty()`."""

    def __init__(self, code: dict[str, Any], notebook: str, function: str, metered: bool) -> None:
        import helpers
        from helpers.meter import CapacityMeter

        self.code, self.meter = code, CapacityMeter()
        db = code["db"]
        if function == "pay":
            self.tables = {"wallets": db.table(code["wallets"].name.removesuffix(db.table_name(""))),
                           "records": db.table(code["records"].name.removesuffix(db.table_name("")))}
            self.wallet_key = {"pk": "bench"}
        else:
            sort_key = "sk" if notebook.startswith("05") else None
            self.tables = {"table": helpers.fresh_table(db, f"bench-{notebook[:2]}-{function}", sort_key=sort_key)}
            self.wallet_key = {"pk": "bench", "sk": "wallet"} if sort_key else {"pk": "bench"}
        if metered:
            for table in self.tables.values():
                self.meter.install(table)
        self.function = function
        self.debit = self._pay if function == "pay" else (
            lambda rid: code[function](self.tables["table"], "bench", 1, rid))

    def _pay(self, rid: str) -> Any:
        self.code["wallets"], self.code["records"] = self.tables["wallets"], self.tables["records"]
        return self.code["pay"](rid, {"wallet": "bench", "amount": 1}, "bench")

    def empty(self) -> None:
        import helpers

        for table in self.tables.values():
            helpers.empty_table(table)
        self.wallet().put_item(Item={**self.wallet_key, "balance": 10**15})

    def wallet(self) -> Any:
        return self.tables["wallets" if self.function == "pay" else "table"]

    def balance(self) -> int:
        return int(self.wallet().get_item(Key=self.wallet_key, ConsistentRead=True)["Item"]["balance"])


def patterns_child(reps: int) -> dict[str, Any]:
    """In a process of its own (RETRY_BACKEND set): measure each notebook pattern; return JSON-ready results."""
    from helpers.lessons import run_cells
    from helpers.services.payment_provider import PaymentProvider

    codes: dict[str, dict[str, Any]] = {}
    results = {}
    for label, notebook, function, _ in NOTEBOOK_PATTERNS:
        code = codes.setdefault(notebook, run_cells(notebook, {}))
        if function == "pay":
            code["provider"] = PaymentProvider(code["db"].clock)
        metered, plain = Rig(code, notebook, function, metered=True), Rig(code, notebook, function, metered=False)
        metered.empty()
        for _ in range(5):                                   # warm up
            metered.debit(str(uuid.uuid4()))
        metered.meter.reset()
        metered.debit(str(uuid.uuid4()))
        trips, units = metered.meter.round_trips, metered.meter.capacity_units
        rid = str(uuid.uuid4())
        metered.debit(rid)
        before = metered.balance()
        metered.debit(rid)                                    # the same request again, as a retry sends it
        safe = metered.balance() == before
        samples = []
        for i in range(reps):
            if i % EMPTY_EVERY == 0:
                plain.empty()
            rid = str(uuid.uuid4())
            started = time.perf_counter()
            plain.debit(rid)
            samples.append((time.perf_counter() - started) * 1000)
        results[label] = {"trips": trips, "units": units, "safe": safe, "ms": median(samples)}
    return results


def bench_patterns(backends: dict[str, dict[str, str]], reps: int) -> str:
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for backend, env in backends.items():
        log(f"patterns on {backend} (the notebooks' own functions)")
        done = subprocess.run([sys.executable, __file__, "--patterns-child", "--reps", str(reps)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"patterns on {backend} failed:\n{done.stderr[-3000:]}")
        results[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    names = {"moto": "moto", "dynamodb-local": "DynamoDB Local"}
    head = "| one logical debit | resend applies again? | round trips |"
    head += "".join(f" write units ({names[b]} reports) |" for b in backends) + " write units (AWS documents) |"
    head += "".join(f" {names[b]} ms |" for b in backends)
    lines = [head, "|---|---|---:|" + "---:|" * (2 * len(backends) + 1)]
    first = next(iter(backends))
    for label, _, _, documented in NOTEBOOK_PATTERNS:
        r = results[first][label]
        row = f"| {label} | {'no' if r['safe'] else 'yes'} | {r['trips']} |"
        row += "".join(f" {results[b][label]['units']:g} |" for b in backends) + f" {documented} |"
        row += "".join(f" {results[b][label]['ms']:.2f} |" for b in backends)
        lines.append(row)
    disagree = [label for label, *_ in NOTEBOOK_PATTERNS
                if len({(results[b][label]["trips"], results[b][label]["safe"]) for b in backends}) > 1]
    note = f"\n\nBackends disagree on round trips or retry-safety for: {', '.join(disagree)}" if disagree else ""
    return "\n".join(lines) + note


# --- issue 23: one full check of a handler ---------------------------------------------------------
CHECK_TARGET_SECONDS = 20


def checker_child() -> dict[str, Any]:
    """In a process of its own (moto): one `check_handler` of 06's `pay` with its defaults, timed."""
    from helpers.checker import check_handler
    from helpers.lessons import load_lesson

    code = load_lesson("06_saved_responses.ipynb")   # the helpers' loader (what notebook 10 uses); prints nothing
    started = time.perf_counter()
    verdict = check_handler(code["pay"], name="06 pay")
    seconds = time.perf_counter() - started
    return {"verdict": str(verdict).splitlines()[0], "histories": verdict.histories, "seconds": seconds}


def bench_checker(env: dict[str, str]) -> str:
    log("one full check of 06's pay on moto (check_handler, default histories)")
    done = subprocess.run([sys.executable, __file__, "--checker-child"], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the checker's bench failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    met = "met" if r["seconds"] <= CHECK_TARGET_SECONDS else "NOT met"
    return "\n".join([
        "| check | histories | verdict | seconds | target |", "|---|---:|---|---:|---|",
        f"| `check_handler(pay)`, notebook 06, moto | {r['histories']} | {r['verdict']} | {r['seconds']:.1f} "
        f"| within {CHECK_TARGET_SECONDS} s: {met} |"])


# --- issue 34: each exercise's check, as a learner waits for it ---------------------------------------------------
EXERCISES_BEGIN = "<!-- exercises:begin (written by tools/bench.py --exercises-only --write) -->"
EXERCISES_END = "<!-- exercises:end -->"
NOT_YET_TARGET, PASS_TARGET = 2.0, 5.0     # seconds a learner waits: a NOT YET, a PASS (moto, 2 cores)


def exercises_child(reps: int) -> list[dict[str, Any]]:
    """In a process of its own (moto): each exercise's checker cell, run as the notebook runs it, on the starter
    (NOT YET) and on the solution's function (PASS), `reps` times each; the seconds of each run."""
    import ast
    import contextlib
    import io
    import re

    from helpers.lessons import NOTEBOOKS, lesson_cells, run_cells

    def checker_cell(notebook: str, after: Callable[[dict[str, Any]], bool]) -> str:
        """The code cell right after the first one `after` picks: the exercise's checker."""
        cells = [c for c in json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
                 if c["cell_type"] == "code"]
        at = next(i for i, c in enumerate(cells) if after(c))
        return "".join(cells[at + 1]["source"])

    def run_cell(source: str, ns: dict[str, Any]) -> Any:
        tree = ast.parse(source)
        tree.body = [node for node in tree.body if not isinstance(node, ast.Assert)]   # the table says it
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), ns)
        return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns) if last else None

    import importlib.util

    def battery(lesson: str) -> dict[str, str]:
        """The learners' wrong answers to the lesson's exercise (tests/learners/lesson_NN.py: WRONG), if any."""
        path = ROOT / "tests" / "learners" / f"lesson_{lesson}.py"
        if not path.is_file():
            return {}
        spec = importlib.util.spec_from_file_location(f"learners_{lesson}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.WRONG

    committed = set(subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True,
                                   check=True).stdout.split())
    rows = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        if f"notebooks/{path.name}" not in committed:          # a lesson still being written in this tree
            continue
        exercise = lesson_cells(path.name, "exercise")
        solution = f"solutions/{path.stem}_solution.ipynb"
        if not exercise or not (NOTEBOOKS / solution).is_file():
            continue
        name = re.search(r"^def (\w+)\(", exercise[0], re.M)[1]
        with contextlib.redirect_stdout(io.StringIO()):
            ns = run_cells(path.name, {})
        exercise_cell = checker_cell(path.name, lambda c: "exercise" in c["metadata"].get("tags", []))
        solution_cell = checker_cell(solution, lambda c: f"def {name}(" in "".join(c["source"]))
        for source in battery(path.name[:2]).values():          # once each: a learner's wrong answer, NOT YET
            exec(exercise[0], ns)
            exec(source, ns)
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                verdict = run_cell(exercise_cell, ns)
            rows.append({"lesson": path.name[:2], "kind": "wrong", "passed": bool(verdict.passed),
                         "seconds": time.perf_counter() - started})
        for kind, checker in (("starter", exercise_cell), ("solution", solution_cell)):
            if kind == "solution":      # the solution's cells over the lesson's namespace, as its notebook runs them
                with contextlib.redirect_stdout(io.StringIO()):
                    run_cells(solution, {}, into=ns)
            for _ in range(reps):
                if kind == "starter":
                    exec(exercise[0], ns)
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    verdict = run_cell(checker, ns)
                rows.append({"lesson": path.name[:2], "kind": kind, "passed": bool(verdict.passed),
                             "seconds": time.perf_counter() - started})
    return rows


def bench_exercises(env: dict[str, str], reps: int) -> str:
    log(f"each exercise's check on moto, starter and solution, {reps} runs each")
    done = subprocess.run([sys.executable, __file__, "--exercises-child", "--reps", str(reps)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the exercises' bench failed:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    lines = ["| exercise | NOT YET (starter), s | learners' wrong answers: NOT YET, median / slowest, s "
             "| PASS (solution), median / slowest, s |", "|---|---:|---:|---:|"]
    for lesson in sorted({r["lesson"] for r in rows}):
        times = {kind: [r["seconds"] for r in rows if r["lesson"] == lesson and r["kind"] == kind]
                 for kind in ("starter", "wrong", "solution")}
        wrong = [r for r in rows if r["lesson"] == lesson and r["passed"] != (r["kind"] == "solution")]
        note = " (a verdict wrong!)" if wrong else ""
        answers = (f"{median(times['wrong']):.1f} / {max(times['wrong']):.1f} ({len(times['wrong'])})"
                   if times["wrong"] else "-")
        lines.append(f"| {lesson} | {median(times['starter']):.1f} | {answers} | "
                     f"{median(times['solution']):.1f} / {max(times['solution']):.1f}{note} |")
    not_yet = [r["seconds"] for r in rows if r["kind"] in ("starter", "wrong")]
    passed = [r["seconds"] for r in rows if r["kind"] == "solution"]
    met = "met" if max(not_yet) <= PASS_TARGET and max(passed) <= PASS_TARGET else "NOT met"
    lines += ["", f"A NOT YET (the starters and the learners' wrong answers of tests/learners/): median "
              f"**{median(not_yet):.1f} s**, slowest {max(not_yet):.1f} s (target under "
              f"{NOT_YET_TARGET:.0f} s, {PASS_TARGET:.0f} s at most); a PASS: median **{median(passed):.1f} s**, "
              f"slowest {max(passed):.1f} s "
              f"(target under {PASS_TARGET:.0f} s): {met}. Each exercise's checker cell as the notebook runs it, on "
              f"moto ({reps} run{'s' if reps > 1 else ''} of the starter and the solution, one of each wrong answer), "
              f"on {os.cpu_count()} CPUs."]
    return "\n".join(lines)


# --- 3. the helpers' overhead ---------------------------------------------------------------------
def bench_overhead(reps: int) -> str:
    import boto3
    from botocore.config import Config

    import helpers

    db = helpers.connect("moto")  # starts moto's mock_aws for this process
    ours = db.client()
    stock = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )
    table = make_table(ours, "bench-overhead")
    stock.describe_table(TableName=table)  # the same moto backend answers both

    operations: list[tuple[str, Callable[[Any], Any]]] = [
        ("`update_item` (naive debit)", lambda c: naive_update(c, table, "")),
        ("`get_item`", lambda c: c.get_item(TableName=table, Key={"pk": s("w")}, ConsistentRead=True)),
        ("`update_item` checking `last_request_id`", lambda c: last_request_id_update(c, table, str(uuid.uuid4()))),
    ]
    batch = 10
    lines = ["| operation | stock moto + boto3 ms | helpers' client ms | overhead |", "|---|---:|---:|---:|"]
    worst = 0.0
    for name, operation in operations:
        for client in (stock, ours):  # warm up
            for _ in range(batch):
                operation(client)
        samples: dict[str, list[float]] = {"stock": [], "ours": []}
        for block in range(max(3, reps // batch)):
            order = [("stock", stock), ("ours", ours)] if block % 2 == 0 else [("ours", ours), ("stock", stock)]
            for label, client in order:
                started = time.perf_counter()
                for _ in range(batch):
                    operation(client)
                samples[label].append((time.perf_counter() - started) * 1000 / batch)
        a, b = median(samples["stock"]), median(samples["ours"])
        worst = max(worst, b / a - 1)
        lines.append(f"| {name} | {a:.3f} | {b:.3f} | {100 * (b / a - 1):+.1f}% |")
    verdict = f"worst overhead {100 * worst:+.1f}% (target ≤ {100 * OVERHEAD_TARGET:.0f}%): " + (
        "met" if worst <= OVERHEAD_TARGET else "NOT met")
    return "\n".join(lines) + f"\n\n- {verdict}"


# --- 4. the test tiers ----------------------------------------------------------------------------
def bench_tiers() -> str:
    """`tools/run_tests.py` once (the tiers side by side): each tier's wall minutes and the whole run's."""
    log("make test (tools/run_tests.py), timed")
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py")], cwd=ROOT, capture_output=True,
                          text=True)
    return tiers_table(done.stdout)


def tiers_table(output: str, source: str = "") -> str:
    """The tiers' table from what `tools/run_tests.py` printed: its summary (each tier, the wall, the counts)."""
    rows = ["| tier | result | minutes |", "|---|---|---:|"]
    summary = output[output.rfind("=== summary ==="):].splitlines()[1:] if "=== summary ===" in output else []
    wall = "?"
    for line in summary:
        name, _, rest = line.strip().partition(": ")
        if name in ("moto", "dynamodb-local"):
            result, _, took = rest.partition(" (")
            rows.append(f"| {name} | {result} | {took.removesuffix(' min)')} |")
        elif name == "wall":
            wall = rest.removesuffix(" min")
    closing = next((line.strip() for line in summary if line.strip()[:1].isdigit() and " passed" in line),
                   "no summary (run_tests.py failed)")
    rows.append(f"| **make test, wall** | {closing} | **{wall}** |")
    return "\n".join(rows) + (f"\n\n{source}" if source else "")


def write_between(begin_marker: str, end_marker: str, text: str, what: str) -> None:
    """Replace what is between two of the README's markers with `text` (the markers must exist)."""
    readme = ROOT / "README.md"
    content = readme.read_text(encoding="utf-8")
    begin, end = content.find(begin_marker), content.find(end_marker)
    if begin < 0 or end < begin:
        raise SystemExit(f"README.md has no {begin_marker} ... {end_marker} markers to write between")
    readme.write_text(content[:begin + len(begin_marker)] + "\n" + text.strip() + "\n" + content[end:],
                      encoding="utf-8")
    log(f"README.md: {what} rewritten between its markers")


# --- 6. the install: each layer's size and time, make lab to a usable lab -----------------------------------
INSTALL_BEGIN = "<!-- install:begin (written by tools/bench.py --install --write) -->"
INSTALL_END = "<!-- install:end -->"
LAYERS = [("learner: `make lab`", ".venv/.installed", "requirements.txt, requirements-postgres.txt"),
          ("+ tests: `make test`", ".venv/.installed-test", "requirements-test.txt"),
          ("+ maintainers: `make lint`, `make book`", ".venv/.installed-dev", "requirements-dev.txt")]


def folder_mb(folder: Path) -> float:
    """Disk space the folder takes (what `du` counts: allocated blocks), in MB (10^6 bytes)."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_blocks * 512
            except OSError:
                pass
    return total / 1e6


def packages(venv: Path) -> int:
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json",
                             "--disable-pip-version-check"], capture_output=True, text=True, check=True)
    return len(json.loads(listed.stdout))


def make(clone: Path, target: str, python: str) -> float:
    started = time.perf_counter()
    subprocess.run(["make", "--no-print-directory", target, f"PYTHON={python}"], cwd=clone, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def lab_until_usable(clone: Path, python: str, timeout: float = 600) -> float:
    """`make lab` in a fresh clone, timed until Lab serves its page and a kernel it started answers idle."""
    import secrets
    import socket
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    config = Path(tempfile.mkdtemp(prefix="bench-lab-config-"))
    (config / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"ip": "127.0.0.1", "port": port, "port_retries": 0, "open_browser": False},
        "IdentityProvider": {"token": token}}))
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(config / "runtime"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)      # as on a learner's machine: Python writes the bytecode it uses
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"token {token}"}

    def call(path: str, method: str = "GET") -> tuple[int, Any]:
        request = urllib.request.Request(base + path, method=method, headers=auth, data=b"{}" if method == "POST"
                                         else None)
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return response.status, json.loads(body) if body.startswith((b"{", b"[")) else None

    started = time.perf_counter()
    process = subprocess.Popen(["make", "--no-print-directory", "lab", f"PYTHON={python}"], cwd=clone, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        kernel = None
        while time.perf_counter() - started < timeout:
            if process.poll() is not None:
                raise RuntimeError(f"make lab exited with {process.returncode}")
            try:
                if kernel is None:
                    if call("/lab")[0] == 200:
                        kernel = call("/api/kernels", "POST")[1]["id"]
                elif kernel_answers(f"ws://127.0.0.1:{port}/api/kernels/{kernel}/channels?token={token}"):
                    return time.perf_counter() - started
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"make lab gave no usable lab within {timeout:.0f} s")
    finally:
        os.killpg(process.pid, 15)
        process.wait(60)


def kernel_answers(url: str) -> bool:
    """Lab's own first question to a kernel, over its websocket: a kernel_info_request, answered."""
    import websocket  # websocket-client, which jupyter_server needs

    try:
        ws = websocket.create_connection(url, timeout=30)
    except (OSError, websocket.WebSocketException):
        return False
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "kernel_info_request", "username": "bench",
                                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
                            "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell", "buffers": []}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = json.loads(ws.recv())
            if message.get("parent_header", {}).get("msg_id") == msg_id and message["channel"] == "shell":
                return True
        return False
    finally:
        ws.close()


def bench_install(python: str) -> str:
    """From a fresh clone of this commit: each layer's install (time, size, packages), and `make lab` to a lab
    whose kernel answers. The pip cache is warmed first (one learner install, not reported)."""
    clone = Path(tempfile.mkdtemp(prefix="bench-install-")) / "clone"
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        log("install: warming the pip cache (a learner install, not timed)")
        make(clone, ".venv/.installed", python)
        subprocess.run(["rm", "-rf", str(clone / ".venv")], check=True)
        log("install: make lab from a fresh clone, until a kernel answers")
        lab_seconds = lab_until_usable(clone, python)
        used = folder_mb(clone / ".venv")          # with the bytecode Lab and a kernel wrote on their first start
        subprocess.run(["rm", "-rf", str(clone / ".venv")], check=True)
        rows = ["| install | lists | seconds | size MB | packages |", "|---|---|---:|---:|---:|"]
        sizes = []
        for name, stamp, lists in LAYERS:
            log(f"install: {name}")
            seconds = make(clone, stamp, python)
            sizes.append(folder_mb(clone / ".venv"))
            rows.append(f"| {name} | {lists} | {seconds:.0f} | {sizes[-1]:.0f} | {packages(clone / '.venv')} |")
        version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        learner, full = sizes[0], sizes[-1]
        return (f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} CPUs, Python "
                f"{version}, from a fresh clone with a warm pip cache; each row adds to the one before (sizes are "
                f"the whole `.venv`, as `du` counts it).\n\n" + "\n".join(rows) + "\n\n"
                f"- `make lab` from a fresh clone to a lab whose kernel answers: **{lab_seconds:.0f} s** "
                f"(target < 60 s): {'met' if lab_seconds < 60 else 'NOT met'}\n"
                f"- the learner's install is {learner:.0f} MB ({used:.0f} MB once Lab and a kernel have started "
                f"and written their bytecode), {100 * (1 - learner / full):.0f}% smaller than the maintainers' full "
                f"one ({full:.0f} MB)")
    finally:
        subprocess.run(["rm", "-rf", str(clone.parent)], check=False)


# --- main ----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (1 nbval run, 50 calls)")
    parser.add_argument("--nbval-reps", type=int, help="nbval runs per notebook and backend (default 3; quick 1)")
    parser.add_argument("--reps", type=int, help="timed calls per pattern (default 300; quick 50)")
    parser.add_argument("--skip-notebooks", action="store_true")
    parser.add_argument("--skip-dynamodb-local", action="store_true")
    parser.add_argument("--tiers", action="store_true", help="also time make test, tier by tier (15+ minutes)")
    parser.add_argument("--tiers-from", type=Path, metavar="LOG",
                        help="the tiers' table from a saved run of tools/run_tests.py (make test, or CI's log)")
    parser.add_argument("--write", action="store_true", help="rewrite README.md's tables between the bench markers")
    parser.add_argument("--install", action="store_true",
                        help="also time and size each install layer from a fresh clone, and make lab (~5 minutes)")
    parser.add_argument("--install-only", action="store_true", help="only the install measurements")
    parser.add_argument("--python", default=os.environ.get("PYTHON", getattr(sys, "_base_executable", sys.executable)),
                        help="the Python the install measurements use (default: this one's base interpreter)")
    parser.add_argument("--patterns-child", action="store_true", help=argparse.SUPPRESS)  # one backend, JSON out
    parser.add_argument("--checker-child", action="store_true", help=argparse.SUPPRESS)   # moto, JSON out
    parser.add_argument("--checker-only", action="store_true", help="only the full check of 06's pay (moto)")
    parser.add_argument("--exercises-child", action="store_true", help=argparse.SUPPRESS)  # moto, JSON out
    parser.add_argument("--exercises-only", action="store_true",
                        help="only each exercise's check time, starter and solution (moto; --write: README)")
    parser.add_argument("--learner", action="store_true",
                        help="only the learner's table: Run All per lesson in one kernel, the collection against the "
                             "floor in one process each (moto; --write: README's learner markers; ~10 minutes)")
    parser.add_argument("--learner-reps", type=int, help="runs of the collection and the floor (default 2; quick 1)")
    parser.add_argument("--learner-child", action="store_true", help=argparse.SUPPRESS)  # Run All, JSON out
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to time (default: all committed)")
    args = parser.parse_args()
    if args.learner_child:
        print(json.dumps(learner_child([p.resolve() for p in args.notebooks])))
        return 0
    if args.patterns_child:
        print(json.dumps(patterns_child(args.reps or 300)))
        return 0
    if args.checker_child:
        print(json.dumps(checker_child()))
        return 0
    if args.checker_only:
        print(bench_checker(dict(os.environ, PYTHONHASHSEED="0", RETRY_BACKEND="moto")))
        return 0
    if args.exercises_child:
        print(json.dumps(exercises_child(args.reps or 3)))
        return 0
    if args.exercises_only:
        table = bench_exercises(dict(os.environ, PYTHONHASHSEED="0", RETRY_BACKEND="moto"), args.reps or 3)
        print(table)
        if args.write:
            write_between(EXERCISES_BEGIN, EXERCISES_END, f"Measured {time.strftime('%Y-%m-%d')}.\n\n{table}",
                          "exercises' check times")
        return 0
    if args.install or args.install_only:
        install = bench_install(args.python)
        print(install)
        if args.write:
            write_between(INSTALL_BEGIN, INSTALL_END, install, "install table")
        if args.install_only:
            return 0
    nbval_reps = args.nbval_reps or (1 if args.quick else 3)
    reps = args.reps or (50 if args.quick else 300)
    learner_reps = args.learner_reps or (1 if args.quick else 2)
    paths = [p.resolve() for p in args.notebooks] or notebooks()

    os.environ.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)   # as on a learner's machine: Python writes the bytecode it uses
    # The kernels import this tree's helpers (a worktree shares an editable install made elsewhere).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    base_env = dict(os.environ, PYTHONHASHSEED="0")
    if args.learner:
        learner = learner_report(paths, dict(base_env, RETRY_BACKEND="moto"), learner_reps)
        print(learner)
        if args.write:
            write_between(LEARNER_BEGIN, LEARNER_END, learner, "the learner's table")
        return 0
    backends = {"moto": dict(base_env, RETRY_BACKEND="moto")}
    server = None
    started = time.perf_counter()
    try:
        if not args.skip_dynamodb_local:
            endpoint = os.environ.get("RETRY_DYNAMODB_ENDPOINT")
            if not endpoint:
                from helpers.fidelity.dynamodb_local import DynamoDBLocalServer

                server = DynamoDBLocalServer()  # one server for the whole run
                endpoint = server.endpoint_url
                os.environ["RETRY_DYNAMODB_ENDPOINT"] = endpoint
            backends["dynamodb-local"] = dict(base_env, RETRY_BACKEND="dynamodb-local",
                                              RETRY_DYNAMODB_ENDPOINT=endpoint)
        sections = []
        if not args.skip_notebooks:
            learner = learner_report(paths, backends["moto"], learner_reps)
            if args.write:
                write_between(LEARNER_BEGIN, LEARNER_END, learner, "the learner's table")
            sections.append(("As a learner runs them (moto)", learner))
            sections.append(("Notebooks under strict nbval (wall seconds, median of "
                             f"{nbval_reps} run{'s' if nbval_reps > 1 else ''})",
                             bench_notebooks(paths, nbval_reps, backends)))
        sections.append((f"One logical debit, per pattern (median of {reps} debits)", bench_patterns(backends, reps)))
        sections.append(("The helpers' overhead over a bare boto3 call (moto, one thread)", bench_overhead(reps)))
        sections.append(("The HTTP layer's cost per request (notebook 09's handler, called directly and over HTTP)",
                         bench_http.table(backends, reps)))
        exercises = bench_exercises(backends["moto"], 1 if args.quick else 3)
        if args.write:
            write_between(EXERCISES_BEGIN, EXERCISES_END, f"Measured {time.strftime('%Y-%m-%d')}.\n\n{exercises}",
                          "exercises' check times")
        sections.append(("One full check of a handler (`check_handler`, moto)", bench_checker(backends["moto"])))
        if args.tiers:
            if server is not None:   # the tiers start their own DynamoDB Local (one per run, as make test does)
                server.stop()
                server = None
                os.environ.pop("RETRY_DYNAMODB_ENDPOINT", None)
            sections.append(("The test tiers (`make test`, side by side)", bench_tiers()))
        elif args.tiers_from:
            modified = time.strftime("%Y-%m-%d %H:%M", time.gmtime(args.tiers_from.stat().st_mtime))
            sections.append(("The test tiers (`make test`, side by side)",
                             tiers_table(args.tiers_from.read_text(errors="replace"),
                                         f"From a saved run's log (finished {modified} UTC), not re-run here.")))
    finally:
        if server is not None:
            server.stop()

    import boto3
    import moto

    report = (f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}, moto {moto.__version__}, boto3 {boto3.__version__} "
              f"({time.perf_counter() - started:.0f} s).\n")
    for title, body in sections:
        report += f"\n**{title}**\n\n{body}\n"
    print(report)
    if args.write:
        write_between(README_BEGIN, README_END, report, "benchmark tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
