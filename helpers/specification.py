"""What a retry-safe payment handler must hold, written once; `helpers.checker` holds handlers to it.

A history is any sequence of requests -- any keys, callers and payloads -- with any event of the catalogue
(`helpers.catalogue`, each entry with its source) at any point of an attempt in flight: a crash at any step, a
lost DynamoDB answer, each failure answer a lesson's handler can meet (the catalogue says which DynamoDB answers
it draws, and why not the others), the payment provider down or charging and then failing, another request run
to its end, attempts sharing an invocation ID and a millisecond, the clock moved to either side of every clock
(leases, retention windows, the provider's window, a TTL) and a TTL sweep, the world changing (a wallet closed,
reopened, topped up, paid from elsewhere), amounts at their limits. At **quiescence** (every crashed attempt's lease
over, and each key's first request sent again until it gets a final answer), five properties hold:

1. **once** -- a logical operation (a caller's key, within its retention window) takes effect at most
   once, and exactly once if any copy was answered success. (After the window a design may forget a finished
   key or remember it longer, but an unfinished one must still end once: the checker resends old keys across
   the window's edge, and sends new keys after a whole window.) Per wallet: the money debited, the money
   the provider charged, and the sum of the amounts answered success are equal.
2. **bound to its payload** -- once a key's work has begun, the key never produces an effect for another
   payload within its retention window. Judged at each answer (`check_answer`): every success answered under one
   key is for one payload, and a mismatch (422) names a key used before for another. A failed first attempt is
   not judged by its answer: whether its write landed (a lost answer, a 500) the caller cannot tell, nor the
   checker. If it landed and another payload then took effect, money was debited that no success answers for,
   and *once* says so at quiescence.
3. **truthful** -- success means applied (1 checks it); an answer that says *nothing was written*
   (a mismatch, bad input, a missing wallet) moved no money; a replay is the first answer, byte for
   byte -- for an HTTP answer, its status, its body and the headers the contract names (`CONTRACT_HEADERS`:
   content-type, location), with a replay mark (`REPLAY_MARKS`, Stripe's `Idempotent-Replayed`) allowed on a
   replay. (*In progress* promises nothing about what was written: only that the caller should ask again.)
4. **live** -- no key stays stuck: after the lease and a bounded number of resends, the same request
   gets a final answer (success, or a refusal that will not change).
5. **useful** -- a handler owes answers, not only the absence of harm: every answer is one a reference model
   (`Model`) of the wallets, the keys and the design's declared limits allows. A valid request, for a wallet
   that exists and can pay, with faults that end, ends in success; every refusal has its reason in the model
   (bad input, an amount over the design's limit, too little money, a key already used for another payload),
   and a request the model refuses (an overdraft where the design declares a guard, an amount over its limit)
   is never answered success. Doing nothing is safe, but not useful: a handler that refuses everything breaks it.

Which answers are which (`classify`): a 2xx response is *success*; 422 a *mismatch*; 409 *in
progress*; any other 4xx, `BadInput`, `WalletNotFound`, `InsufficientFunds` and a debit's `KeyReused` a
*refusal*; a 5xx, a crash or any other exception is *unknown* -- the caller cannot tell whether it was
applied, and sends again. Success, mismatch and refusal are final.

Designs that give a property up on purpose say which (the lessons name it beside the design):

| design | gives up |
|---|---|
| the naive debit (notebook 03) | once |
| `last_request_id` (03, 04): an old ID after a newer one (ABA) | once |
| `last_request_id`; a ledger marker with no payload (05, 08): an ID reused, another amount | bound to its payload |
| 04's overdraft guard: a late copy, after another debit, told "insufficient funds", its money taken | once |
| every cancellation read as a duplicate (08's `debit_mistaken`): a conflict answered "already applied" | once |
| Powertools' idempotency utility, in Lambda: completion not fenced on the lease (11) | truthful |
| Powertools, on an error: its record deleted, fingerprint and all (11) | once, bound to its payload |
| Powertools outside Lambda: no in-progress expiry, a crash blocks its key (11) | live |
| giving the key back on an error (11's `give_back`) | once, bound to its payload |
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .validation import BadInput, InsufficientFunds, WalletNotFound

ONCE, BOUND, TRUTHFUL, LIVE, USEFUL = "once", "bound to its payload", "truthful", "live", "useful"
PROPERTIES = (ONCE, BOUND, TRUTHFUL, LIVE, USEFUL)

SUCCESS, MISMATCH, IN_PROGRESS, REFUSED, UNKNOWN = "success", "mismatch", "in progress", "refused", "unknown"
FINAL = frozenset({SUCCESS, MISMATCH, REFUSED})
NOTHING_WRITTEN = frozenset({MISMATCH, REFUSED})   # 409 says "not finished, retry": not that nothing was written
CONTRACT_HEADERS = ("content-type", "location")   # what a replay must give back besides status and body (09)
REPLAY_MARKS = ("idempotent-replayed",)             # a header a design may add to a replay, and only that (Stripe)
REFUSING_ERRORS = ("KeyReused",)   # a debit's own "this key holds another debit; nothing written" (notebook 06)


class Crash(BaseException):
    """The attempt dies at this step: no `except Exception` of the handler runs (a Lambda timeout, an OOM).

    Its caller gets no answer. The one crash every harness raises: 06's scenarios' `crash_at`, notebook 10's,
    and helpers.checker's generated histories.
    """


class Violation(AssertionError):
    """A property broke: `prop` names it, `sentence` says how in plain words, `history` is what happened."""

    def __init__(self, prop: str, sentence: str, history: list[dict[str, Any]] | None = None) -> None:
        super().__init__(f"{prop}: {sentence}")
        self.prop, self.sentence, self.history = prop, sentence, list(history or [])


def classify(answer: Any, refusing: tuple[str, ...] = ()) -> str:
    """Which kind of answer a caller got: a response dict, or the exception the call raised.

    `refusing` names further exceptions that say *nothing was written* (a lesson's own, such as notebook 01's
    `StaleUpdate` or 02's `UsernameTaken`): refusals too.
    """
    if isinstance(answer, Mapping) and isinstance(answer.get("status"), int):
        status = answer["status"]
        if 200 <= status < 300:
            return SUCCESS
        return {422: MISMATCH, 409: IN_PROGRESS}.get(status, REFUSED if 400 <= status < 500 else UNKNOWN)
    if isinstance(answer, (BadInput, WalletNotFound, InsufficientFunds)):
        return REFUSED
    if type(answer).__name__ in (*REFUSING_ERRORS, *refusing):
        return REFUSED
    return UNKNOWN


def in_words(answer: Any) -> str:
    """An answer in a few words, for a history: `201 {"charge": ...}`, `422`, `ProviderUnavailable`.

    A response may carry `said`: the handler's own words for it (an exercise's `'insufficient funds'`).
    """
    if isinstance(answer, Mapping) and "said" in answer:
        return str(answer["said"])
    if isinstance(answer, Mapping) and "status" in answer:
        if not 200 <= answer["status"] < 300:
            return str(answer["status"])
        body = answer.get("body", "")
        try:
            values = json.loads(body)
        except (TypeError, ValueError):
            return f'{answer["status"]} {body!r:.40}'
        shown = " ".join(map(str, values.values())) if isinstance(values, dict) else str(values)
        return f'{answer["status"]} {shown}'[:60]
    return "crashed" if isinstance(answer, Crash) else type(answer).__name__


@dataclass
class Operation:
    """One logical operation: a caller's key within one retention window, and every answer it got."""

    caller: str
    key: str
    first: tuple[str, int]                                   # (wallet, amount) of its first request
    successes: list[tuple[tuple[str, int], Any]] = field(default_factory=list)
    pending: set[tuple[str, int]] = field(default_factory=set)   # payloads whose last answer was not final
    payloads: set[tuple[str, int]] = field(default_factory=set)  # every payload sent under the key so far
    first_at: float = 0.0                                        # when its first request was sent (its window)
    after: Operation | None = None       # the finished operation under the same key whose window had passed
    moved: int = 0                       # money its answers saw move (debited), all copies together
    refusals: dict[tuple[str, int], Any] = field(default_factory=dict)   # payload -> its first refusal (a design
                                         # that saves refusals replays it, though the world has changed since)
    in_flight: int = 0                   # attempts sent and not yet answered (their money may be taken already)


