"""Fidelity probes: where stock moto, this collection's default and DynamoDB Local agree, and where not.

    make fidelity                                   # the table, on this machine
    python tools/fidelity.py --threads 32 --rounds 100

Each probe runs against three targets, each in a process of its own:

* **stock moto**: plain `moto.mock_aws()` and a plain boto3 client (no helpers);
* **default**: `helpers.connect("moto")`, i.e. moto made faithful by `helpers/fidelity/faithful_moto.py`;
* **DynamoDB Local**: `helpers.connect("dynamodb-local")`, one server started for the run.

The result is a markdown table, ready to paste into the README. Nothing here is timed:
the probes count outcomes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {"stock": "stock moto", "moto": "default (faithful moto)", "dynamodb-local": "DynamoDB Local"}
REGION = "us-east-1"


# --- clients ---------------------------------------------------------------------------------
def make_client(target: str) -> Any:
    """A low-level DynamoDB client for `target`, with SDK retries off (a probe counts every outcome)."""
    if target == "stock":
        import boto3
        from botocore.config import Config
        from moto import mock_aws

        mock_aws().start()
        return boto3.client(
            "dynamodb", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing",
            config=Config(max_pool_connections=64, retries={"mode": "standard", "total_max_attempts": 1}),
        )
    import helpers

    return helpers.connect(target).client()


def new_table(client: Any, name: str) -> str:
    client.create_table(
        TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1})
    return name


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def s(value: str) -> dict[str, str]:
    return {"S": value}


def code(error: Exception) -> str:
    return getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)


def open_wallet(client: Any, table: str, balance: int) -> None:
    client.put_item(TableName=table, Item={"pk": s("w"), "balance": n(balance)})


def balance(client: Any, table: str) -> int:
    return int(client.get_item(TableName=table, Key={"pk": s("w")}, ConsistentRead=True)["Item"]["balance"]["N"])


def guarded_debit(client: Any, table: str, amount: int, request_id: str) -> str:
    """Notebook 03's idempotent debit, on a low-level client."""
    try:
        client.update_item(
            TableName=table, Key={"pk": s("w")},
            UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
            ConditionExpression="attribute_exists(balance) AND "
                                "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
            ExpressionAttributeValues={":amount": n(amount), ":rid": s(request_id)},
        )
        return "applied"
    except Exception as error:  # counted, not hidden
        return "already applied" if code(error) == "ConditionalCheckFailedException" else code(error)


# --- probes ----------------------------------------------------------------------------------
def probe_same_id(client: Any, threads: int, rounds: int, suffix: str = "") -> dict[str, Any]:
    from helpers.concurrency import race

    table = new_table(client, "fidelity-same-id" + suffix)
    bad = 0
    for r in range(rounds):
        open_wallet(client, table, 10_000)
        outcomes = race(lambda i: guarded_debit(client, table, 7, f"round-{r}"), threads)
        if outcomes.count("applied") != 1 or balance(client, table) != 10_000 - 7:
            bad += 1
    return {"value": f"{bad} of {rounds}", "bad": bad}


def probe_distinct(client: Any, threads: int, rounds: int, suffix: str = "") -> dict[str, Any]:
    from helpers.concurrency import race

    table = new_table(client, "fidelity-distinct" + suffix)
    lost = 0
    errors: dict[str, int] = {}
    for r in range(rounds):
        open_wallet(client, table, 10_000)
        outcomes = race(lambda i: guarded_debit(client, table, 3, f"r{r}-{i}"), threads)
        for o in outcomes:
            if o != "applied":
                errors[o] = errors.get(o, 0) + 1
        lost += (balance(client, table) - (10_000 - 3 * outcomes.count("applied"))) // 3
    total = threads * rounds
    value = f"{lost} of {total} ({lost / total:.1%})"
    if errors:
        value += " + errors: " + ", ".join(f"{k} ×{v}" for k, v in sorted(errors.items()))
    return {"value": value, "lost": lost}


