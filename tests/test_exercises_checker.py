"""The exercise checkers of 00-05 and 08 hold the reader's answer to the collection's checker (helpers/checker.py).

The scenario checks replay the stories their lessons tell; an answer that reports success for any error passes
them all, since no scenario injects DynamoDB's failure answers. After the scenarios, each checker sends the answer
generated histories with lost responses and DynamoDB's failure answers injected (`helpers.exercises.specified.
Specification`): such an answer gets NOT YET, the broken property named and the shortest history shown; the
solution in notebooks/solutions/ gets PASS and is told which properties held over how many histories.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from IPython.lib.pretty import pretty

from helpers.checker import check_handler
from helpers.exercises import (
    check_bounded_pay,
    check_guarded_debit,
    check_ledger_debit,
    check_order_safe_update,
    check_payment_handler,
    check_retry_safe_debit,
    check_sign_up,
)
from helpers.exercises.specified import Specification, debit_subject
from helpers.exercises.verdict import Counterexample
from helpers.specification import BOUND, ONCE
from helpers.subjects import DebitSubject
from helpers.tables import fresh_table

from notebook_code import exercise_solution, exercise_starter, lesson

EXERCISES = {
    # lesson: (notebook, the reader's function, checker, what an error-swallowing answer says, the property it breaks,
    #          the properties the solution holds)
    "00": ("00_why_retries_happen", "my_handler", check_payment_handler, {"status": "paid"}, "once",
           "once, truthful, live and useful"),
    "01": ("01_fixed_value_updates", "my_set_status", check_order_safe_update, "already applied", "truthful",
           "truthful and live"),
    "02": ("02_conditional_creates", "my_sign_up", check_sign_up, "already created", "truthful",
           "truthful and live"),
    "03": ("03_request_id_increments", "my_debit", check_retry_safe_debit, "already applied", "once",
           "once, truthful, live and useful"),
    "04": ("04_where_it_stops", "my_debit", check_guarded_debit, "already applied", "once",
           "once, truthful, live and useful"),
    "05": ("05_remembering_every_request", "my_debit", check_ledger_debit, "already applied", "once",
           "once, truthful, live and useful"),
    "08": ("08_when_dynamodb_says_no", "my_pay", check_bounded_pay, "already applied", "once",
           "once, truthful, live and useful"),
}
by_lesson = pytest.mark.parametrize("n", sorted(EXERCISES))


def solution(n):
    notebook, name, *_ = EXERCISES[n]
    return exercise_solution(notebook + ".ipynb", name)


def starter(n):
    notebook, name, *_ = EXERCISES[n]
    return exercise_starter(notebook + ".ipynb", name)


def swallowing(n):
    """The solution, but every ClientError it raises is answered as success ("already applied")."""
    reference, said = solution(n), EXERCISES[n][3]

    def swallows(*args):
        try:
            return reference(*args)
        except ClientError:
            return said                                   # a throttle, a conflict, a 500: "it went through"

    swallows.__name__ = EXERCISES[n][1]
    return swallows


def assert_fits(verdict):
    for line in pretty(verdict).splitlines():
        assert len(line) <= 100, line


@by_lesson
def test_the_solution_passes_and_is_told_what_held(db, n):
    verdict = EXERCISES[n][2](solution(n), db=db)
    assert verdict.passed and str(verdict).startswith("PASS: "), pretty(verdict)
    assert "held to the specification over " in verdict.message
    assert verdict.message.endswith(f": {EXERCISES[n][5]}."), verdict.message
    assert_fits(verdict)


@pytest.mark.parametrize("n", [n for n in sorted(EXERCISES) if n != "08"])
def test_an_error_swallowing_answer_gets_not_yet_with_the_broken_property(db, n):
    """The scenarios pass it (none injects a failure answer); the generated histories do not."""
    verdict = EXERCISES[n][2](swallowing(n), db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: "), pretty(verdict)
    assert f"breaks '{EXERCISES[n][4]}'" in verdict.message, verdict.message
    history = verdict.message.split("The shortest history found:\n")[1].splitlines()
    told = " ".join(" ".join(history).split())
    assert history[0].startswith("  1. ") and f"answers {EXERCISES[n][3]!r}" in told, verdict.message
    assert_fits(verdict)


def test_08_an_error_swallowing_pay_gets_not_yet_and_the_checker_names_the_property(db):
    """08's scenarios inject failure answers themselves, so they catch it first; the generated histories do too."""
    nb = lesson("solutions/08_when_dynamodb_says_no_solution.ipynb")

    def my_pay(table, wallet_id, amount, request_id):       # one send; any error but the wallet's is "done"
        nb["check_debit"](wallet_id, amount, request_id)
        try:
            table.meta.client.transact_write_items(TransactItems=nb["ledger_items"](table, wallet_id, amount,
                                                                                    request_id))
            return "applied"
        except ClientError as error:
            reasons = [r["Code"] for r in error.response.get("CancellationReasons", [])]
            if reasons[:1] == ["ConditionalCheckFailed"]:
                raise nb["WalletNotFound"](wallet_id) from None
            return "already applied"

    verdict = check_bounded_pay(my_pay, db=db)
    assert not verdict.passed and "your pay answered 'already applied'" in verdict.message, verdict.message
    held = Specification.staged(lambda: debit_subject(my_pay, fresh_table(db, "exercise-08", sort_key="sk"), db,
                                                      wallet_sort_key=True, writes=2),
                                name="your pay", keys_reused=False)
    with pytest.raises(Counterexample) as found:
        held()
    story = " ".join(str(found.value).split())
    assert "your pay breaks 'once'" in story and "your pay answers 'already applied'" in story, story


