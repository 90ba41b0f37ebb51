"""Mutation testing of the lessons' own code: does the suite notice when a handler is wrong?

    make mutants                                 # every mutant in tests/mutation/mutants.json; report + README score
    python tools/mutants.py --only 06-claim-2    # one mutant, its tests, what killed it
    python tools/mutants.py --ci                 # the CI subset: each must be killed (tests/test_mutants.py runs it)
    python tools/mutants.py --ci --remember-killers   # and note each one's killing test: run first next time
    python tools/mutants.py --map                # which tests run which lesson function (tests/mutation/map.json)
    python tools/mutants.py --generate           # propose the mutants from the notebooks' `lesson` cells

A mutant is one small edit to one `lesson` cell of notebooks 01-11 -- a condition dropped, `attribute_exists`
for `attribute_not_exists`, a comparison off by one, an `except` widened, a fence removed -- written as the exact
text it replaces and the text it puts there (tests/mutation/mutants.json). It is applied where the tests load a
notebook's code (helpers.lessons.SOURCE_HOOK), so every test that runs the notebook's functions runs the mutant.

The runner does not run the whole suite per mutant. A map run first records, per test, which lesson functions it
calls (each function of a `lesson` cell reports itself when called); a mutant in function f of notebook N then
runs exactly the tests that call f, on moto, in one pytest process, and every failing test is a kill. Tests that
run a notebook in a kernel (nbval, the hygiene walk, the browser) are not in the map: the score is the helpers'
tests' (a floor; nbval would kill more mutants through changed outputs).

The report (tests/mutation/report-<label>.md and .json) says, per mutant, which tests kill it, and the totals:
the suite's score, and check_handler's alone (the kills by tests in which check_handler ran). A mutant no test
kills is a survivor: it is either equivalent (its entry says why, and it leaves the score's denominator) or a
missing test.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "mutation"
MUTANTS, MAP = HERE / "mutants.json", HERE / "map.json"
LESSONS = [f"{n:02d}" for n in range(1, 12)]
MUTANT_ENV, MAP_ENV = "RETRY_MUTANT", "RETRY_MUTANT_MAP"
LOADED = "<loaded>"          # the map's name for "loaded the notebook" (a mutant outside any function)
# Tests that start a kernel, a browser or a fresh install: they never load code through the helpers' loader.
NOT_MAPPED = ("test_notebook_hygiene.py", "test_browser.py", "test_jupyter_server.py", "test_book.py",
              "test_install.py", "test_launcher.py", "test_mutants.py")


@dataclass
class Mutant:
    id: str
    notebook: str
    cell: int                # the index among the notebook's `lesson` cells
    function: str            # the top-level function (or class) it is in
    operator: str
    old: str                 # exact text in the cell, found once
    new: str
    equivalent: str = ""     # why no test can tell it from the original, when none can
    ci: bool = False         # in the CI subset
    ci_killer: str = ""      # in the CI subset: the test that killed it last time (--remember-killers); run first

    def apply(self, source: str) -> str:
        if source.count(self.old) != 1:
            raise StaleMutant(f"mutant {self.id}: its text is in {self.notebook}'s lesson cell {self.cell} "
                              f"{source.count(self.old)} times, not once; run tools/mutants.py --generate")
        return source.replace(self.old, self.new)


class StaleMutant(ValueError):
    """A notebook changed under a mutant: its text is no longer in its cell exactly once."""


def load_mutants() -> list[Mutant]:
    return [Mutant(**entry) for entry in json.loads(MUTANTS.read_text())]


def notebook_path(number: str) -> str:
    return next(p.name for p in (ROOT / "notebooks").glob(f"{number}_*.ipynb"))


# --- the operators: each proposes (function, operator, old, new) edits of one cell ----------------------------

CONDITION_KEYS = ("ConditionExpression",)
NEVER = "never_written"      # an attribute no item has: `attribute_not_exists(never_written)` is always true


def _functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    return [(node.name, node) for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


def _lines(source: str, node: ast.AST) -> tuple[str, int, int]:
    """The whole lines a node spans, and the node's offsets inside that text."""
    lines = source.splitlines(keepends=True)
    text = "".join(lines[node.lineno - 1:node.end_lineno])
    start = node.col_offset
    end = len(text) - len(lines[node.end_lineno - 1]) + node.end_col_offset
    return text, start, end


def _replace(source: str, node: ast.AST, new_text: str) -> tuple[str, str]:
    text, start, end = _lines(source, node)
    return text, text[:start] + new_text + text[end:]