# --- the reference model: which answers a request may get --------------------------------------------------------

ANOTHER_PAYLOAD, TOO_LITTLE, OVER_LIMIT, BAD_AMOUNT, CLOSED, NOT_THEIRS = (
    "the key was used for another payload", "the wallet cannot pay it", "over the design's limit",
    "not a valid amount", "the wallet is closed", "not the caller's wallet")


@dataclass
class Model:
    """The reference model of what a request may be answered: the wallets, the keys and the design's limits.

    `opening`: each wallet's balance as the history began; `max_amount`: the largest amount the design
    declares it takes (None: DynamoDB's own 38 digits); `guards_overdraft`: the design declares that it refuses
    a debit the wallet cannot pay (06's and 09's handlers do; 03's debit lets a balance go below zero).
    """

    opening: Mapping[str, int]
    max_amount: int | None = None
    guards_overdraft: bool = False
    wallets_of: Mapping[str, set[str]] | None = None           # caller -> the wallets it may pay from (None: any)
    closed: dict[str, float] = field(default_factory=dict)     # wallet -> when it was closed (the world changing)
    elsewhere: dict[str, int] = field(default_factory=dict)    # wallet -> paid from it by someone else

    def reasons(self, op: Operation, payload: tuple[str, int], ops: list[Operation]) -> set[str]:
        """Every reason the model has to refuse `payload` under `op`'s key now (empty: it must succeed)."""
        wallet, amount = payload
        found = set()
        earlier, before = set(op.payloads), op.after
        while before is not None:          # past its window a key may be remembered longer: both are right
            earlier |= before.payloads
            before = before.after
        if earlier - {payload}:
            found.add(ANOTHER_PAYLOAD)
        if amount <= 0 or amount >= 10**38:
            found.add(BAD_AMOUNT)
        if self.max_amount is not None and amount > self.max_amount:
            found.add(OVER_LIMIT)
        if wallet in self.closed:
            found.add(CLOSED)
        if self.wallets_of is not None and wallet not in self.wallets_of.get(op.caller, set()):
            found.add(NOT_THEIRS)
        spent = sum(o.first[1] for o in ops if (o.successes or o.pending or o.in_flight) and o.first[0] == wallet)
        if self.opening.get(wallet, 0) - self.elsewhere.get(wallet, 0) - spent < amount:
            found.add(TOO_LITTLE)      # the money answered or possibly taken leaves too little
        return found

    def must_refuse(self, op: Operation, payload: tuple[str, int], ops: list[Operation]) -> str | None:
        """A reason the model refuses `payload` whatever happened before: None if success is allowed."""
        wallet, amount = payload
        if amount <= 0 or amount >= 10**38:
            return BAD_AMOUNT
        if self.wallets_of is not None and wallet not in self.wallets_of.get(op.caller, set()):
            return NOT_THEIRS
        if self.max_amount is not None and amount > self.max_amount:
            return OVER_LIMIT
        if any(p == payload for p, _ in op.successes):
            return None                         # a replay of what was paid
        if op.after is not None and any(p == payload for p, _ in op.after.successes):
            return None                         # a replay past the window (if money moved again, *once* says so)
        if wallet in self.closed and op.first_at > self.closed[wallet] and not op.pending:
            return CLOSED                       # a new payment from a wallet closed before it was first sent
        if not self.guards_overdraft:
            return None
        answered = sum(o.successes[0][0][1] for o in ops if o.successes and o.successes[0][0][0] == wallet)
        left = self.opening.get(wallet, 0) - self.elsewhere.get(wallet, 0) - answered
        return TOO_LITTLE if left < amount else None