def probe_conflicts(client: Any, threads: int, rounds: int, suffix: str = "") -> dict[str, Any]:
    """Concurrent transactions on one wallet: does the backend ever cancel one with TransactionConflict?"""
    from helpers.concurrency import race

    table = new_table(client, "fidelity-conflicts" + suffix)
    seen: dict[str, int] = {}

    def transaction(r: int, i: int) -> str:
        try:
            client.transact_write_items(TransactItems=[
                {"Put": {"TableName": table, "Item": {"pk": s(f"m-{r}-{i}")},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Update": {"TableName": table, "Key": {"pk": s("wallet")},
                            "UpdateExpression": "SET balance = balance - :a",
                            "ExpressionAttributeValues": {":a": n(1)}}},
            ])
            return "applied"
        except Exception as error:  # noqa: BLE001 - every answer is a finding
            reasons = getattr(error, "response", {}).get("CancellationReasons", [])
            return ",".join(r.get("Code", "?") for r in reasons) or code(error)

    for r in range(rounds):
        open_wallet(client, table, 10_000)
        for outcome in race(lambda i: transaction(r, i), threads):
            seen[outcome] = seen.get(outcome, 0) + 1
    conflicts = sum(v for k, v in seen.items() if "TransactionConflict" in k)
    return {"value": f"{conflicts} of {threads * rounds} transactions", "conflicts": conflicts}