def _condition_strings(function: ast.AST) -> list[ast.Constant]:
    """String constants given as a ConditionExpression (a keyword, or a dict's key)."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.keyword) and node.arg in CONDITION_KEYS and isinstance(node.value, ast.Constant):
            found.append(node.value)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if (isinstance(key, ast.Constant) and key.value in CONDITION_KEYS
                        and isinstance(value, ast.Constant)):
                    found.append(value)
    return [c for c in found if isinstance(c.value, str)]


def _split_top(expression: str, word: str) -> list[str]:
    """`expression` split at ` word ` outside parentheses (one part if there is none)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(expression):
        depth += {"(": 1, ")": -1}.get(expression[i], 0)
        if depth == 0 and expression.startswith(f" {word} ", i):
            parts.append(expression[start:i])
            i += len(word) + 2
            start = i
            continue
        i += 1
    return parts + [expression[start:]]


def _groups(expression: str) -> list[str]:
    """The expression and every parenthesized group in it that is not a function's arguments."""
    groups, opened = [expression], []
    for i, char in enumerate(expression):
        if char == "(":
            opened.append(i)
        elif char == ")" and opened:
            start = opened.pop()
            if start == 0 or not (expression[start - 1].isalnum() or expression[start - 1] == "_"):
                groups.append(expression[start + 1:i])
    return groups


def _condition_edits(condition: str) -> list[tuple[str, str]]:
    """(operator, new condition) for one DynamoDB condition: clauses made moot, comparisons and exists swapped.

    A clause is made moot, not deleted: `A AND B` becomes `A AND (B OR attribute_not_exists(never_written))`, so
    every placeholder stays in use (DynamoDB refuses an unused one, which would make the mutant trivially loud)."""
    edits = [("condition-always-true", f"({condition}) OR attribute_not_exists({NEVER})")]
    moot = {"AND": f"({{}} OR attribute_not_exists({NEVER}))", "OR": f"({{}} AND attribute_exists({NEVER}))"}
    for group in _groups(condition):
        for word, template in moot.items():
            parts = [part.strip() for part in _split_top(group, word)]
            if len(parts) > 1 and condition.count(group) == 1:
                for i, part in enumerate(parts):
                    changed = f" {word} ".join(parts[:i] + [template.format(part)] + parts[i + 1:])
                    edits.append((f"clause-moot ({part})", condition.replace(group, changed)))
    for old, new in (("attribute_not_exists(", "attribute_exists("), ("attribute_exists(", "attribute_not_exists(")):
        for match in re.finditer(re.escape(old), condition):
            if old == "attribute_exists(" and condition[max(0, match.start() - 4):match.start()] == "not_":
                continue
            edits.append((f"{old[:-1]} swapped", condition[:match.start()] + new + condition[match.end():]))
    for old, new in ((" <= ", " < "), (" >= ", " > "), (" < ", " <= "), (" > ", " >= "), (" <> ", " = "),
                     (" = ", " <> ")):
        for match in re.finditer(re.escape(old), condition):
            edits.append((f"comparison {old.strip()} to {new.strip()}",
                           condition[:match.start()] + new + condition[match.end():]))
    return edits


PY_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
              ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def candidates(source: str) -> list[tuple[str, str, str, str]]:
    """Every (function, operator, old, new) this cell offers."""
    tree = ast.parse(source)
    found = []
    for name, function in _functions(tree):
        def add(operator: str, node: ast.AST, new_text: str, name: str = name) -> None:
            old, new = _replace(source, node, new_text)
            found.append((name, operator, old, new))

        for constant in _condition_strings(function):
            for operator, condition in _condition_edits(constant.value):
                add(operator, constant, repr(condition))
        for node in ast.walk(function):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in PY_COMPARE:
                add("python comparison flipped", node,
                    ast.unparse(ast.Compare(node.left, [PY_COMPARE[type(node.ops[0])]()], node.comparators)))
            elif isinstance(node, ast.BoolOp):
                other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
                add(f"{'and' if isinstance(node.op, ast.And) else 'or'} swapped", node,
                    ast.unparse(ast.BoolOp(other, node.values)))
            elif isinstance(node, ast.If):
                add("if negated", node.test, f"not ({ast.unparse(node.test)})")
                add("if never taken", node.test, "False")
            elif isinstance(node, ast.ExceptHandler) and node.type is not None:
                if ast.unparse(node.type) not in ("Exception", "BaseException"):
                    add("except widened", node.type, "Exception")
                add("except never matches", node.type, "ZeroDivisionError")
            elif isinstance(node, ast.Raise):
                add("raise dropped", node, "pass")
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, bool):
                add("return flipped", node.value, repr(not node.value.value))
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                add("call dropped", node, "pass")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) \
                    and not isinstance(node.left, ast.Constant) and not _is_text(node):
                other = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
                add("+ and - swapped", node, ast.unparse(ast.BinOp(node.left, other, node.right)))
    usable = []
    for name, operator, old, new in found:
        if old != new and source.count(old) == 1:
            try:
                ast.parse(source.replace(old, new))
            except SyntaxError:
                continue
            usable.append((name, operator, old, new))
    return usable


