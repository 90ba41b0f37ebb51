"""Checks on the arguments of a debit, made before anything is sent.

Bad input must fail loudly and write nothing, so every lesson's debit function
starts with `check_debit(...)`. Each error names the problem.
"""

from __future__ import annotations

import math
from decimal import Decimal

MAX_DIGITS = 38          # DynamoDB numbers carry at most 38 significant digits
MAX_REQUEST_ID_LENGTH = 36  # a uuid; also the longest ClientRequestToken DynamoDB accepts


class BadInput(ValueError):
    """A debit argument is not acceptable; nothing was written."""


class WalletNotFound(LookupError):
    """The wallet does not exist; nothing was written."""

    def __init__(self, wallet_id: str) -> None:
        super().__init__(f"wallet {wallet_id!r} does not exist; nothing was written")
        self.wallet_id = wallet_id


def check_amount(amount: object) -> int:
    """Return `amount` if it is a positive whole number DynamoDB can store exactly."""
    if isinstance(amount, bool) or not isinstance(amount, (int, Decimal, float)):
        raise BadInput(f"amount must be a whole number of cents, got {type(amount).__name__} {amount!r}")
    if isinstance(amount, float):
        if math.isnan(amount) or math.isinf(amount):
            raise BadInput(f"amount must be a finite number, got {amount!r}")
        raise BadInput(f"amount must be a whole number of cents, not a float: {amount!r}")
    if isinstance(amount, Decimal):
        if not amount.is_finite():
            raise BadInput(f"amount must be a finite number, got {amount!r}")
        if amount != amount.to_integral_value():
            raise BadInput(f"amount must be a whole number of cents, got {amount}")
        amount = int(amount)
    if amount <= 0:
        raise BadInput(f"amount must be positive, got {amount}")
    if len(str(amount)) > MAX_DIGITS:
        raise BadInput(f"amount has {len(str(amount))} digits; DynamoDB stores at most {MAX_DIGITS}")
    return amount


def check_request_id(request_id: object) -> str:
    """Return `request_id` if it is a non-empty string of at most 36 characters."""
    if not isinstance(request_id, str):
        raise BadInput(f"request_id must be a string, got {type(request_id).__name__} {request_id!r}")
    if not request_id.strip():
        raise BadInput("request_id must not be empty")
    if len(request_id) > MAX_REQUEST_ID_LENGTH:
        raise BadInput(f"request_id is {len(request_id)} characters; at most {MAX_REQUEST_ID_LENGTH} allowed")
    return request_id


def check_wallet_id(wallet_id: object) -> str:
    """Return `wallet_id` if it is a non-empty string."""
    if not isinstance(wallet_id, str) or not wallet_id:
        raise BadInput(f"wallet_id must be a non-empty string, got {wallet_id!r}")
    return wallet_id


_NO_REQUEST_ID = object()


def check_debit(wallet_id: object, amount: object, request_id: object = _NO_REQUEST_ID) -> None:
    """Validate a debit's arguments; raise `BadInput` naming the first problem.

    Pass `request_id` for debits that carry one (even `None` is then checked).
    """
    check_wallet_id(wallet_id)
    check_amount(amount)
    if request_id is not _NO_REQUEST_ID:
        check_request_id(request_id)
