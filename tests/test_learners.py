"""Learners' answers, run through each notebook's own *Your turn* cells: every wrong one NOT YET, every right one PASS.

A workshop stands on its checkers, so they are tried the way a room tries them: with answers written the way
people write them. The answers are data, one file per exercise, `tests/learners/lesson_NN.py` (NN the lesson's
number, as in the notebook's file name), holding:

    WRONG = {"a short name": '''def my_set_status(table, order_id, status, seq): ...''', ...}   # at least eight
    RIGHT = {"a short name": '''...''', ...}                                                      # at least two
    SAYS = {"a short name": "words its NOT YET must contain"}                 # optional: the mistake named
    BOTH_BACKENDS = True     # optional: the verdicts depend on the backend's behaviour, run them on every tier
                             # (else on the moto tier only; LEARNERS_EVERY_BACKEND=1 runs every battery anywhere)

Each value is source text a learner would type into the exercise cell (it may define helpers, classes and
constants too). A test runs, in one namespace per notebook: the notebook's `imports` and `lesson` cells (once),
then for each answer the `exercise` cell (the starter, resetting what it defines), the answer's source, and the
checker cell that follows the exercise cell -- its last expression is the verdict. A WRONG answer must get NOT YET,
a RIGHT one PASS; a NOT YET stops at its first counterexample, so the wrong answers cost little. Every verdict is
also held to the words a learner reads (`assert_in_learners_words`): each line at most 100 characters, none of the
harness's own identifiers, plurals right, and a property it names explained where it is named. And
`test_the_read_then_write_is_not_yet_in_every_run` runs 01's and 02's read-then-write 20 times: one NOT YET.

Grow a file whenever a workshop or a reviewer finds a new wrong answer: add it to WRONG under a name that says the
mistake. An answer the checker passes although it is wrong is a finding: fix the checker (helpers/exercises/), never
the answer. A new exercise adds `tests/learners/lesson_NN.py` in this format; nothing here changes.

The counts (answers per exercise, and their time) are printed in pytest's terminal summary.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import time
from pathlib import Path

import pytest
from IPython.lib.pretty import pretty
from summary_lines import summary_from

import helpers
from helpers.exercises.verdict import counted
from helpers.lessons import NOTEBOOKS, lesson_cells

from notebook_code import lesson

LEARNERS = Path(__file__).parent / "learners"
WIDTH = 100


def _battery(number: str):
    spec = importlib.util.spec_from_file_location(f"learners_{number}", LEARNERS / f"lesson_{number}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LESSONS = sorted(p.stem.removeprefix("lesson_") for p in LEARNERS.glob("lesson_*.py"))
BATTERIES = {n: _battery(n) for n in LESSONS}
ON_THIS_TIER = [n for n in LESSONS                 # LEARNERS_EVERY_BACKEND=1: every battery on this tier too
                if helpers.backends.backend_name() == "moto" or getattr(BATTERIES[n], "BOTH_BACKENDS", False)
                or os.environ.get("LEARNERS_EVERY_BACKEND")]
CASES = [pytest.param(n, kind, name, id=f"{n}-{kind}-{name}")
         for n in ON_THIS_TIER for kind in ("WRONG", "RIGHT") for name in getattr(BATTERIES[n], kind)]

_ran: dict[str, list[tuple[str, float]]] = {}


def _counts() -> list[str]:
    lines = []
    for n in sorted(_ran):
        runs = _ran[n]
        wrong = [t for kind, t in runs if kind == "WRONG"]
        right = [t for kind, t in runs if kind == "RIGHT"]
        lines.append(f"{n}: {counted(len(wrong), 'wrong answer')} NOT YET (slowest {max(wrong, default=0):.1f} s), "
                     f"{counted(len(right), 'right answer')} PASS (slowest {max(right, default=0):.1f} s)")
    total = sum(len(r) for r in _ran.values())
    if total:
        answers = counted(total, "learner's answer", "learners' answers")
        lines.append(f"{answers} on {helpers.backends.backend_name()}, "
                     f"{sum(t for r in _ran.values() for _, t in r):.0f} s in all")
    return lines


summary_from("learners' answers", _counts)


def notebook_of(number: str) -> str:
    return next(p.name for p in sorted(NOTEBOOKS.glob(f"{number}_*.ipynb")))


def checker_cell(notebook: str) -> str:
    """The source of the code cell right after the notebook's `exercise` cell: the checker."""
    import json

    cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    at = next(i for i, c in enumerate(code) if "exercise" in c.get("metadata", {}).get("tags", []))
    return "".join(code[at + 1]["source"])


_namespaces: dict[str, dict] = {}