def _is_text(node: ast.BinOp) -> bool:
    return any(isinstance(n, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(n, "value", ""), str)
               for n in (node.left, node.right))


def generate() -> list[Mutant]:
    """Every candidate of notebooks 01-11, with a stable id (notebook-function-n)."""
    from helpers.lessons import lesson_cells

    proposed = []
    for number in LESSONS:
        notebook = notebook_path(number)
        counts: dict[str, int] = {}
        for index, source in enumerate(lesson_cells(notebook, "lesson")):
            for function, operator, old, new in candidates(source):
                counts[function] = counts.get(function, 0) + 1
                proposed.append(Mutant(f"{number}-{function}-{counts[function]}", notebook, index, function,
                                       operator, old, new))
    return proposed


# The functions each lesson teaches (its handlers and their parts), and how many mutants each lesson gets: the
# committed set is drawn from the candidates in these functions, the kinds of mistake first, spread over
# the functions (select()). Drivers and charts are left to nbval.
HANDLERS = {
    "01": (7, ["set_status", "advance_status", "set_status_at_version", "send"]),
    "02": (7, ["create_once", "create_checked", "check_order"]),
    "03": (8, ["debit_naive", "debit_idempotent", "pay"]),
    "04": (8, ["debit_guarded", "debit_guarded_ambiguous", "debit_with_receipt"]),
    "05": (8, ["debit_ledger", "debit_token"]),
    "06": (14, ["claim", "take_over", "set_lease", "debit", "do_work", "complete", "answer_from",
                "end_lease", "pay"]),
    "07": (9, ["already_applied", "debit_once", "consume", "stream_handler", "handler_partial"]),
    "08": (7, ["debit_ledger", "debit_mistaken"]),
    "09": (12, ["checked_key", "payment_of", "check_owner", "claim", "take_over", "debit", "set_lease", "work",
                "complete", "answer_from", "handle", "finish", "recover_unfinished"]),
    "10": (8, ["claim", "debit_and_enqueue", "save_response", "in_one_transaction", "pay", "deliver_one"]),
    "11": (5, ["unfinished_payments", "finish_forward", "powertools_handler"]),
}
PRIORITY = ("condition-always-true", "clause-moot", "attribute_not_exists swapped", "attribute_exists swapped",
            "comparison", "if never taken", "except never matches", "except widened", "if negated",
            "python comparison flipped", "return flipped", "raise dropped", "call dropped", "and swapped",
            "or swapped", "+ and - swapped")


# Kinds of mistake the issue names that a generic operator finds, taken before each lesson's quota is filled.
FORCED = (("06", "complete", "clause-moot (lease_token = :mine)"),        # the fence on the lease token removed
          ("06", "debit", "clause-moot (lease_token = :mine)"),           # the debit's own fence removed
          ("06", "claim", "clause-moot (expires_at < :now)"),             # the retention (TTL) check removed
          ("06", "claim", "python comparison flipped"),                   # a lease's end off by one
          ("06", "answer_from", "if never taken"),                        # the payload comparison dropped
          ("09", "take_over", "clause-moot (lease_token = :theirs)"),
          ("09", "claim", "clause-moot (expires_at < :now)"),
          ("09", "debit", "clause-moot (lease_token = :mine)"),             # the debit's fence on the lease dropped
          ("09", "work", "if never taken"),                               # the renewal before the provider dropped
          ("09", "set_lease", "clause-moot (lease_token = :mine)"))

