"""Checks on the arguments of a debit, made before anything is sent; and `BadInput`, the one error
every helper raises for an argument it cannot accept.

Bad input must fail loudly and write nothing, so every lesson's debit function
starts with `check_debit(...)`. Each error names the problem. A payment as a queue
or a stream delivers it to notebook 07 (its body) is checked whole by
`check_payment_body`, and `read_payment_body` refuses text that is not JSON.

The limits are DynamoDB's own, measured as DynamoDB measures them (strings in
UTF-8 bytes), so both backends refuse the same inputs the same way, before a
request is sent:

- a partition key value is at most 2,048 bytes, a sort key value at most 1,024;
- an item is at most 400 KB (attribute names and values, UTF-8);
- a number has at most 38 significant digits;
- a `ClientRequestToken` is at most 36 characters, and a request ID may become one.

Sources: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html
(partition and sort key lengths, item size) and
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html
(numbers: up to 38 digits of precision).

`Decimal` amounts (boto3 returns a `Decimal` for every number it reads) are
accepted when they are whole and written plainly (``Decimal('10')``); a
fraction is refused by name, and so is exponent notation (``Decimal('1E+1')``):
moto fails on it and DynamoDB Local applies it, so neither answer is sent.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

MAX_DIGITS = 38                 # DynamoDB numbers carry at most 38 significant digits
MAX_REQUEST_ID_BYTES = 36       # a uuid; also the longest ClientRequestToken DynamoDB accepts
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
MAX_ITEM_BYTES = 400 * 1024


class BadInput(ValueError):
    """An argument a helper or a lesson's function cannot accept; raised before anything is written or done.

    One error for every such argument, whatever was wrong with it -- a negative amount, a request ID too long,
    a queue setting out of range, a clock that is not a `VirtualClock`, a swimlane with no events -- so a
    lesson catches one name. Its message names the argument and what was wrong.
    """


class WalletNotFound(LookupError):
    """The wallet does not exist; nothing was written -- or, where a handler keeps a claim made before it found out,
    `written` says what was (notebook 10: no money moved, the claim keeps the key)."""

    def __init__(self, wallet_id: str, written: str = "nothing was written") -> None:
        super().__init__(f"wallet {wallet_id!r} does not exist; {written}")
        self.wallet_id = wallet_id


class InsufficientFunds(LookupError):
    """The wallet holds less than the amount asked for; nothing was written."""

    def __init__(self, wallet_id: str, amount: int, balance: int) -> None:
        super().__init__(f"wallet {wallet_id!r} holds {balance}, less than {amount}; nothing was written")
        self.wallet_id, self.amount, self.balance = wallet_id, amount, balance


def utf8_bytes(text: str) -> int:
    """How long DynamoDB counts `text`: its UTF-8 encoding, in bytes."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def check_text(value: str, *, name: str) -> str:
    """Return `value` if it is valid Unicode text: no lone surrogate such as ``"\\ud800"``.

    Python strings may hold one; UTF-8 cannot. The backends disagree on it (moto fails to encode the
    request, nothing written; DynamoDB Local takes the write), and psycopg refuses it, so it is refused
    here, by name, before anything is sent.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BadInput(f"{name} is not valid text: a lone surrogate {value[error.start]!r} at position "
                       f"{error.start}") from None
    return value


def _digits(value: int) -> str:
    """How many digits `value` has, without converting a huge int to text (Python refuses past 4,300)."""
    if value >= 10**4000:
        return "more than 4000"
    return str(len(str(value)))


def check_amount(amount: object) -> int:
    """Return `amount` as an int if it is a positive whole number DynamoDB can store exactly."""
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
            raise BadInput(f"amount must be a whole number of cents, got Decimal {amount}")
        exponent = amount.as_tuple().exponent
        if isinstance(exponent, int) and exponent > 0:
            raise BadInput(f"amount Decimal({str(amount)!r}) is in exponent notation; "
                           f"write it as Decimal('{int(amount)}') (the backends disagree on it)")
        amount = int(amount)
    if amount <= 0:
        raise BadInput(f"amount must be positive, got {amount}")
    if amount >= 10**MAX_DIGITS:
        raise BadInput(f"amount has {_digits(amount)} digits; DynamoDB stores at most {MAX_DIGITS}")
    return amount


def check_request_id(request_id: object) -> str:
    """Return `request_id` if it is a non-empty string of at most 36 bytes in UTF-8."""
    if not isinstance(request_id, str):
        raise BadInput(f"request_id must be a string, got {type(request_id).__name__} {request_id!r}")
    if not request_id.strip():
        raise BadInput("request_id must not be empty")
    check_text(request_id, name="request_id")
    size = utf8_bytes(request_id)
    if size > MAX_REQUEST_ID_BYTES:
        raise BadInput(f"request_id is {size} bytes in UTF-8 ({len(request_id)} characters); "
                       f"at most {MAX_REQUEST_ID_BYTES} allowed")
    return request_id


def check_key(value: object, *, name: str, sort_key: bool = False) -> str:
    """Return `value` if it is a non-empty string DynamoDB accepts as a partition (or sort) key value."""
    if not isinstance(value, str) or not value:
        raise BadInput(f"{name} must be a non-empty string, got {value!r}")
    check_text(value, name=name)
    limit, kind = (MAX_SORT_KEY_BYTES, "sort") if sort_key else (MAX_PARTITION_KEY_BYTES, "partition")
    size = utf8_bytes(value)
    if size > limit:
        raise BadInput(f"{name} is {size} bytes in UTF-8; DynamoDB allows a {kind} key of at most {limit} bytes")
    return value


def check_wallet_id(wallet_id: object) -> str:
    """Return `wallet_id` if it is a non-empty string short enough to be a partition key."""
    return check_key(wallet_id, name="wallet_id")


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it, roughly: names and string values in UTF-8, numbers by digits."""

    def size(value: Any) -> int:
        if isinstance(value, str):
            return utf8_bytes(value)
        if isinstance(value, (bytes, bytearray)):
            return len(value)
        if isinstance(value, bool) or value is None:
            return 1
        if isinstance(value, (int, Decimal, float)):
            return len(str(value).lstrip("-").replace(".", "")) // 2 + 2
        if isinstance(value, dict):
            return 3 + sum(utf8_bytes(str(k)) + size(v) + 1 for k, v in value.items())
        if isinstance(value, (list, tuple, set, frozenset)):
            return 3 + sum(size(v) + 1 for v in value)
        return utf8_bytes(str(value))

    return sum(utf8_bytes(name) + size(value) for name, value in item.items())