@by_lesson
def test_the_starter_still_fails(db, n):
    verdict = EXERCISES[n][2](starter(n), db=db)
    assert not verdict.passed and str(verdict).startswith("NOT YET: "), pretty(verdict)
    assert_fits(verdict)


def test_04_insufficient_funds_told_after_an_error_is_not_yet(db):
    """04's refusal is final and says nothing was taken: answered for a debit that went through, it is a lie; answered
    for one that wrote nothing (a conflict), it refuses a payment the wallet could make."""
    reference = solution("04")

    def refuses_on_any_error(*args):
        try:
            return reference(*args)
        except ClientError:
            return "insufficient funds"                     # a 500 after the write landed: money taken, "declined"

    refuses_on_any_error.__name__ = "my_debit"
    verdict = check_guarded_debit(refuses_on_any_error, db=db)
    # told as *truthful* (money moved under a refusal) or as *useful* (a valid, funded debit refused): both are it
    assert not verdict.passed and ("breaks 'truthful'" in verdict.message or "breaks 'useful'" in verdict.message)
    assert ("says nothing was written, but money moved" in verdict.message
            or "is a valid payment the wallet can pay, but it was refused" in verdict.message), verdict.message


# --- the options the exercises use, on the lessons' own debits ------------------------------------------------------

def test_one_at_a_time_keeps_aba_out_and_only_aba(db):
    """03's last_request_id debit breaks *once* when an older ID comes back (ABA); one request at a time, it holds.
    The naive debit breaks *once* one at a time too: the option hides ABA, not a double debit."""
    nb = lesson("03_request_id_increments.ipynb")

    def subject(debit):
        return DebitSubject(debit, table=fresh_table(db, "checker-one-at-a-time"), db=db)

    assert check_handler(subject(nb["debit_idempotent"]), histories=60, keys_reused=False,
                         shrink=False).broken == ONCE
    held = check_handler(subject(nb["debit_idempotent"]), histories=40, keys_reused=False, one_at_a_time=True)
    assert held.broken is None and held.untried == (BOUND,), str(held)
    naive = check_handler(subject(nb["debit_naive"]), histories=40, keys_reused=False, one_at_a_time=True,
                          shrink=False)
    assert naive.broken == ONCE, str(naive)


def test_a_shrinking_budget_returns_the_shortest_history_found_by_then(db):
    nb = lesson("03_request_id_increments.ipynb")
    subject = DebitSubject(nb["debit_naive"], table=fresh_table(db, "checker-budget"), db=db)
    verdict = check_handler(subject, histories=30, steps=4, keys_reused=False, shrink=5)
    assert verdict.broken == ONCE and verdict.history, str(verdict)