# Mistakes no one-node operator makes: several lines moved or rewritten, as a person would.
HAND = [
    ("05", "debit_ledger", "marker written outside the transaction",
     """        table.meta.client.transact_write_items(**extra, TransactItems=[
            {"Update": {"TableName": table.name, "Key": {"pk": wallet_id, "sk": "wallet"},
                        "UpdateExpression": "SET balance = balance - :amount",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":amount": amount}}},
            {"Put": {"TableName": table.name,
                     "Item": {"pk": wallet_id, "sk": "req#" + request_id, "amount": amount, "expires_at": expires_at},
                     "ConditionExpression": "attribute_not_exists(sk)"}},
        ])
""",
     """        table.update_item(Key={"pk": wallet_id, "sk": "wallet"},
                          UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance)",
                          ExpressionAttributeValues={":amount": amount})
        table.put_item(Item={"pk": wallet_id, "sk": "req#" + request_id, "amount": amount, "expires_at": expires_at},
                       ConditionExpression="attribute_not_exists(sk)")
"""),
    ("06", "pay", "success saved before the work",
     """        response = do_work(key, payload, invocation, lease_token, hook, int(record["started_at"]))
        completed = complete(key, lease_token, response)
""",
     """        response = {"status": 201, "body": json.dumps({"amount": payload["amount"], "served_by": invocation})}
        completed = complete(key, lease_token, response)
        do_work(key, payload, invocation, lease_token, hook, int(record["started_at"]))
"""),
    ("06", "do_work", "no fence before the provider",
     """    if not set_lease(key, lease_token, now_ms() + LEASE_SECONDS * 1000):   # still ours? Then the provider,
""",
     """    if False:                                                            # still ours? Then the provider,
"""),
    ("06", "claim", "payload comparison dropped from the take-over",
     """            and record["payload_fingerprint"] == fingerprint(payload)):""",
     """            ):"""),
    ("10", "in_one_transaction", "commit moved before the response is saved",
     """        save_response(conn, user_id, key, response)
        hook("saved")
        conn.execute("COMMIT")
""",
     """        conn.execute("COMMIT")
        save_response(conn, user_id, key, response)
        hook("saved")
"""),
    ("10", "in_one_transaction", "response saved before the debit (same transaction)",
     """        debit_and_enqueue(conn, user_id, key, payload, hook)
        response = accepted(key, payload, invocation)
        save_response(conn, user_id, key, response)
""",
     """        response = accepted(key, payload, invocation)
        save_response(conn, user_id, key, response)
        debit_and_enqueue(conn, user_id, key, payload, hook)
"""),
    ("10", "save_response", "the window counted from the claim, not the answer",
     """response["body"], now() + RETENTION_SECONDS,\n""",
     """response["body"], conn.execute("SELECT created_at FROM idempotency WHERE user_id = %s AND "\n"""
     """         "idempotency_key = %s", (user_id, key)).fetchone()[0] + RETENTION_SECONDS,\n"""),
    ("10", "lock_key", "the row lock dropped (FOR UPDATE)",
     """"FROM idempotency WHERE user_id = %s AND idempotency_key = %s FOR UPDATE\"""",
     """"FROM idempotency WHERE user_id = %s AND idempotency_key = %s\""""),
]


def hand_mutants() -> list[Mutant]:
    from helpers.lessons import lesson_cells

    made = []
    for number, function, operator, old, new in HAND:
        notebook = notebook_path(number)
        cell = next(i for i, s in enumerate(lesson_cells(notebook, "lesson")) if old in s)
        n = sum(1 for m in made if m.id.startswith(f"{number}-{function}-hand"))
        made.append(Mutant(f"{number}-{function}-hand{n + 1}", notebook, cell, function, operator, old, new))
    return made


def select(proposed: list[Mutant]) -> list[Mutant]:
    """Each lesson's quota of candidates: by turns over its functions, each function's best kind of edit first."""
    chosen = []
    for number, (quota, functions) in HANDLERS.items():
        queues = {f: sorted((m for m in proposed if m.id.startswith(number + "-") and m.function == f),
                            key=lambda m: (next(i for i, p in enumerate(PRIORITY) if m.operator.startswith(p)),
                                           m.cell, m.id)) for f in functions}
        mine = [next(m for m in proposed if m.id.startswith(f"{n}-{f}-") and m.operator == operator)
                for n, f, operator in FORCED if n == number]
        for m in mine:
            queues[m.function].remove(m)
        while len(mine) < quota and any(queues.values()):
            for function in functions:
                queue = queues[function]
                while queue and any(m.operator == queue[0].operator for m in mine if m.function == function) \
                        and len(queue) > 1:
                    queue.append(queue.pop(0))        # another kind of edit in this function first
                if queue and len(mine) < quota:
                    mine.append(queue.pop(0))
        chosen += mine
    return chosen