def namespace(number: str) -> dict:
    """The notebook's namespace after its imports and lesson cells: made once per notebook and process."""
    if number not in _namespaces:
        _namespaces[number] = lesson(notebook_of(number))
    return _namespaces[number]


def run_cell(source: str, ns: dict):
    """Run a cell as Jupyter does: every statement, and the value of the last one if it is an expression."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), ns)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns) if last else None


def verdict_of(number: str, source: str):
    """The verdict the notebook's checker cell gives the answer `source` typed into the exercise cell."""
    notebook = notebook_of(number)
    ns = namespace(number)
    exec(lesson_cells(notebook, "exercise")[0], ns)
    exec(compile(source, f"<answer to {number}>", "exec"), ns)
    return run_cell(checker_cell(notebook), ns)


def test_every_exercise_has_a_battery():
    exercises = sorted(p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if lesson_cells(p.name, "exercise"))
    assert exercises == LESSONS, f"an exercise without tests/learners/lesson_NN.py: {set(exercises) ^ set(LESSONS)}"
    for n, battery in BATTERIES.items():
        assert len(battery.WRONG) >= 8, f"{n}: {len(battery.WRONG)} wrong answers, at least eight"
        assert len(battery.RIGHT) >= 2, f"{n}: {len(battery.RIGHT)} right answers, at least two"


# What a learner never needs to read: the harness's own names and words.
INTERNAL = re.compile(r"\b(r\d{3,}-\d+-\w+|inv-\d+ sends|-> \d{3}\b|DebitSubject|RecordSubject|ItemSubject|"
                      r"check_handler|\w+_held|Counterexample|[a-z]+_[a-z_]+\(\))")
PLURAL = re.compile(r"\b1 (times|requests|sends|deliveries|payments|histories|charges)\b")


PROPERTY = re.compile(r"breaks '([a-z ]+)'(.)")


def assert_in_learners_words(shown: str) -> None:
    """At most 100 characters a line; none of the harness's names; plurals right; a property named is explained."""
    for line in shown.splitlines():
        assert len(line) <= WIDTH, f"a line of {len(line)} characters:\n{line}"
    joined = " ".join(shown.split())
    for named in PROPERTY.finditer(joined):
        assert named[2] == " " and joined[named.end():].startswith("("), f"{named[1]!r} named, not explained:\n{shown}"
    assert not INTERNAL.search(shown), f"the harness's own words ({INTERNAL.search(shown)[0]!r}):\n{shown}"
    assert not PLURAL.search(shown), f"a wrong plural ({PLURAL.search(shown)[0]!r}):\n{shown}"


@pytest.mark.parametrize("number,kind,name", CASES)
def test_each_learners_answer_gets_its_verdict(number, kind, name):
    source = getattr(BATTERIES[number], kind)[name]
    namespace(number)                                  # the lesson's cells (and a backend's start) are not timed
    started = time.perf_counter()
    verdict = verdict_of(number, source)
    _ran.setdefault(number, []).append((kind, time.perf_counter() - started))
    assert verdict is not None and hasattr(verdict, "passed"), f"the checker cell gave {verdict!r}"
    shown = pretty(verdict)
    if kind == "WRONG":
        assert not verdict.passed, f"{number}: the wrong answer {name!r} PASSED:\n{shown}"
        said = getattr(BATTERIES[number], "SAYS", {}).get(name)
        if said:
            assert said in " ".join(verdict.message.split()), shown
    else:
        assert verdict.passed, f"{number}: the right answer {name!r} got\n{shown}"
    assert_in_learners_words(shown)


READ_THEN_WRITE = {"01": ("read then update", "check_order_safe_update"), "02": ("read then put", "check_sign_up")}


@pytest.mark.parametrize("number", sorted(READ_THEN_WRITE))
def test_the_read_then_write_is_not_yet_in_every_run(number):
    """The race 01 and 02 teach, caught every time (no threads, no timing): 20 runs, 20 NOT YETs, one message.

    The notebook's checker, with one lost-response schedule instead of eight (they come first and pass): the
    runs cost a second or two each, not the whole check's."""
    import helpers.exercises as exercises

    answer, check = READ_THEN_WRITE[number]
    notebook = notebook_of(number)
    ns = namespace(number)
    exec(lesson_cells(notebook, "exercise")[0], ns)
    exec(BATTERIES[number].WRONG[answer], ns)
    function = ns[re.search(r"^def (\w+)\(", lesson_cells(notebook, "exercise")[0], re.M)[1]]
    runs = int(os.environ.get("READ_THEN_WRITE_RUNS", "20"))
    verdicts = {(v.passed, v.message) for v in (getattr(exercises, check)(function, schedules=1) for _ in range(runs))}
    assert len(verdicts) == 1, verdicts
    passed, message = verdicts.pop()
    assert not passed and "just before your" in message, message