def check_answer(op: Operation, payload: tuple[str, int], answer: Any, moved: Mapping[str, int],
                 model: Model | None = None, ops: list[Operation] | None = None) -> None:
    """The properties one answer can break on its own: truthful (nothing written, replays), bound, and --
    given the reference `model` and every operation of the history (`ops`) -- useful."""
    kind = classify(answer)
    op.moved += sum(amount for name, amount in moved.items() if name.endswith("debited"))
    (op.pending.discard if kind in FINAL else op.pending.add)(payload)
    if kind in NOTHING_WRITTEN and any(moved.values()):
        what = ", ".join(f"{name} {amount:+}" for name, amount in moved.items() if amount)
        raise Violation(TRUTHFUL, f"the answer {in_words(answer)} says nothing was written, but money moved ({what})")
    if kind in NOTHING_WRITTEN and any(p == payload for p, _ in op.successes):
        raise Violation(TRUTHFUL, f"key {op.key!r} answered {in_words(op.successes[0][1])} for {_pay(payload)}, "
                                  f"then the same request was refused: {in_words(answer)} (a resend must get the "
                                  "first answer)")
    replay = kind in NOTHING_WRITTEN and payload in op.refusals and _same(op.refusals[payload], answer)
    if model is not None and not replay:     # a saved refusal, replayed: its reason was the model's when first given
        check_useful(op, payload, answer, kind, model, ops or [op])
    if kind in NOTHING_WRITTEN:
        op.refusals.setdefault(payload, answer)
    op.payloads.add(payload)
    if kind != SUCCESS:
        return
    for earlier_payload, earlier in op.successes:
        if earlier_payload != payload:
            raise Violation(BOUND, f"key {op.key!r} answered success for {_pay(earlier_payload)} and then for "
                                   f"{_pay(payload)}")
        if not same_answer(earlier, answer):
            raise Violation(TRUTHFUL, f"a replay of key {op.key!r} differs from its first answer: "
                                      f"{_differs(earlier, answer)}")
    op.successes.append((payload, answer))