# --- the pytest plugin: `-p tools.mutants` in the runner's pytest processes ----------------------------------

class _Recorder:
    """Per test: which lesson functions ran ({notebook: {function}}), and whether check_handler ran."""

    def __init__(self) -> None:
        self.current, self.seen = "", {}

    def __call__(self, notebook: str, function: str) -> None:
        if self.current:
            self.seen.setdefault(self.current, set()).add(f"{notebook}::{function}")

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.current = nodeid

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.current = ""

    def pytest_sessionfinish(self, session: Any) -> None:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        out = Path(os.environ[MAP_ENV]) / f"{worker}.json"
        out.write_text(json.dumps({test: sorted(seen) for test, seen in self.seen.items()}))


def _instrumented(notebook: str, source: str) -> str:
    """The cell with a first statement in each function (nested ones too) that reports its top-level owner."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    inserts = []
    for name, node in _functions(tree):     # every def inside it too (a closure, a method): it reports its owner
        bodies = [(name, n) for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for owner, function in bodies:
            body = function.body
            first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) else body[0]
            line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
            if line > function.lineno and first.col_offset == len(lines[line - 1]) - len(lines[line - 1].lstrip()):
                inserts.append((line, first.col_offset, owner))
    for line, column, owner in sorted(inserts, reverse=True):
        lines.insert(line - 1, " " * column + f"__mutants_seen__({notebook!r}, {owner!r})\n")
    return "".join(lines)


def pytest_configure(config: Any) -> None:
    import builtins

    import helpers.checker
    import helpers.lessons

    if os.environ.get(MUTANT_ENV):
        mutant = next(m for m in load_mutants() if m.id == os.environ[MUTANT_ENV])

        def apply(notebook: str, tag: str, sources: list[str]) -> list[str]:
            if notebook != mutant.notebook or tag != "lesson":
                return sources
            return [mutant.apply(s) if i == mutant.cell else s for i, s in enumerate(sources)]

        helpers.lessons.SOURCE_HOOK = apply
    elif os.environ.get(MAP_ENV):
        recorder = _Recorder()
        config.pluginmanager.register(recorder, "retry-mutants-map")
        builtins.__mutants_seen__ = recorder

        def instrument(notebook: str, tag: str, sources: list[str]) -> list[str]:
            if tag != "lesson" or notebook[:2] not in LESSONS or "/" in notebook:
                return sources
            recorder(notebook, LOADED)
            return [_instrumented(notebook, s) for s in sources]

        helpers.lessons.SOURCE_HOOK = instrument
        original = helpers.checker.without_local_constants    # check_handler calls it once per call

        def without_local_constants(*args: Any, **kwargs: Any) -> Any:
            recorder("checker", "check_handler")
            return original(*args, **kwargs)

        helpers.checker.without_local_constants = without_local_constants


# --- the runner ----------------------------------------------------------------------------------------------

def _pytest(args: list[str], env: dict[str, str], junit: Path, timeout: float | None = None) -> tuple[int, str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "tools.mutants",
               f"--junitxml={junit}", *args]
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
        return done.returncode, done.stdout
    except subprocess.TimeoutExpired:
        return -1, "timed out"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, RETRY_BACKEND="moto", PYTHONHASHSEED="0", **extra)
    env.pop("RETRY_DYNAMODB_ENDPOINT", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)       # each mutant's pytest imports everything: compile it once
    return env


def _results(junit: Path) -> dict[str, tuple[str, float]]:
    """{nodeid: (outcome, seconds)} from a junit file."""
    results = {}
    if not junit.exists():
        return results
    for case in ET.parse(junit).getroot().iter("testcase"):
        module, name = case.get("classname", ""), case.get("name", "")
        parts = module.split(".")
        path = "/".join(parts[:2]) + ".py" if parts[0] == "tests" else module
        nodeid = "::".join([path, *parts[2:], name])
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        results[nodeid] = (outcome, float(case.get("time", 0)))
    return results


def make_map(workers: int, files: list[str] | None = None) -> dict[str, Any]:
    """Run the helpers' tests once (moto) recording which lesson functions each test calls.

    `files`: map these test files only, keeping the map's entries for every other file."""
    folder = Path(tempfile.mkdtemp())
    junit = folder / "junit.xml"
    ignore = [f"--ignore=tests/{name}" for name in NOT_MAPPED]
    args = [*(files or ["tests"]), *ignore] + (["-n", str(workers), "--dist", "loadfile"] if workers > 1 else [])
    started = time.perf_counter()
    code, output = _pytest(args, _env(**{MAP_ENV: str(folder)}), junit)
    calls: dict[str, list[str]] = {}
    for part in folder.glob("*.json"):
        if part.name == "junit.json":
            continue
        for test, seen in json.loads(part.read_text()).items():
            for where in seen:
                calls.setdefault(where, []).append(test)
    seconds = {test: round(t, 2) for test, (_, t) in _results(junit).items()}
    failed = [test for test, (outcome, _) in _results(junit).items() if outcome == "failed"]
    if files and MAP.exists():                          # keep what the other files' tests call
        old = json.loads(MAP.read_text())
        def ours(test: str) -> bool:
            return any(test == f or test.startswith(f + "::") or "::" not in f and test.startswith(f) for f in files)

        for where, tests in old["calls"].items():
            calls.setdefault(where, []).extend(t for t in tests if not ours(t))
        seconds = {**{t: s for t, s in old["seconds"].items() if not ours(t)}, **seconds}
        failed += [t for t in old["failed_in_map_run"] if not ours(t)]
    result = {"calls": {k: sorted(v) for k, v in sorted(calls.items())}, "seconds": dict(sorted(seconds.items())),
              "failed_in_map_run": sorted(failed)}
    MAP.write_text(json.dumps(result, indent=1) + "\n")
    print(f"map: {len(seconds)} tests in {time.perf_counter() - started:.0f} s; {len(calls)} lesson functions "
          f"called; {len(failed)} tests failed in the map run" + (f": {failed[:5]}" if failed else ""))
    return result


