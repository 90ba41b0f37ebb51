"""What the HTTP layer costs per request: notebook 09's handler over real HTTP vs the same handler called directly.

    python tools/bench_http.py                      # moto and DynamoDB Local, 200 requests per row
    python tools/bench_http.py --reps 50 --skip-dynamodb-local

Notebook 09's own code (its `imports` and `lesson` cells, via helpers.lessons.run_cells) runs in a process of its
own per backend: `handle(headers, body)` -- the whole endpoint as a plain function -- is timed called directly,
then as `POST /payments` to the notebook's uvicorn server on 127.0.0.1, through requests on one keep-alive
connection and with a new connection per request. Three kinds of request:

* a new payment (a fresh key: claim, debit, charge, complete -- four DynamoDB writes);
* a replay (the same key again: one conditional write that fails and hands back the saved response);
* a refusal (malformed JSON: no DynamoDB call at all, so the HTTP layer is nearly all there is).

Each figure is the median of `--reps` requests, direct and HTTP interleaved; "HTTP layer" is the keep-alive
median minus the direct one. Prints one markdown table. tools/bench.py can add it as a section:
`table(backends, reps)` returns the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "09_over_http.ipynb"
EMPTY_EVERY = 20   # untimed: moto copies a table per transaction, so a table that only grows would time moto
KINDS = ("new payment (4 writes)", "replay (1 write)", "refused: malformed JSON (0 writes)")
WAYS = ("direct", "keep-alive", "new connection")


def child(reps: int) -> dict[str, dict[str, float]]:
    """In a process of its own (RETRY_BACKEND set): median milliseconds per kind of request and way of calling."""
    sys.path.insert(0, str(ROOT))
    import requests
    from starlette.datastructures import Headers

    import helpers
    from helpers.lessons import run_cells
    from helpers.services.payment_provider import PaymentProvider

    nb = run_cells(NOTEBOOK, {})
    try:
        nb["provider"] = PaymentProvider(nb["db"].clock)
        url, handle = nb["server"].url + "/payments", nb["handle"]
        session = requests.Session()
        counter = iter(range(10**9))

        def empty() -> None:
            for table in (nb["wallets"], nb["records"]):
                helpers.empty_table(table, ["pk"])
            nb["open_account_wallet"](nb["wallets"], "bench", 10**15, owner="acct_alice")

        def headers(key: str) -> Headers:      # the key as a Structured Field String, as 09 requires
            return Headers({"authorization": "Bearer sk_test_alice", "idempotency-key": f'"{key}"',
                            "content-type": "application/json"})

        payment = json.dumps({"wallet": "bench", "amount": 1}).encode()
        replayed_key = "bench-replayed"

        def body_and_key(kind: str) -> tuple[bytes, str]:
            if kind.startswith("new"):
                return payment, f"bench-{next(counter)}"
            if kind.startswith("replay"):
                return payment, replayed_key
            return b'{"wallet": "bench"', f"bench-{next(counter)}"

        def expected(kind: str) -> int:
            return 400 if kind.startswith("refused") else 201

        calls: dict[str, Callable[[bytes, str], int]] = {
            "direct": lambda body, key: handle(headers(key), body).status_code,
            "keep-alive": lambda body, key: session.post(url, data=body, headers=headers(key),
                                                         timeout=(2, 10)).status_code,
            "new connection": lambda body, key: requests.post(url, data=body, headers={**headers(key),
                                                              "connection": "close"}, timeout=(2, 10)).status_code,
        }
        samples: dict[str, dict[str, list[float]]] = {k: {w: [] for w in WAYS} for k in KINDS}
        empty()
        handle(headers(replayed_key), payment)
        for kind in KINDS:                                       # warm up, untimed
            for way in WAYS:
                for _ in range(3):
                    calls[way](*body_and_key(kind))
        for i in range(reps):
            if i % EMPTY_EVERY == 0:
                empty()
                handle(headers(replayed_key), payment)
            for kind in KINDS:
                for way in WAYS:
                    body, key = body_and_key(kind)
                    started = time.perf_counter()
                    status = calls[way](body, key)
                    samples[kind][way].append((time.perf_counter() - started) * 1000)
                    if status != expected(kind):
                        raise RuntimeError(f"{kind}, {way}: answered {status}, expected {expected(kind)}")
        session.close()
        return {k: {w: statistics.median(v) for w, v in ways.items()} for k, ways in samples.items()}
    finally:
        nb["server"].stop()


def measure(backends: dict[str, dict[str, str]], reps: int) -> dict[str, dict[str, dict[str, float]]]:
    results = {}
    for backend, env in backends.items():
        print(f"bench_http: {backend}, {reps} requests per row", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, __file__, "--child", "--reps", str(reps)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"bench_http on {backend} failed:\n{done.stderr[-3000:]}")
        results[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def table(backends: dict[str, dict[str, str]], reps: int) -> str:
    """The markdown table: per backend and kind of request, ms direct / over HTTP, and the HTTP layer's cost."""
    results = measure(backends, reps)
    names = {"moto": "moto", "dynamodb-local": "DynamoDB Local"}
    lines = ["| backend | request | direct `handle()` ms | HTTP keep-alive ms | HTTP layer ms | × direct "
             "| new connection each ms |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for backend, kinds in results.items():
        for kind, ms in kinds.items():
            layer = ms["keep-alive"] - ms["direct"]
            lines.append(f"| {names.get(backend, backend)} | {kind} | {ms['direct']:.2f} | {ms['keep-alive']:.2f} "
                         f"| {layer:.2f} | {ms['keep-alive'] / ms['direct']:.1f} | {ms['new connection']:.2f} |")
    return "\n".join(lines) + (f"\n\nMedians of {reps} requests each; notebook 09's server (FastAPI on uvicorn, "
                               "127.0.0.1), client: requests.")


def backends_to_run(skip_dynamodb_local: bool) -> tuple[dict[str, dict[str, str]], Any]:
    """The environments per backend, and the DynamoDB Local server started for them (or None)."""
    env = dict(os.environ, PYTHONHASHSEED="0", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    env.pop("AWS_PROFILE", None)
    backends = {"moto": dict(env, RETRY_BACKEND="moto")}
    server = None
    if not skip_dynamodb_local:
        endpoint = os.environ.get("RETRY_DYNAMODB_ENDPOINT")
        if not endpoint:
            sys.path.insert(0, str(ROOT))
            from helpers.fidelity.dynamodb_local import DynamoDBLocalServer

            server = DynamoDBLocalServer()
            endpoint = server.endpoint_url
        backends["dynamodb-local"] = dict(env, RETRY_BACKEND="dynamodb-local", RETRY_DYNAMODB_ENDPOINT=endpoint)
    return backends, server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200, help="requests per row and way of calling (default 200)")
    parser.add_argument("--skip-dynamodb-local", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)   # one backend, JSON out
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    if args.child:
        print(json.dumps(child(args.reps)))
        return 0
    backends, server = backends_to_run(args.skip_dynamodb_local)
    try:
        print(f"**The HTTP layer's cost per request** (notebook 09's handler)\n\n{table(backends, args.reps)}")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
