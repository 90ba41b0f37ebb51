"""Instant feedback for the "Your turn" exercises: one checker per lesson.

A checker runs the reader's function against the real backend -- under seeded
lost-response schedules, concurrent duplicates, the late-retry orders where
they apply, and bad input -- and returns a `Verdict`: PASS, or **one concrete
counterexample** (the schedule, what was expected and what happened). It never
raises for a wrong answer, so an unsolved exercise does not stop "Run All".

    lesson_00  check_payment_handler     a handler that survives one payment arriving twice
    lesson_01  check_order_safe_update   a status update that refuses a late, older write
    lesson_02  check_sign_up             a create that tells its own retry from someone else's row
    lesson_03  check_retry_safe_debit    a debit that is safe to retry
    lesson_04  check_guarded_debit       an overdraft guard that tells a duplicate from insufficient funds
    lesson_05  check_ledger_debit        a debit that remembers every request, across lost responses
    lesson_06  check_fenced_completion   a completion fenced on the lease, and safe to retry
    lesson_07  check_safe_consumer       a queue consumer that is safe under redelivery and resends
    lesson_08  check_bounded_pay         a payment that resends what is safe to resend, and nothing else
    lesson_09  check_retrying_client     an HTTP client that pays once, however its responses are lost
    lesson_10  check_outbox_worker       an outbox worker that charges every payment once (import it from
                                         helpers.exercises.lesson_10: it needs PostgreSQL)
    lesson_12  check_careful_client      a caller that keeps its key, waits with full jitter and stays within
                                         a retry budget (import it from helpers.exercises.lesson_12)
    verdict    Verdict (printed wrapped to 100 characters a line) and the steps every checker shares
    specified  Specification: every checker's last check, the collection's checker, told the same way in all
"""

from .lesson_00 import check_payment_handler
from .lesson_01 import check_order_safe_update
from .lesson_02 import check_sign_up
from .lesson_03 import check_retry_safe_debit
from .lesson_04 import check_guarded_debit
from .lesson_05 import check_ledger_debit
from .lesson_06 import check_fenced_completion
from .lesson_07 import check_safe_consumer
from .lesson_08 import check_bounded_pay
from .lesson_09 import check_retrying_client
from .verdict import Verdict

__all__ = [
    "Verdict", "check_payment_handler", "check_order_safe_update", "check_sign_up", "check_retry_safe_debit",
    "check_guarded_debit", "check_ledger_debit", "check_fenced_completion",
    "check_safe_consumer", "check_bounded_pay", "check_retrying_client",
]