def collected() -> set[str]:
    """Every test id pytest collects now (the map may name a test since renamed or removed)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, env=_env(), capture_output=True, text=True)
    return {line.strip() for line in done.stdout.splitlines() if "::" in line}


def tests_for(mutant: Mutant, mapping: dict[str, Any]) -> list[str]:
    """The tests that call the mutant's function and still exist (mapping["exists"], when the runner set it)."""
    where = f"{mutant.notebook}::{mutant.function}"
    tests = [t for t in mapping["calls"].get(where, []) if t in mapping.get("exists", (t,))]
    seconds = mapping["seconds"]
    return sorted(tests, key=lambda t: (seconds.get(t, 0), t))


CHEAP_SECONDS = 3.0          # a test this quick (in the map run) is in a mutant's first round
SPECIFICATION = ("tests/test_specification",)   # the tests that hold the lessons' handlers to check_handler


def first_round(test: str, mapping: dict[str, Any]) -> bool:
    return test.startswith(SPECIFICATION) or mapping["seconds"].get(test, 0) <= CHEAP_SECONDS


def run_mutant(mutant: Mutant, mapping: dict[str, Any], stop_at_first: bool = False) -> dict[str, Any]:
    """Run the tests that call the mutant's function, in two rounds: first the quick ones and the specification's
    (check_handler over the lessons' handlers), all of them; then, only if none of those killed it, the rest (the
    property, concurrency and catalogue tests, minutes each). A mutant killed in the first round says how many
    tests it did not need (`not_run`): the report then names the first round's kills only."""
    tests = tests_for(mutant, mapping)
    started = time.perf_counter()
    entry = {"id": mutant.id, "tests": len(tests), "killed_by": [], "outcome": "survived", "not_run": 0}
    if not tests:
        entry["outcome"] = "no test calls it"
        return entry
    rounds = [[t for t in tests if first_round(t, mapping)], [t for t in tests if not first_round(t, mapping)]]
    if stop_at_first and mutant.ci_killer in tests:     # the test that killed it last time first: one test, if so
        rounds = [[mutant.ci_killer], *([t for t in chosen if t != mutant.ci_killer] for chosen in rounds)]
    for number, chosen in enumerate(rounds):
        if not chosen:
            continue
        if entry["outcome"] != "survived":
            entry["not_run"] += len(chosen)
            continue
        junit = Path(tempfile.mkdtemp()) / "junit.xml"
        budget = 120 + 4 * sum(mapping["seconds"].get(t, 1) for t in chosen)
        args = ["-p", "no:xdist", *(["-x"] if stop_at_first else []), *chosen]
        code, output = _pytest(args, _env(**{MUTANT_ENV: mutant.id}), junit, timeout=budget)
        results = _results(junit)
        entry["killed_by"] += sorted(t for t, (outcome, _) in results.items() if outcome == "failed")
        if code == -1:
            entry["outcome"] = "killed (timed out)"
        elif entry["killed_by"]:
            entry["outcome"] = "killed" if number == 0 else "killed (second round)"
        elif code not in (0, 5):
            entry["outcome"] = "killed (pytest error)"
            entry["output"] = output[-2000:]
    entry["seconds"] = round(time.perf_counter() - started, 1)
    return entry


