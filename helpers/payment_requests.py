"""`check_payment()`: a payment request's shape and names, refused before anything is written.

Notebook 06's handler starts with it: the payload is exactly `{"wallet": ..., "amount": ...}` (checked as
any debit is, `check_debit`), the caller and the invocation are names of 1 to 100 characters without `#`
(the record's key is `caller#key`), the amount within the handler's own `max_amount`, and the key handed to
the payment provider -- the caller's key, scoped, and when its payment started -- within the provider's limit
(Stripe takes keys of up to 255 characters: https://docs.stripe.com/api/idempotent_requests). Each error names
the field.
"""

from __future__ import annotations

from typing import Any

from .validation import BadInput, check_debit, check_text

PROVIDER_KEY_LIMIT = 255
PAYMENT_SUFFIX = "@1900000000"   # the provider's key is `caller#key@<started_at>`: one payment, epoch seconds
NAME_LIMIT = 100


def check_payment(key: Any, payload: Any, invocation: Any, caller: Any, max_amount: int | None = None) -> str:
    """Raise `BadInput` naming the first problem; return the key scoped to its caller, `caller#key`.

    `max_amount`: the most one payment may take (the handler's own limit, below DynamoDB's 38 digits)."""
    if not isinstance(payload, dict) or set(payload) != {"wallet", "amount"}:
        raise BadInput(f"payload must have exactly 'wallet' and 'amount', got {str(payload)[:60]!r}")
    check_debit(payload["wallet"], payload["amount"], key)
    if max_amount is not None and payload["amount"] > max_amount:
        raise BadInput(f"amount {payload['amount']} is over the most one payment takes, {max_amount}")
    for name, value in (("caller", caller), ("invocation", invocation)):
        if not isinstance(value, str) or not value.strip() or "#" in value or len(value) > NAME_LIMIT:
            raise BadInput(f"{name} must be a name of 1-{NAME_LIMIT} characters without '#', "
                           f"got {str(value)[:60]!r}")
        check_text(value, name=name)
    size = len(caller) + 1 + len(key) + len(PAYMENT_SUFFIX)
    if size > PROVIDER_KEY_LIMIT:
        raise BadInput(f"caller and key make a provider key of {size} characters with its '@<started_at>'; "
                       f"the provider takes at most {PROVIDER_KEY_LIMIT}")
    return f"{caller}#{key}"