def check_useful(op: Operation, payload: tuple[str, int], answer: Any, kind: str, model: Model,
                 ops: list[Operation]) -> None:
    """Useful: a refusal needs a reason in the model, a mismatch a key used before for another payload, and a
    request the model refuses is not answered success."""
    if kind == SUCCESS:
        refuse = model.must_refuse(op, payload, ops)
        if refuse is not None:
            raise Violation(USEFUL, f"{_pay(payload)} must be refused ({refuse}), but it was answered "
                                    f"{in_words(answer)}")
        return
    if kind not in NOTHING_WRITTEN:
        return
    reasons = model.reasons(op, payload, ops)
    said = _reasons_given(answer)
    if reasons and said is not None and not said & reasons:     # refused, but not for the reason it gives
        raise Violation(USEFUL, f"{_pay(payload)} was refused with {in_words(answer)}, which is not why: "
                                f"{' and '.join(sorted(reasons))}")
    if kind == MISMATCH and ANOTHER_PAYLOAD not in reasons:
        raise Violation(USEFUL, f"{_pay(payload)} under key {op.key!r} was answered {in_words(answer)} (the key "
                                "holds another payment), but the key was never used for another payment")
    if not reasons:
        raise Violation(USEFUL, f"{_pay(payload)} is a valid payment the wallet can pay, but it was refused: "
                                f"{in_words(answer)} (a refusal needs a reason: bad input, too little money, "
                                "a key used for another payment)")


def _reasons_given(answer: Any) -> set[str] | None:
    """The reasons a refusal gives, where it names one (a missing wallet, too little money, another payload under
    the key); None for one that names none (a bare 400)."""
    status = answer.get("status") if isinstance(answer, Mapping) else None
    if isinstance(answer, WalletNotFound) or status == 404:
        return {CLOSED, NOT_THEIRS}
    if isinstance(answer, InsufficientFunds) or status == 402:
        return {TOO_LITTLE}
    if status == 422 or type(answer).__name__ in REFUSING_ERRORS:
        return {ANOTHER_PAYLOAD}
    return None


def check_money(ops: list[Operation], debited: Mapping[str, int], charged: Mapping[str, int] | None) -> None:
    """At quiescence: per wallet, debited = charged = the amounts answered success (once, and bound)."""
    answered: dict[str, int] = {wallet: 0 for wallet in debited}
    for op in ops:
        if (op.successes and op.after is not None and op.after.successes and not op.moved
                and _same(op.successes[0][1], op.after.successes[0][1])):
            continue          # a design that remembers a key past its window replayed the first answer: no payment
        if op.successes:
            wallet, amount = op.successes[0][0]
            answered[wallet] = answered.get(wallet, 0) + amount
    for wallet in sorted(answered):
        d, s = debited.get(wallet, 0), answered[wallet]
        c = s if charged is None else charged.get(wallet, 0)
        if d == c == s:
            continue
        money = f"wallet {wallet!r}: debited {d}" + ("" if charged is None else f", charged {c}")
        raise Violation(ONCE, f"{money}, but the answers said {s} was paid")


def check_final(op: Operation, payload: tuple[str, int], answer: Any, resends: int) -> None:
    """Live: a client without a final answer, having sent its request `resends` more times after each lease, has
    one now (0 resends: a client that cannot resend its call, which then gave up where a resend would have
    finished it)."""
    if classify(answer) in FINAL:
        return
    if resends == 0:
        raise Violation(LIVE, f"{op.caller}'s payment {op.key!r} ({_pay(payload)}) got no final answer: the "
                              "client gave up where a resend would have finished it")
    raise Violation(LIVE, f"{op.caller}'s key {op.key!r} ({_pay(payload)}) got no final answer in {resends} "
                          "resends after its lease ran out")


def check_returned(op: Operation, payload: tuple[str, int], answer: Any) -> None:
    """Live, with callers who leave: a caller coming back once, after the recovery worker ran, gets a final answer."""
    if classify(answer) not in FINAL:
        raise Violation(LIVE, f"{op.caller}'s key {op.key!r} ({_pay(payload)}) came back after the recovery "
                              f"worker and got {in_words(answer)}, not a final answer")