def remember_killers(entries: dict[str, dict[str, Any]]) -> None:
    """Write each killed CI mutant's first killing test into mutants.json as its `ci_killer`."""
    written = json.loads(MUTANTS.read_text())
    for entry in written:
        killed_by = entries.get(entry["id"], {}).get("killed_by") or []
        if entry.get("ci") and killed_by:
            entry["ci_killer"] = killed_by[0]
    MUTANTS.write_text(json.dumps(written, indent=1, ensure_ascii=False) + "\n")


def checker_tests_of(mapping: dict[str, Any]) -> set[str]:
    """check_handler alone: the specification's tests in which check_handler ran (every mutant's first round)."""
    return {t for t in mapping["calls"].get("checker::check_handler", []) if t.startswith(SPECIFICATION)}


def score(mutants: list[Mutant], entries: dict[str, dict[str, Any]], mapping: dict[str, Any]) -> dict[str, Any]:
    checker_tests = checker_tests_of(mapping)
    counted = [m for m in mutants if not m.equivalent]
    killed = [m for m in counted if entries[m.id]["outcome"].startswith("killed")]
    by_checker = [m for m in killed if set(entries[m.id]["killed_by"]) & checker_tests]
    return {"mutants": len(mutants), "equivalent": len(mutants) - len(counted), "counted": len(counted),
            "killed": len(killed), "killed_by_check_handler": len(by_checker),
            "survived": [m.id for m in counted if m not in killed]}


def write_report(label: str, mutants: list[Mutant], entries: dict[str, dict[str, Any]],
                 mapping: dict[str, Any]) -> dict[str, Any]:
    totals = score(mutants, entries, mapping)
    checker_tests = checker_tests_of(mapping)
    (HERE / f"report-{label}.json").write_text(json.dumps({"totals": totals, "mutants": entries}, indent=1) + "\n")
    lines = [f"# Mutation report: {label}", "",
             f"{totals['killed']} of {totals['counted']} mutants killed by the suite "
             f"({totals['killed_by_check_handler']} by check_handler alone); "
             f"{totals['equivalent']} equivalent, named below. Made by `python tools/mutants.py --label {label}`.",
             "", "Each mutant runs the tests that call its function (tests/mutation/map.json), in two rounds: the "
             "quick tests and the specification's, then -- only if none of those killed it -- the slower ones.",
             "", "| mutant | where | edit | tests run | verdict | killed by |", "|---|---|---|---|---|---|"]
    for mutant in mutants:
        entry = entries[mutant.id]
        verdict = f"equivalent: {mutant.equivalent}" if mutant.equivalent else entry["outcome"]
        kills = entry["killed_by"]
        named = ", ".join(f"`{k.split('/')[-1]}`" for k in kills[:3]) + (f" and {len(kills) - 3} more"
                                                                          if len(kills) > 3 else "")
        checker = " (check_handler)" if set(kills) & checker_tests else ""
        checker += f"; {entry['not_run']} slower tests not run" if entry.get("not_run") else ""
        edit = f"{mutant.operator}: `{_short(mutant.old)}` → `{_short(mutant.new)}`"
        lines.append(f"| {mutant.id} | {mutant.notebook[:2]} `{mutant.function}` | {edit} | {entry['tests']} "
                     f"| {verdict} | {named}{checker} |")
    (HERE / f"report-{label}.md").write_text("\n".join(lines) + "\n")
    return totals


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split()).replace("|", "\\|").replace("`", "'")
    return flat if len(flat) <= width else flat[:width - 1] + "…"


README_START, README_END = "<!-- mutants: tools/mutants.py writes this -->", "<!-- /mutants -->"


