"""A history as data: what the checker did and what the handler answered, each step a record with one wording.

`helpers.checker` generates histories; `helpers.specification` judges them; a `Verdict` hands the one that broke
a property back as these records, which print (`words`), draw (`history_events`, for `Verdict.draw`) and are
retold in a learner's words (`helpers.exercises.specified.story`) from their fields, never from their text.

    Fault       a fault injected into one request: a lost answer, one of DynamoDB's failure answers, the provider down
    When        the point of the attempt in flight at which another request ran, and what happened there
    Sent        a request to the handler and its answer
    Written     a request to a write that is not money (01's update, 02's sign-up) and its answer
    Happened    anything else: time passing, the world changing, a TTL sweep, the recovery worker

As Jepsen's knossos and Elle keep the history apart from the checker, these records hold no judgment: a step
knows it `broke` a property only because the judge said so.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from .dynamodb_errors import IN_PROGRESS, IN_PROGRESS_APPLIED

LOST, ANSWER, LASTING, STILL_IN_PROGRESS = "lost", "answer", "answers", "in progress"
PROVIDER_DOWN, PROVIDER_LOST = "provider down", "provider lost"


@dataclass(frozen=True)
class Fault:
    """A fault injected into one request. `family`: the answer to its `n`-th write lost (`lost`); DynamoDB answers
    its `n`-th write with `kind` (`answer`), or its `n`-th transaction and each of the handler's resends of it
    (`answers`); its `n`-th transaction answered TransactionInProgress, `kind` saying whether the original commits
    (`in progress`); the provider down for `n` requests (`provider down`), or charging and its answer lost for `n`
    (`provider lost`: a timeout after the charge was made)."""

    family: str
    n: int
    kind: str | None = None

    @classmethod
    def in_progress(cls, n: int, applied: bool) -> Fault:
        return cls(STILL_IN_PROGRESS, n, IN_PROGRESS_APPLIED if applied else IN_PROGRESS)

    @property
    def applied(self) -> bool:
        return self.kind == IN_PROGRESS_APPLIED

    def words(self, one_write: bool = False) -> str:
        """The fault as a history says it, after the request (`one_write`: the request makes one write)."""
        if self.family == PROVIDER_DOWN:
            return f", the provider down for {self.n} request(s)"
        if self.family == PROVIDER_LOST:
            return f", the provider charging and its answer lost for {self.n} request(s)"
        write = "its write" if one_write and self.n == 0 else f"write {self.n}"
        if self.family == ANSWER:
            return f", DynamoDB answers {write} with {self.kind}"
        if self.family == LASTING:
            return f", DynamoDB answers transaction {self.n} with {self.kind}, and each resend of it"
        if self.family == LOST:
            return f", {write}'s answer lost"
        original = "its original commits" if self.applied else "not applied"
        return f", transaction {self.n} answered TransactionInProgress ({original})"

    def label(self) -> str:
        """The fault on a swimlane chart (the provider's lane, or the store's)."""
        return {LOST: f"write {self.n}: answer lost", ANSWER: f"write {self.n}: {self.kind}",
                LASTING: f"transaction {self.n}: {self.kind}, resends too",
                STILL_IN_PROGRESS: f"transaction {self.n}: in progress",
                PROVIDER_DOWN: f"down for {self.n}", PROVIDER_LOST: f"charged, answer lost ({self.n})"}[self.family]


@dataclass(frozen=True)
class When:
    """The point of the attempt in flight (`where`: "at 'claimed'", "about to send its PutItem") at which a step
    ran; `before` names the event placed there (the exhaustive phase's), `after` how long the attempt stalled."""

    where: str
    before: str = ""
    after: str = ""

    def words(self) -> str:
        return f"{self.before}while the next one is {self.where}{self.after}"

    def label(self) -> str:
        return f"{self.before}in flight, {self.where}{self.after}"


@dataclass
class Sent:
    """A request sent to the handler, and its answer (`answer`, in the subject's words; `kind`, the
    specification's class of it). `invoked`: the handler is told its invocation ID (the history says which).
    `resent` says why it was sent again, where it was (" (resent at quiescence)"); `when`, the point of another
    attempt at which it ran; `crashed_at`, the point where it crashed (`crashed_step`: at which of its hook steps,
    when the crash was drawn there); `slowed_at`, the point where it took `slow` seconds."""

    caller: str
    key: str
    wallet: str
    amount: int
    invocation: str
    answer: str
    kind: str
    invoked: bool = True
    fault: Fault | None = None
    crashed_at: str | None = None
    crashed_step: str | None = None
    slowed_at: str | None = None
    slow: float = 0.0
    resent: str = ""
    when: When | None = None
    broken: bool = False

    def words(self) -> str:
        as_ = f" as {self.invocation}" if self.invoked else ""
        what = (f", crashing at {self.crashed_step!r}" if self.crashed_step else "") + (
            f", taking {self.slow:.0f} s {self.slowed_at.replace('about to send', 'before')}" if self.slowed_at
            else "") + (self.fault.words() if self.fault else "") + self.resent
        return f"{self.caller} sends {self.key} ({self.amount} from {self.wallet}){as_}{what} -> {self.answer}"


@dataclass
class Written:
    """A request to a write that is not money (`sent`: the request in the subject's words) and its answer."""

    sent: str
    answer: str
    fault: Fault | None = None
    resent: str = ""
    broken: bool = False

    def words(self) -> str:
        return f"a caller sends {self.sent}{self.fault.words(one_write=True) if self.fault else ''}{self.resent}" \
               f" -> {self.answer}"


@dataclass
class Happened:
    """Anything else in a history: `event` names it (a catalogue entry, or a wait: "lease", "retention",
    "recovery"), `family` its kind, `said` its one wording, `label` its shorter one on a chart (None: `said`)."""

    event: str
    family: str
    said: str
    label: str | None = None
    broken: bool = False

    def words(self) -> str:
        return self.said


Step = Sent | Written | Happened


def line(n: int, step: Step) -> list[str]:
    """Step `n` of a history as a verdict prints it, wrapped to 100 characters."""
    lines = textwrap.wrap(f"{n}. {step.words()}", 100, initial_indent="  ", subsequent_indent="       ")
    if isinstance(step, Sent) and step.when is not None:
        lines += textwrap.wrap(f"({step.when.words()})", 100, initial_indent="       ", subsequent_indent="        ")
    return lines


# --- a history as swimlane events (Verdict.draw) -------------------------------------------------------------------

def history_events(history: list[Step], store: str, sentence: str) -> tuple[Any, list[str]]:
    """The events of `history` (a Verdict's) on lanes -- the callers, the handler, `store`, the provider -- one
    per unit of x, in the order they happened: a request sent while another was in flight (its `when`) is drawn
    between that one's sending and its answer."""
    from .clock import VirtualClock
    from .swimlanes import Timeline

    timeline, colors, used = Timeline(VirtualClock(start=0)), [], set()

    def event(lane: str, text: str, color: str = "black", to: str | None = None) -> None:
        timeline.record(lane, text, to=to, at=len(colors))
        colors.append(color)
        used.add(lane)

    def sent(step: Sent) -> None:
        how = "resent at quiescence" if step.invocation == "quiesce" else step.invocation
        event(step.caller, f"{step.key}: {step.amount} {step.wallet} ({how})", to="handler")
        if step.fault:
            lane = "provider" if step.fault.family in (PROVIDER_DOWN, PROVIDER_LOST) else store
            event(lane, step.fault.label(), "tab:orange")

    def answered(step: Sent) -> None:
        if step.crashed_at:
            event("handler", f"crash at {step.crashed_at}", "tab:orange")
        event("handler", step.answer, "tab:red" if step.broken else "black", to=step.caller)

    n = 0
    while n < len(history):
        step = history[n]
        if not isinstance(step, Sent):                              # time passing, the world, a write's request
            event("handler", step.label or step.said if isinstance(step, Happened) else step.words(), "0.4")
        elif step.when is not None and n + 1 < len(history) and isinstance(history[n + 1], Sent):
            outer = history[n + 1]                                  # the request in flight when this one came
            sent(outer)
            event("handler", step.when.label(), "0.4")
            sent(step)
            answered(step)
            answered(outer)
            n += 1
        else:
            sent(step)
            answered(step)
        n += 1
    if not any(step.broken for step in history):                    # broken at quiescence: the money
        event(store, textwrap.shorten(f"at quiescence: {sentence}", 70, placeholder="..."), "tab:red")
    frame = timeline.frame()
    frame["color"] = colors
    callers = sorted({step.caller for step in history if isinstance(step, Sent)})
    return frame, [*callers, "handler", *(lane for lane in (store, "provider") if lane in used)]
