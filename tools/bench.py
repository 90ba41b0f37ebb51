"""What the collection costs, measured in one run on this machine.

    make bench                          # everything (a few minutes)
    python tools/bench.py --quick       # fewer repetitions
    python tools/bench.py --skip-notebooks

Three markdown tables, ready to paste into the README:

1. **Notebooks under nbval**: each notebook's wall time under
   `pytest NOTEBOOK --nbval --nbval-current-env`, against a baseline notebook that only does
   the same imports and starts the backend; on moto (target: the collection within 2.0× of
   the baseline) and on DynamoDB Local (target: within 2× of moto).
2. **One logical debit per pattern**: round trips, write units (as DynamoDB Local reports
   them) and milliseconds, on both backends, and whether a resend applies again.
3. **The helpers' overhead** over a bare boto3 call: a client from `helpers.connect()`
   (faithful moto, virtual backoff) against a stock moto boto3 client, same operation, same
   table (target: within 10%).

Times are medians of repeated runs (`time.perf_counter`); the machine is whatever this is,
so compare ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from notebook_list import notebooks  # noqa: E402

BASELINE_SOURCE = 'import helpers\nhelpers.setup()\ndb = helpers.connect()\ntable = helpers.fresh_table(db, "bench")\n'
NOTEBOOK_TARGET, BACKEND_TARGET, OVERHEAD_TARGET = 2.0, 2.0, 0.10


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


# --- 1. notebooks under nbval -----------------------------------------------------------------
def baseline_notebook(folder: Path) -> Path:
    """A notebook with one cell: the imports and the backend, nothing else."""
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

    lines.append(row("baseline (imports + backend only)", baseline))
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


def ledger_transaction(client: Any, table: str, rid: str, **extra: Any) -> Any:
    try:
        return client.transact_write_items(TransactItems=[
            {"Put": {"TableName": table, "Item": {"pk": s(f"request#{rid}")},
                     "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Update": {"TableName": table, "Key": {"pk": s("w")}, "UpdateExpression": "SET balance = balance - :a",
                        "ConditionExpression": "attribute_exists(balance)", "ExpressionAttributeValues": {":a": n(1)}}},
        ], **extra)
    except client.exceptions.TransactionCanceledException as error:
        return error.response  # the marker exists: already applied


def token_transaction(client: Any, table: str, rid: str, **extra: Any) -> Any:
    return client.transact_write_items(ClientRequestToken=rid, TransactItems=[
        {"Update": {"TableName": table, "Key": {"pk": s("w")}, "UpdateExpression": "SET balance = balance - :a",
                    "ConditionExpression": "attribute_exists(balance)", "ExpressionAttributeValues": {":a": n(1)}}},
    ], **extra)


PATTERNS: list[tuple[str, Callable[..., Any]]] = [
    ("naive `update_item`", naive_update),
    ("`update_item` checking `last_request_id`", last_request_id_update),
    ("`TransactWriteItems`: marker item + debit", ledger_transaction),
    ("`TransactWriteItems` with `ClientRequestToken`", token_transaction),
]
# What AWS documents for items under 1 KB: 1 write unit per item written, 2 per item in a transaction.
AWS_WRITE_UNITS = {naive_update: 1, last_request_id_update: 1, ledger_transaction: 4, token_transaction: 2}


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


def balance(client: Any, table: str) -> int:
    return int(client.get_item(TableName=table, Key={"pk": s("w")}, ConsistentRead=True)["Item"]["balance"]["N"])


def write_units(response: dict[str, Any]) -> float | None:
    consumed = response.get("ConsumedCapacity")
    if not consumed:
        return None
    entries = consumed if isinstance(consumed, list) else [consumed]
    return sum(float(e.get("CapacityUnits", 0) or 0) for e in entries)


class RoundTrips:
    """Counts HTTP requests a client sends (botocore's request-created event, retries included)."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        client.meta.events.register("request-created.dynamodb", self._seen)

    def _seen(self, **_: Any) -> None:
        self.count += 1


def bench_pattern(client: Any, table: str, debit: Callable[..., Any], reps: int) -> dict[str, Any]:
    trips = RoundTrips(client)
    for _ in range(max(5, reps // 10)):  # warm up
        debit(client, table, str(uuid.uuid4()))
    before_trips = trips.count
    debit(client, table, str(uuid.uuid4()))
    calls = trips.count - before_trips
    units = write_units(debit(client, table, str(uuid.uuid4()), ReturnConsumedCapacity="TOTAL"))
    rid = str(uuid.uuid4())
    debit(client, table, rid)
    start_balance = balance(client, table)
    debit(client, table, rid)  # the same request again, as a retry sends it
    safe = balance(client, table) == start_balance
    samples = []
    for _ in range(reps):
        rid = str(uuid.uuid4())
        started = time.perf_counter()
        debit(client, table, rid)
        samples.append((time.perf_counter() - started) * 1000)
    return {"calls": calls, "units": units, "ms": median(samples), "safe": safe}


def bench_patterns(backends: list[str], reps: int) -> str:
    import helpers

    results: dict[str, dict[str, dict[str, Any]]] = {}
    for backend in backends:
        log(f"patterns on {backend}")
        db = helpers.connect(backend)
        client = db.client()
        results[backend] = {}
        for i, (name, debit) in enumerate(PATTERNS):
            table = make_table(client, f"bench-pattern-{i}")
            results[backend][name] = bench_pattern(client, table, debit, reps)
    units_from = "dynamodb-local" if "dynamodb-local" in results else backends[0]
    head = "| one logical debit | resend applies again? | round trips | write units (" + (
        "DynamoDB Local" if units_from == "dynamodb-local" else units_from) + ") | write units (AWS documents) |"
    head += "".join(f" {'moto' if b == 'moto' else 'DynamoDB Local'} ms |" for b in backends)
    lines = [head, "|---|---|---:|---:|---:|" + "---:|" * len(backends)]
    for name, debit in PATTERNS:
        first = results[backends[0]][name]
        units = results[units_from][name]["units"]
        row = f"| {name} | {'no' if first['safe'] else 'yes'} | {first['calls']} | "
        row += f"{units:g} |" if units is not None else "not reported |"
        row += f" {AWS_WRITE_UNITS[debit]} |"
        row += "".join(f" {results[b][name]['ms']:.2f} |" for b in backends)
        lines.append(row)
    disagree = [
        name for name, _ in PATTERNS
        if len({(results[b][name]["calls"], results[b][name]["safe"]) for b in backends}) > 1
    ]
    note = f"\n\nBackends disagree on calls or retry-safety for: {', '.join(disagree)}" if disagree else ""
    return "\n".join(lines) + note


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


# --- main ----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (1 nbval run, 50 calls)")
    parser.add_argument("--nbval-reps", type=int, help="nbval runs per notebook and backend (default 3; quick 1)")
    parser.add_argument("--reps", type=int, help="timed calls per pattern (default 300; quick 50)")
    parser.add_argument("--skip-notebooks", action="store_true")
    parser.add_argument("--skip-dynamodb-local", action="store_true")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to time (default: all committed)")
    args = parser.parse_args()
    nbval_reps = args.nbval_reps or (1 if args.quick else 3)
    reps = args.reps or (50 if args.quick else 300)
    paths = [p.resolve() for p in args.notebooks] or notebooks()

    os.environ.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    os.environ.pop("AWS_PROFILE", None)
    base_env = dict(os.environ, PYTHONHASHSEED="0")
    backends = {"moto": dict(base_env, RETRY_BACKEND="moto")}
    server = None
    started = time.perf_counter()
    try:
        if not args.skip_dynamodb_local:
            endpoint = os.environ.get("RETRY_DYNAMODB_ENDPOINT")
            if not endpoint:
                from helpers.dynamodb_local import DynamoDBLocalServer

                server = DynamoDBLocalServer()  # one server for the whole run
                endpoint = server.endpoint_url
                os.environ["RETRY_DYNAMODB_ENDPOINT"] = endpoint
            backends["dynamodb-local"] = dict(base_env, RETRY_BACKEND="dynamodb-local", RETRY_DYNAMODB_ENDPOINT=endpoint)
        sections = []
        if not args.skip_notebooks:
            sections.append(("Notebooks under strict nbval (wall seconds, median of "
                             f"{nbval_reps} run{'s' if nbval_reps > 1 else ''})",
                             bench_notebooks(paths, nbval_reps, backends)))
        sections.append((f"One logical debit, per pattern (median of {reps} debits)", bench_patterns(list(backends), reps)))
        sections.append(("The helpers' overhead over a bare boto3 call (moto, one thread)", bench_overhead(reps)))
    finally:
        if server is not None:
            server.stop()

    import boto3
    import moto

    print(f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, moto {moto.__version__}, boto3 {boto3.__version__} "
          f"({time.perf_counter() - started:.0f} s).")
    for title, body in sections:
        print(f"\n### {title}\n\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