def check_rerun(before: Mapping[str, int], after: Mapping[str, int]) -> None:
    """Once, with callers who leave: the recovery worker run a second time moves no money."""
    if dict(after) != dict(before):
        raise Violation(ONCE, "the recovery worker's second run moved money")


def check_half_done(money: Mapping[str, int], wallets: Iterable[str]) -> None:
    """Once, with callers who leave: after the recovery worker, no payment is half done -- per wallet, what was
    debited was charged."""
    for w in wallets:
        d, c = money[f"{w} debited"], money[f"{w} charged"]
        if d != c:
            raise Violation(ONCE, f"wallet {w!r}: debited {d}, charged {c} once its callers had left: a payment "
                                  "left half done, with nobody to resend it")


def check_window(provider: Any, cutoff: float) -> None:
    """Once (issue 35): no charge is asked with a key whose first charge is older than the provider's window less the
    design's margin (`cutoff`): past it the provider may forget the key and charge again, so the charge is looked up
    instead. `provider` keeps what it `made` and what it was `asked` ((key, when) pairs)."""
    first: dict[str, float] = {}
    for charge in provider.made:
        first.setdefault(charge.idempotency_key, charge.charged_at)
    for key, at in provider.asked:
        if key in first and at - first[key] >= cutoff:
            raise Violation(ONCE, f"a charge was asked again with provider key {key!r} "
                                  f"{(at - first[key]) / 3600:.1f} h after its first charge, past the provider's "
                                  "window less the margin: it may have forgotten the key and charge twice (look the "
                                  "charge up instead)")


def check_written(subject: Any, request: tuple, words: str, kind: str, before: Any, after: Any) -> None:
    """Truthful, for a write that is not money (`subject` a `RecordSubject`: it reads the item back, and says whether
    it `holds` the request's write): a success finds the write there; an answer that says nothing was written
    finds the item as it was."""
    if kind == SUCCESS and not subject.holds(after, request):
        raise Violation(TRUTHFUL, f"the answer {words} says {subject.describe(request)} was written, but reading "
                                  f"it back finds {subject.show(after)}")
    if kind in NOTHING_WRITTEN and after != before:
        raise Violation(TRUTHFUL, f"the answer {words} says nothing was written, but the item went from "
                                  f"{subject.show(before)} to {subject.show(after)}")


def check_written_final(described: str, kind: str | None, resends: int) -> None:
    """Live, for a write that is not money: resent `resends` times, the request has a final answer."""
    if kind not in FINAL:
        raise Violation(LIVE, f"{described} got no final answer in {resends} resends")


def _same(a: Any, b: Any) -> bool:
    return same_answer(a, b)


def same_answer(first: Any, replay: Any) -> bool:
    """Whether `replay` gives back `first`: the whole answer alike; or, for a response, the same status and body
    and the same headers of `CONTRACT_HEADERS` -- any other header may differ, and a replay may carry a mark
    (`REPLAY_MARKS`) the first answer had not."""
    if not (isinstance(first, Mapping) and isinstance(replay, Mapping) and "status" in first and "status" in replay):
        return json.dumps(first, sort_keys=True, default=str) == json.dumps(replay, sort_keys=True, default=str)
    if (first["status"], first.get("body")) != (replay["status"], replay.get("body")):
        return False
    if any(k not in ("status", "body", "headers", "said") and first.get(k) != replay.get(k)
           for k in {*first, *replay}):
        return False
    a, b = _contract_headers(first), _contract_headers(replay)
    return a == b


def _contract_headers(answer: Mapping[str, Any]) -> dict[str, str]:
    given = answer.get("headers") or {}
    pairs = given.items() if isinstance(given, Mapping) else given          # a mapping, or (name, value) pairs
    headers = {str(k).lower(): v for k, v in pairs}
    return {k: headers.get(k) for k in CONTRACT_HEADERS}


def _differs(first: Any, replay: Any) -> str:
    """How a replay differs from the first answer, in a few words (two answers that print alike differ in a
    header the contract names)."""
    a, b = in_words(first), in_words(replay)
    if a == b and isinstance(first, Mapping) and isinstance(replay, Mapping):
        missing = {k: v for k, v in _contract_headers(first).items() if _contract_headers(replay)[k] != v}
        return f"{a}, its headers {missing} not given back" if missing else f"{a}, then another {b}"
    return f"{a} then {b}"


def _pay(payload: tuple[str, int]) -> str:
    return f"{payload[1]} from {payload[0]!r}"