def write_readme(totals: dict[str, Any], mutants: list[Mutant], label: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    if README_START not in text:
        return
    equivalents = [f"- `{m.id}` ({m.operator}): {m.equivalent}" for m in mutants if m.equivalent]
    block = "\n".join([
        README_START,
        f"**{totals['killed']} of {totals['counted']}** mutants of the lessons' handlers are killed by the suite; "
        f"**{totals['killed_by_check_handler']}** by `check_handler` alone "
        f"(`tests/mutation/report-{label}.md`, beside the report from before the cut). "
        f"{totals['equivalent']} are equivalent (no test can tell them from the original):",
        "", *equivalents, README_END])
    before, rest = text.split(README_START, 1)
    readme.write_text(before + block + rest.split(README_END, 1)[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", action="store_true", help="re-record which tests call which lesson function")
    parser.add_argument("--generate", action="store_true", help="draw the mutants again (keeping their notes)")
    parser.add_argument("--files", nargs="*", help="with --map: map these test files or ids only, keeping the rest")
    parser.add_argument("--only", nargs="*", help="these mutant ids")
    parser.add_argument("--ci", action="store_true", help="the CI subset, stopping at each mutant's first kill")
    parser.add_argument("--remember-killers", action="store_true",
                        help="with --ci: write each mutant's killing test into mutants.json (run first next time)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run side by side (default 2)")
    parser.add_argument("--rewrite", metavar="LABEL", help="write report-LABEL.md again from its .json")
    parser.add_argument("--label", default="", help="write tests/mutation/report-LABEL.md/.json (and the README)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.generate:
        proposed = generate()
        for number in LESSONS:
            mine = [m for m in proposed if m.id.startswith(number)]
            print(number, len(mine), sorted({m.operator.split(" (")[0] for m in mine}))
        kept = {m.id: m for m in load_mutants()} if MUTANTS.exists() else {}
        chosen = select(proposed) + hand_mutants()
        for mutant in chosen:                     # what a person wrote about a mutant stays with it
            if mutant.id in kept:
                mutant.equivalent, mutant.ci = kept[mutant.id].equivalent, kept[mutant.id].ci
                mutant.ci_killer = kept[mutant.id].ci_killer
        MUTANTS.write_text(json.dumps([asdict(m) for m in chosen], indent=1, ensure_ascii=False) + "\n")
        print(f"{len(proposed)} candidates; {len(chosen)} mutants written to {MUTANTS.relative_to(ROOT)}")
        return 0
    if args.rewrite:                         # the report again, from its JSON, with the mutants' notes as they are now
        entries = json.loads((HERE / f"report-{args.rewrite}.json").read_text())["mutants"]
        mutants = [m for m in load_mutants() if m.id in entries]
        totals = write_report(args.rewrite, mutants, entries, json.loads(MAP.read_text()))
        if len(mutants) == len(load_mutants()) and args.rewrite == "after":
            write_readme(totals, mutants, args.rewrite)
        print(totals)
        return 0
    mapping = make_map(args.jobs, args.files) if args.map or not MAP.exists() else json.loads(MAP.read_text())
    if args.map:
        return 0
    mutants = load_mutants()
    for mutant in mutants:                                      # a stale mutant fails before anything runs
        from helpers.lessons import lesson_cells
        mutant.apply(lesson_cells(mutant.notebook, "lesson")[mutant.cell])
    mapping["exists"] = collected()
    gone = {t for tests in mapping["calls"].values() for t in tests} - mapping["exists"]
    if gone:
        print(f"note: {len(gone)} tests in the map no longer exist (run --map again): {sorted(gone)[:3]}")
    chosen = [m for m in mutants if (not args.only or m.id in args.only) and (not args.ci or m.ci)]
    started, entries = time.perf_counter(), {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for entry in pool.map(lambda m: run_mutant(m, mapping, stop_at_first=args.ci), chosen):
            entries[entry["id"]] = entry
            print(f"[{(time.perf_counter() - started) / 60:4.1f} min] {entry['id']:<28} {entry['outcome']:<20} "
                  f"{len(entry['killed_by'])}/{entry['tests']} tests", flush=True)
    totals = score(chosen, entries, mapping)
    if args.ci and args.remember_killers:
        remember_killers(entries)
    print(f"\n{totals['killed']} of {totals['counted']} killed ({totals['killed_by_check_handler']} by check_handler "
          f"alone); {totals['equivalent']} equivalent; survived: {', '.join(totals['survived']) or 'none'}")
    if args.label:
        report = HERE / f"report-{args.label}.json"
        if args.only and report.exists():        # these mutants again (after a new test): merged into the report
            entries = {**json.loads(report.read_text())["mutants"], **entries}
            chosen = [m for m in mutants if m.id in entries]
        totals = write_report(args.label, chosen, entries, mapping)
        if not args.ci and len(chosen) == len(mutants):
            write_readme(totals, chosen, args.label)
            print(f"README: {totals['killed']} of {totals['counted']} killed, "
                  f"{totals['killed_by_check_handler']} by check_handler alone")
    return 1 if args.ci and totals["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