def with_switch_interval(probe: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The same probe with Python switching threads every 0.5 ms instead of 5 ms.

    At Python's default interval a thread usually finishes a whole moto request before another
    runs, so stock moto's races are rare on an idle machine and frequent on a busy one (or in a
    kernel with other threads awake). Switching ten times as often makes them show reliably.
    """

    def run(client: Any, threads: int, rounds: int) -> dict[str, Any]:
        before = sys.getswitchinterval()
        sys.setswitchinterval(FAST_SWITCH_SECONDS)
        try:
            return probe(client, threads, rounds, suffix="-fast")
        finally:
            sys.setswitchinterval(before)

    return run


FAST_SWITCH_SECONDS = 0.0005


def token_debit(client: Any, table: str, amount: int, token: str) -> None:
    client.transact_write_items(
        ClientRequestToken=token,
        TransactItems=[{"Update": {
            "TableName": table, "Key": {"pk": s("w")}, "UpdateExpression": "SET balance = balance - :a",
            "ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {":a": n(amount)},
        }}],
    )


def token_resent(client: Any, name: str, token: str, amount: int) -> tuple[str | None, int]:
    """A wallet of 100 debited 10 under `token`, then `amount` under the same token: (the error code, or None if the
    second call succeeded; the balance after it)."""
    table = new_table(client, name)
    open_wallet(client, table, 100)
    token_debit(client, table, 10, token)
    try:
        token_debit(client, table, amount, token)
    except Exception as error:
        return code(error), balance(client, table)
    return None, balance(client, table)


def probe_token_replay(client: Any) -> dict[str, Any]:
    error, after = token_resent(client, "fidelity-token-replay", "fidelity-token-1", 10)
    if error:
        return {"value": f"error {error} (balance {after})"}
    return {"value": "no (success, nothing applied)" if after == 90 else f"yes: applied again (balance {after})"}


def probe_token_mismatch(client: Any) -> dict[str, Any]:
    error, after = token_resent(client, "fidelity-token-mismatch", "fidelity-token-2", 20)
    return {"value": error or f"no error: it ran (balance {after})"}


def units(response: dict[str, Any]) -> str:
    consumed = response.get("ConsumedCapacity")
    if not consumed:
        return "none"
    entries = consumed if isinstance(consumed, list) else [consumed]
    total = sum(float(e.get("CapacityUnits", 0) or 0) for e in entries)
    writes = [e.get("WriteCapacityUnits") for e in entries if e.get("WriteCapacityUnits") is not None]
    text = f"{total:g}"
    if writes and sum(writes) != total:
        text += f" ({sum(writes):g} write)"
    return text


def probe_capacity(client: Any) -> dict[str, Any]:
    table = new_table(client, "fidelity-capacity")
    put = client.put_item(TableName=table, Item={"pk": s("w"), "balance": n(100)}, ReturnConsumedCapacity="TOTAL")
    update = client.update_item(
        TableName=table, Key={"pk": s("w")}, UpdateExpression="SET balance = balance - :a",
        ExpressionAttributeValues={":a": n(1)}, ReturnConsumedCapacity="TOTAL",
    )
    transactions = []
    for size in (1, 2, 4):  # AWS documents 2 write units per item (up to 1 KB): 2, 4, 8
        markers = [{"Put": {"TableName": table, "Item": {"pk": s(f"marker#{size}#{i}")},
                            "ConditionExpression": "attribute_not_exists(pk)"}} for i in range(size - 1)]
        debit = {"Update": {"TableName": table, "Key": {"pk": s("w")}, "UpdateExpression": "SET balance = balance - :a",
                            "ExpressionAttributeValues": {":a": n(1)}}}
        response = client.transact_write_items(ReturnConsumedCapacity="TOTAL", TransactItems=[*markers, debit])
        transactions.append(units(response))
    return {"value": f"put {units(put)} · update {units(update)} · transaction of 1/2/4 items {'/'.join(transactions)}"}


def probe_all_old(client: Any) -> dict[str, Any]:
    table = new_table(client, "fidelity-all-old")
    open_wallet(client, table, 100)
    condition = {"ConditionExpression": "attribute_not_exists(pk)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    writes = {   # each fails its condition on the wallet: does the failure carry the item?
        "update": lambda: client.update_item(TableName=table, Key={"pk": s("w")}, UpdateExpression="SET balance = :b",
                                             ExpressionAttributeValues={":b": n(0)}, **condition),
        "put": lambda: client.put_item(TableName=table, Item={"pk": s("w"), "balance": n(0)}, **condition),
        "transaction": lambda: client.transact_write_items(TransactItems=[{"Put": {
            "TableName": table, "Item": {"pk": s("w"), "balance": n(0)}, **condition}}]),
    }
    seen = []
    for name, write in writes.items():
        try:
            write()
            seen.append(f"{name}: no failure" if name == "transaction" else f"{name}: no CCF")
        except Exception as error:
            response = getattr(error, "response", {})
            item = response.get("Item") or any(r.get("Item") for r in response.get("CancellationReasons", []))
            seen.append(f"{name} {'yes' if item else 'no'}")
    return {"value": " · ".join(seen)}


def probe_ttl(client: Any) -> dict[str, Any]:
    table = new_table(client, "fidelity-ttl")
    try:
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
        )
    except Exception as error:
        return {"value": f"TTL not supported: {code(error)}"}
    client.put_item(TableName=table, Item={"pk": s("old"), "expires_at": n(int(time.time()) - 86_400)})
    time.sleep(2)
    item = client.get_item(TableName=table, Key={"pk": s("old")}, ConsistentRead=True).get("Item")
    return {"value": "no (still readable 2 s later)" if item else "yes: gone within 2 s"}


def probe_fifo_dedup(target: str) -> dict[str, Any]:
    """SQS (always moto): a FIFO resend with the same deduplication ID, after the first copy was deleted."""
    import boto3

    if target == "stock":  # mock_aws() is already started by make_client
        sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    else:
        import helpers

        sqs = helpers.connect(target).sqs()
    url = sqs.create_queue(QueueName="fidelity-dedup.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    send = dict(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="op-1")
    sqs.send_message(**send)
    for message in sqs.receive_message(QueueUrl=url).get("Messages", []):
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    sqs.send_message(**send)  # seconds later: AWS documents it dropped (5-minute window)
    again = sqs.receive_message(QueueUrl=url).get("Messages", [])
    return {"value": "yes: delivered again" if again else "no: dropped"}


PROBES: list[tuple[str, str, Callable[..., dict[str, Any]]]] = [
    ("same_id", "same-ID guarded debit, {threads} threads × {rounds} rounds: rounds with ≠1 winner", probe_same_id),
    ("distinct", "distinct debits, {threads} threads × {distinct_rounds} rounds: lost updates", probe_distinct),
    ("same_id_fast", "the same-ID race, threads switching every 0.5 ms", with_switch_interval(probe_same_id)),
    ("distinct_fast", "distinct debits, threads switching every 0.5 ms", with_switch_interval(probe_distinct)),
    ("conflicts", "{threads} concurrent transactions on one wallet × {rounds} rounds: cancelled with "
                  "TransactionConflict (AWS can; the helpers inject it)", probe_conflicts),
    ("token_replay", "ClientRequestToken replay: second effect?", probe_token_replay),
    ("token_mismatch", "ClientRequestToken, same token, other parameters", probe_token_mismatch),
    ("capacity", "ConsumedCapacity (TOTAL); AWS documents put 1 · update 1 · transactions 2/4/8", probe_capacity),
    ("all_old", "ReturnValuesOnConditionCheckFailure=ALL_OLD: item returned?", probe_all_old),
    ("ttl", "TTL enabled, item expired a day ago: deleted?", probe_ttl),
    ("fifo_dedup", "SQS FIFO resend, same deduplication ID, after the first copy was deleted: delivered? "
                   "(AWS documents no; SQS is moto's for every target)", probe_fifo_dedup),
]


def run_probes(target: str, threads: int, rounds: int) -> dict[str, Any]:
    client = make_client(target)
    results: dict[str, Any] = {}
    for key, _, probe in PROBES:
        started = time.perf_counter()
        try:
            if key in ("same_id", "same_id_fast", "conflicts"):
                result = probe(client, threads, rounds)
            elif key in ("distinct", "distinct_fast"):
                result = probe(client, threads, max(1, rounds // 2))
            elif key == "fifo_dedup":
                result = probe(target)
            else:
                result = probe(client)
        except Exception as error:  # a probe that breaks is a finding, not a crash
            result = {"value": f"probe failed: {type(error).__name__}: {str(error)[:120]}"}
        result["seconds"] = round(time.perf_counter() - started, 2)
        results[key] = result
    return results


# --- the parent: one process per target, one table ------------------------------------------
def child(target: str, threads: int, rounds: int, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--probe", target, "--threads", str(threads), "--rounds", str(rounds)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"probes on {target} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: dict[str, dict[str, Any]], threads: int, rounds: int) -> str:
    names = [TARGETS[t] for t in results]
    lines = ["| probe | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key, label, _ in PROBES:
        label = label.format(threads=threads, rounds=rounds, distinct_rounds=max(1, rounds // 2))
        cells = [results[t][key]["value"] for t in results]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions() -> str:
    import boto3
    import moto

    from helpers.fidelity.dynamodb_local import NPM_PACKAGE

    return f"moto {moto.__version__}, boto3 {boto3.__version__}, DynamoDB Local from npm {NPM_PACKAGE}"


BEGIN, END = "<!-- fidelity table: written by `make fidelity` -->", "<!-- end of fidelity table -->"


def write_readme(heading: str, markdown: str) -> None:
    """Replace the table between README's markers: the figures live there, written by this command."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    before, rest = text.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    readme.write_text(f"{before}{BEGIN}\n{heading}\n\n{markdown}\n{END}{after}", encoding="utf-8")
    print(f"\nwrote the table into {readme.name}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=50, help="rounds of the same-ID race (distinct: half as many)")
    parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=list(TARGETS))
    parser.add_argument("--write", action="store_true",
                        help="also write the table into README.md, between its fidelity markers")
    parser.add_argument("--probe", choices=list(TARGETS), help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()

    if args.probe:
        print(json.dumps(run_probes(args.probe, args.threads, args.rounds)))
        return 0

    started = time.perf_counter()
    env = dict(os.environ, PYTHONHASHSEED="0", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    env.pop("AWS_PROFILE", None)
    server = None
    if "dynamodb-local" in args.targets and not env.get("RETRY_DYNAMODB_ENDPOINT"):
        from helpers.fidelity.dynamodb_local import DynamoDBLocalServer

        server = DynamoDBLocalServer()
        env["RETRY_DYNAMODB_ENDPOINT"] = server.endpoint_url
    try:
        results = {}
        for target in args.targets:
            print(f"probing {TARGETS[target]} ...", file=sys.stderr, flush=True)
            results[target] = child(target, args.threads, args.rounds, env)
    finally:
        if server is not None:
            server.stop()
    heading = f"Fidelity probes ({versions()}), {time.perf_counter() - started:.0f} s:"
    print(heading + "\n")
    print(table(results, args.threads, args.rounds))
    if args.write:
        write_readme(heading, table(results, args.threads, args.rounds))
    slow = {t: sum(r["seconds"] for r in res.values()) for t, res in results.items()}
    print("\nseconds per target: " + ", ".join(f"{TARGETS[t]} {v:.1f}" for t, v in slow.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
