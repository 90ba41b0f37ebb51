"""The reader's answer held to the specification, and how an exercise tells the result: one way for all eleven.

An exercise's scenario checks replay the stories their author wrote, each with a specific hint. Its last check
is a `Specification`: the reader's function -- as a debit, a record write, or wired into the lesson's own handler
-- sent the generated histories of `helpers/checker.py` (lost responses, DynamoDB's failure answers, and where
the lesson has them crashes, duplicates and the provider down), and held to `helpers/specification.py`'s
properties. Whatever the subject, the checker's `Verdict` is told the same way:

- broken (`told`): the property, in a few words, and how it broke, in one sentence; then the shortest history
  found, a numbered line a step (each at most 100 characters);
- holding (`Specification.passed`): over how many histories, with what injected, within what the lesson's design
  promises (one payload per request ID, one request at a time), and which properties held.

`Specification.staged(subject)` runs the checker on short histories first, then longer ones (a few seconds);
`debit_subject` and `ItemSubject` make the checker's subject from an exercise's debit or record write;
`namespace_of` finds the lesson's namespace for a function wired into the lesson's own handler.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from ..history import ANSWER, LASTING, LOST, PROVIDER_DOWN, PROVIDER_LOST, Fault, Sent, Written
from ..subjects import RecordSubject, read_in_process
from ..tables import as_dynamodb_json, as_python, read_item, with_ints
from ..wire import client_of
from .verdict import WIDTH, Counterexample

SPECIFICATION = "helpers/specification.py"
INJECTED = "lost responses and DynamoDB's failure answers"   # what the debit and record subjects meet
# (steps, histories): one-request histories first, so that a fault one request meets is shown alone, then longer
STAGES = ((1, 10), (4, 40))
SHRINK = 20           # histories the search may spend shortening a counterexample (then: the shortest found)
GLOSS = {             # each property in a few words, for the sentence that says which one broke
    "once": "each request takes effect once, and exactly once if it was answered success",
    "bound to its payload": "an idempotency key takes effect for one payload only",
    "truthful": "a success means the write is there; an answer that says nothing was written means nothing was",
    "live": "a request sent again gets a final answer",
    "useful": "a valid request the wallet can pay succeeds, and every refusal has a reason",
}


def told(held: Any, name: str | None = None, injected: str = INJECTED) -> str:
    """A broken `helpers.checker.Verdict` as an exercise's counterexample: the property, in a few words, and how it
    broke (one paragraph, wrapped when shown), then the history as a short numbered story (`story`), a line a step
    wrapped to `WIDTH`."""
    who = name or held.handler
    lines = [f"held to the specification ({SPECIFICATION}) over generated histories with {injected} injected, "
             f"{who} breaks '{held.broken}' ({GLOSS[held.broken]}): {held.sentence.rstrip('.')}.",
             "The shortest history found:" if held.shrunk else "The first history found (not shrunk):"]
    for n, step in enumerate(held.history, 1):
        lines += textwrap.wrap(f"{n}. {story(step, who)}", WIDTH, initial_indent="  ", subsequent_indent="     ",
                               break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


ORDINALS = ("first", "second", "third", "fourth", "fifth")
EFFECT = {"TransactionConflict": "nothing written", "ProvisionedThroughputExceeded": "nothing written",
          "Throttling": "nothing written", "TransactionInProgress": "nothing written",
          "InternalServerError (not applied)": "nothing written", "InternalServerError (applied)": "the write landed",
          "TransactionInProgress (the original commits)": "the original commits"}
CODE = {"Throttling": "ThrottlingException", "ProvisionedThroughputExceeded": "ProvisionedThroughputExceeded",
        "InternalServerError (not applied)": "a 500", "InternalServerError (applied)": "a 500"}
INTERNAL_ID = re.compile(r"\b(?:r\d+-\d+-k\d+(?:\.\d+)?|inv-\d+|ch_\d+|[0-9a-f]{8,})\b")


def story(step: Any, who: str = "your function") -> str:
    """One step of a history (a `helpers.history` record) in a learner's words: who sent what, what DynamoDB (or
    the provider) answered, and what `who` answered -- no harness names: ``Shop A sends payment k1 (10 from alice);
    DynamoDB answers its first write with TransactionConflict (nothing written); your debit answers
    WalletNotFound``."""
    if isinstance(step, Written):                        # a write that is not money
        told = f"a caller sends {step.sent}" + (step.fault.words(one_write=True) if step.fault else "") + \
            f"{step.resent}; {who} answers {step.answer}"
        return INTERNAL_ID.sub("", told).replace("  ", " ").strip().rstrip(".") + "."
    if not isinstance(step, Sent):                       # a wait, the world changing
        return INTERNAL_ID.sub("", step.words()).replace("  ", " ").strip().rstrip(".") + "."
    caller = f"Shop {step.caller[5:].upper()}" if step.caller.startswith("shop-") else step.caller
    sent = f"{caller} sends payment {step.key.split('.')[0]} ({step.amount} from {step.wallet})"
    if step.invocation not in (None, "inv-1"):
        sent += " to a second instance"
    events = [sent]
    if step.fault:
        events.append(_fault_story(step.fault))
    if step.crashed_step:
        events.append(f"it crashes at {step.crashed_step!r}")
    if step.slowed_at:
        events.append(f"it takes {step.slow:.0f} s {step.slowed_at.replace('about to send', 'before')}")
    answer = _answer_story(step.answer)
    events.append(f"{who} answers {answer}" if answer != "crashed" else "no answer (it crashed)")
    told = "; ".join(events)
    return told + (f" ({step.when.words()})" if step.when else "") + "."


def _fault_story(fault: Fault) -> str:
    nth = ORDINALS[fault.n] if fault.n < len(ORDINALS) else f"#{fault.n}"
    if fault.family == PROVIDER_DOWN:
        return f"the card provider is down for {fault.n} request{'' if fault.n == 1 else 's'}"
    if fault.family == PROVIDER_LOST:
        return f"the card provider charges, and its answer is lost ({fault.n} time{'' if fault.n == 1 else 's'})"
    if fault.family == LOST:
        return f"the answer to its {nth} write is lost on the way back (the write landed)"
    if fault.family in (ANSWER, LASTING):
        code = CODE.get(fault.kind, fault.kind)
        again = " and to every resend of it" if fault.family == LASTING else ""
        return f"DynamoDB answers its {nth} write{again} with {code} ({EFFECT.get(fault.kind, 'nothing written')})"
    return (f"DynamoDB answers its {nth} transaction with TransactionInProgress "
            f"({'the original commits' if fault.applied else 'nothing written'})")


def _answer_story(answer: str) -> str:
    """An answer as `in_words` gives it ('201 ch_0001 alice 10', "'applied'", 'WalletNotFound'), without ids."""
    status = re.match(r"^(\d{3})\b(.*)$", answer)
    if not status:
        return answer
    rest = INTERNAL_ID.sub("", status[2]).split()
    return status[1] + (f" ({' '.join(rest)})" if rest else "")


class Specification:
    """A check: `hold()` -- the reader's answer through `helpers.checker.check_handler` -- must hold every property.

    `name` is how the sentence names the reader's function ("your debit"; by default the checker's name for the
    handler), `injected` what the histories inject, `within` what the lesson's design promises and the histories
    keep to ("one request at a time"). A broken verdict raises `Counterexample` (`told`); after it holds,
    `passed()` gives the PASS line's words.
    """

    def __init__(self, hold: Callable[[], Any], *, name: str | None = None, injected: str = INJECTED,
                 within: Iterable[str] = ()) -> None:
        self.hold, self.name, self.injected, self.within = hold, name, injected, tuple(within)
        self.held: Any = None

    @classmethod
    def staged(cls, subject: Callable[[], Any], *, name: str, keys_reused: bool = True, one_at_a_time: bool = False,
               injected: str = INJECTED) -> Specification:
        """The check for an exercise that makes the checker's subject itself (`subject()`: a `debit_subject`, an
        `ItemSubject`), run over `STAGES`; `keys_reused` and `one_at_a_time` go to `check_handler` (what the
        lesson's design promises), and the PASS line says so."""
        within = (("one payload per request ID",) if not keys_reused else ()) + (
            ("one request at a time",) if one_at_a_time else ())
        return cls(_staged(subject, keys_reused=keys_reused, one_at_a_time=one_at_a_time), name=name,
                   injected=injected, within=within)

    def __call__(self) -> None:
        self.held = self.hold()
        if self.held.broken is not None:
            raise Counterexample(told(self.held, self.name, self.injected))

    def passed(self) -> str:
        name = self.name or self.held.handler
        within = f" ({', '.join(self.within)})" if self.within else ""
        return (f"{name[:1].upper()}{name[1:]} held to the specification over {self.held.histories} generated "
                f"histories with {self.injected} injected{within}: {_and(self.held.holds)}.")


def _staged(subject: Callable[[], Any], **options: Any) -> Callable[[], Any]:
    """`check_handler` on the subject `subject()` makes, over `STAGES`: its first broken verdict, or the last.

    The histories are short, few and derandomized: the same on every run and every backend, within a notebook's
    second or two. `options` go to `check_handler` (`keys_reused`, `one_at_a_time`: what the design promises).
    """

    def hold() -> Any:
        from ..checker import check_handler  # hypothesis: imported when a checker first needs it

        made = subject()
        for steps, histories in STAGES:
            held = check_handler(made, histories=histories, steps=steps, shrink=SHRINK, **options)
            if held.broken is not None:
                break
        return held

    return hold


def _and(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def debit_subject(debit: Callable[..., Any], table: Any, db: Any, *, name: str | None = None,
                  success: tuple[Any, ...] = ("applied", "already applied"), refused: tuple[Any, ...] = (),
                  wallet_sort_key: bool = False, writes: int = 1, opening: dict[str, int] | None = None) -> Any:
    """The checker's `DebitSubject` for an exercise's `debit(table, wallet_id, amount, request_id)`, on `table`.

    A return value in `success` is a success; one in `refused` a refusal (nothing taken, told so); anything
    else, or an error, says nothing -- the caller sends again. With `wallet_sort_key` the wallet is the item
    ``pk=wallet_id, sk="wallet"`` (notebooks 04, 05, 08). Faults fall on the request's first `writes` writes
    (more than one for a function that resends by itself), each drawn alike; no leases, no retention windows.
    """
    from ..subjects import DebitSubject

    def answer(result: Any, payload: dict[str, Any]) -> Any:
        if any(result == said for said in success):
            return {"status": 200, "body": "{}"}      # one body for every success: a replay is the first answer
        if any(result == said for said in refused):
            return {"status": 402, "body": "{}", "said": repr(result)}   # refused, nothing taken (a 4xx: final)
        return result

    def key(wallet_id: str) -> dict[str, str]:
        return {"pk": wallet_id, "sk": "wallet"} if wallet_sort_key else {"pk": wallet_id}

    class ExerciseDebit(DebitSubject):
        """An exercise's debit: the random histories only, staged (`STAGES`: a notebook's second or two, and the
        PASS line's count of histories, committed in the solutions' outputs, stays what it was)."""

        explores = False

    subject = ExerciseDebit(debit, name=name, answer=answer, table=table, db=db, key=key, opening=opening)
    subject.writes, subject.faults_alike, subject.waits = writes, True, False
    return subject


class ItemSubject(RecordSubject):
    """A record write (01's status update, 02's sign-up) as the checker's subject: a request is the function's
    arguments after the table, and it writes one item, read back by `key(request)`, whose `fields` then hold the
    request's values in order. `describe(values)` words a request and an item alike; `nothing` words no item."""

    fields: tuple[str, ...] = ()
    nothing = "no item"

    def key(self, request: tuple) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, request: tuple) -> Any:
        key = self.key(request)
        stored = read_in_process(client_of(self.table), self.table.name, [as_dynamodb_json(key)], "GetItem")
        if stored is None:                        # another backend, or a watcher on the wire: a request
            return read_item(self.table, key)
        return with_ints(as_python(stored[0])) if stored else None     # what read_item answers

    def holds(self, item: Any, request: tuple) -> bool:
        return item is not None and tuple(item.get(field) for field in self.fields) == tuple(request)

    def show(self, item: Any) -> str:
        return self.nothing if item is None else self.describe(tuple(item.get(field) for field in self.fields))


_LOADED: dict[str, dict[str, Any]] = {}


def namespace_of(function: Callable[..., Any], notebook: str, needs: Iterable[str]) -> dict[str, Any]:
    """The lesson's namespace for the reader's `function`: its own module globals if they hold every name in `needs`
    (it was written in the lesson's notebook), else the lesson's cells of `notebook` loaded here, once per process."""
    g = getattr(function, "__globals__", {})
    if all(name in g for name in needs):
        return g
    if notebook not in _LOADED:
        from ..lessons import load_lesson
        _LOADED[notebook] = load_lesson(notebook)
    return _LOADED[notebook]