def check_item_size(item: dict[str, Any]) -> dict[str, Any]:
    """Return `item` if it fits in DynamoDB's 400 KB item limit."""
    size = item_bytes(item)
    if size > MAX_ITEM_BYTES:
        raise BadInput(f"the item is about {size} bytes; DynamoDB allows at most {MAX_ITEM_BYTES} (400 KB)")
    return item


_NO_REQUEST_ID = object()


def check_debit(wallet_id: object, amount: object, request_id: object = _NO_REQUEST_ID) -> None:
    """Validate a debit's arguments; raise `BadInput` naming the first problem.

    Pass `request_id` for debits that carry one (even `None` is then checked).
    """
    check_wallet_id(wallet_id)
    check_amount(amount)
    if request_id is not _NO_REQUEST_ID:
        check_request_id(request_id)


# --- a payment as a queue or a stream delivers it (notebook 07) ------------------------------------------------

PAYMENT_FIELDS = ("producer", "operation_id", "wallet", "amount")
KEY_SEPARATOR = "#"             # 07's marker key is producer#operation_id


def check_payment_body(body: object) -> dict[str, Any]:
    """Return the payment in `body` (its amount an int) if it is one; else raise `BadInput` naming the problem.

    A payment is an object with a `producer` and an `operation_id` (non-empty strings without the key's
    separator, ``#``), a `wallet` (a partition key) and an `amount` (a positive whole number). The separator is
    refused because 07's marker key joins the two names with it: ``shop#eu`` + ``op-01`` and ``shop`` +
    ``eu#op-01`` would be one key, and two payments one debit.
    """
    if not isinstance(body, dict):
        raise BadInput(f"a payment must be a JSON object, got {type(body).__name__} {_short(body)}")
    missing = [name for name in PAYMENT_FIELDS if name not in body]
    if missing:
        raise BadInput(f"the payment has no {', no '.join(map(repr, missing))}: {_short(body)}")
    for name in ("producer", "operation_id"):
        value = body[name]
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{name} must be a non-empty string, got {type(value).__name__} {_short(value)}")
        check_key(value, name=name)
        if KEY_SEPARATOR in value:
            raise BadInput(f"{name} {value!r} contains {KEY_SEPARATOR!r}, the key's separator: "
                           "two payments could share one key")
    key = f"{body['producer']}{KEY_SEPARATOR}{body['operation_id']}"
    if utf8_bytes(key) > MAX_REQUEST_ID_BYTES:
        raise BadInput(f"producer{KEY_SEPARATOR}operation_id is {utf8_bytes(key)} bytes in UTF-8; "
                       f"at most {MAX_REQUEST_ID_BYTES} allowed (a request ID's limit)")
    check_key(body["wallet"], name="wallet")
    return {**body, "amount": check_amount(body["amount"])}


def read_payment_body(text: object) -> dict[str, Any]:
    """The payment in a message body (JSON text), checked by `check_payment_body`; `BadInput` if it is not JSON."""
    try:
        body = json.loads(text)                                   # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BadInput(f"the message body is not JSON: {_short(text)}") from None
    return check_payment_body(body)


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
