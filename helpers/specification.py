"""What a retry-safe payment handler must hold, written once; `helpers.checker` holds handlers to it.

A history is any sequence of requests -- any keys, callers and payloads -- with any failures along
the way: a crash at any step, a lost DynamoDB answer, any failure answer DynamoDB can give, the payment
provider down, a duplicate arriving mid-flight, attempts sharing an invocation ID and a millisecond,
leases and retention windows running out. At **quiescence** (every crashed attempt's lease over, and
each key's first request sent again until it gets a final answer), four properties hold:

1. **once** -- a logical operation (a caller's key, within its retention window) takes effect at most
   once, and exactly once if any copy was answered success. (After the window a design may forget the key
   or remember it longer; the checker sends new keys after a window passes.) Per wallet: the money debited, the money
   the provider charged, and the sum of the amounts answered success are equal.
2. **bound to its payload** -- once a key's work may have begun, the key never produces an effect for
   another payload; such a request is refused (a mismatch, 422) for the whole retention window, after
   a failed first attempt too. Every success answered under one key is for one payload.
3. **truthful** -- success means applied (1 checks it); an answer that says *nothing was written*
   (a mismatch, bad input, a missing wallet) moved no money; a replay is the first answer, byte for
   byte. (*In progress* promises nothing about what was written: only that the caller should ask again.)
4. **live** -- no key stays stuck: after the lease and a bounded number of resends, the same request
   gets a final answer (success, or a refusal that will not change).

Which answers are which (`classify`): a 2xx response is *success*; 422 a *mismatch*; 409 *in
progress*; any other 4xx, `BadInput`, `WalletNotFound` and a debit's `KeyReused` a *refusal*; a 5xx, a
crash or any other exception is *unknown* -- the caller cannot tell whether it was applied, and sends
again. Success, mismatch and refusal are final.

Designs that give a property up on purpose say which (the lessons name it beside the design):

| design | gives up |
|---|---|
| the naive debit (notebook 03) | once |
| `last_request_id` (03, 04): an old ID after a newer one (ABA) | once |
| `last_request_id`; a ledger marker with no payload (05, 07, 08): an ID reused, another amount | bound to its payload |
| 04's overdraft guard: a late copy, after another debit, told "insufficient funds", its money taken | once |
| every cancellation read as a duplicate (08's `debit_mistaken`): a conflict answered "already applied" | once |
| Powertools' idempotency utility, in Lambda: completion not fenced on the lease (11) | truthful |
| Powertools, on an error: its record deleted, fingerprint and all (11) | once, bound to its payload |
| Powertools outside Lambda: no in-progress expiry, a crash blocks its key (11) | live |
| giving the key back on an error (11's `give_back`) | once, bound to its payload |
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .validation import BadInput, WalletNotFound

ONCE, BOUND, TRUTHFUL, LIVE = "once", "bound to its payload", "truthful", "live"
PROPERTIES = (ONCE, BOUND, TRUTHFUL, LIVE)

SUCCESS, MISMATCH, IN_PROGRESS, REFUSED, UNKNOWN = "success", "mismatch", "in progress", "refused", "unknown"
FINAL = frozenset({SUCCESS, MISMATCH, REFUSED})
NOTHING_WRITTEN = frozenset({MISMATCH, REFUSED})   # 409 says "not finished, retry": not that nothing was written
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
    if isinstance(answer, (BadInput, WalletNotFound)) or type(answer).__name__ in (*REFUSING_ERRORS, *refusing):
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


def check_answer(op: Operation, payload: tuple[str, int], answer: Any, moved: Mapping[str, int]) -> None:
    """The properties one answer can break on its own: truthful (nothing written, replays) and bound."""
    kind = classify(answer)
    (op.pending.discard if kind in FINAL else op.pending.add)(payload)
    if kind in NOTHING_WRITTEN and any(moved.values()):
        what = ", ".join(f"{name} {amount:+}" for name, amount in moved.items() if amount)
        raise Violation(TRUTHFUL, f"the answer {in_words(answer)} says nothing was written, but money moved ({what})")
    if kind != SUCCESS:
        return
    for earlier_payload, earlier in op.successes:
        if earlier_payload != payload:
            raise Violation(BOUND, f"key {op.key!r} answered success for {_pay(earlier_payload)} and then for "
                                   f"{_pay(payload)}")
        if json.dumps(earlier, sort_keys=True, default=str) != json.dumps(answer, sort_keys=True, default=str):
            raise Violation(TRUTHFUL, f"a replay of key {op.key!r} differs from its first answer: "
                                      f"{in_words(earlier)} then {in_words(answer)}")
    op.successes.append((payload, answer))


def check_money(ops: list[Operation], debited: Mapping[str, int], charged: Mapping[str, int] | None) -> None:
    """At quiescence: per wallet, debited = charged = the amounts answered success (once, and bound)."""
    answered: dict[str, int] = {wallet: 0 for wallet in debited}
    for op in ops:
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


def _pay(payload: tuple[str, int]) -> str:
    return f"{payload[1]} from {payload[0]!r}"
