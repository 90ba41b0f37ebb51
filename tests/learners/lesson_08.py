"""Learners' answers to 08's *Your turn*: `my_pay(table, wallet_id, amount, request_id)`.

The format: tests/test_learners.py. Sends 08's `ledger_items` (the wallet's debit, action 0; the marker, action 1),
resends what is safe to resend (at most ATTEMPTS sends, backing off on db.clock) and raises everything else.
"""

SOLUTION = '''
ATTEMPTS = 4
RESEND = {"TransactionConflictException", "ProvisionedThroughputExceededException", "ThrottlingException",
          "RequestLimitExceeded", "TransactionInProgressException", "InternalServerError", "ServiceUnavailable"}
RESEND_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}


def my_pay(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            table.meta.client.transact_write_items(TransactItems=ledger_items(table, wallet_id, amount, request_id))
            return "applied"
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "TransactionCanceledException":
                wallet, marker = (reason["Code"] for reason in error.response["CancellationReasons"])
                if wallet == "ConditionalCheckFailed":
                    raise WalletNotFound(wallet_id) from None
                if (wallet, marker) == ("None", "ConditionalCheckFailed"):
                    return "already applied"
                resend = {wallet, marker} <= RESEND_REASONS | {"None"}
            else:
                resend = code in RESEND
            if not resend or attempt == ATTEMPTS:
                raise
            db.clock.advance(min(0.025 * 2 ** attempt, 20))
'''

WRONG = {
    "reasons by membership, botocore's resends only (the starter)": '''
ATTEMPTS = 4
RESEND = {"ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"}


def my_pay(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            table.meta.client.transact_write_items(TransactItems=ledger_items(table, wallet_id, amount, request_id))
            return "applied"
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "TransactionCanceledException":
                reasons = [reason["Code"] for reason in error.response["CancellationReasons"]]
                if "ConditionalCheckFailed" in reasons:
                    return "already applied"
                raise
            if code not in RESEND or attempt == ATTEMPTS:
                raise
            db.clock.advance(min(0.025 * 2 ** attempt, 20))
''',
    "a conflict is never resent": SOLUTION.replace(
        'RESEND_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}',
        'RESEND_REASONS = {"ThrottlingError", "ProvisionedThroughputExceeded"}'),
    "every cancellation is already applied": SOLUTION.replace(
        '                wallet, marker = (reason["Code"] for reason in error.response["CancellationReasons"])\n',
        '                return "already applied"\n                wallet, marker = (reason["Code"] for reason in '
        'error.response["CancellationReasons"])\n'),
    "the slots swapped": SOLUTION.replace("wallet, marker = (reason", "marker, wallet = (reason").replace(
        '(wallet, marker) == ("None", "ConditionalCheckFailed")',
        '(marker, wallet) == ("None", "ConditionalCheckFailed")'),
    "resends without end": SOLUTION.replace("            if not resend or attempt == ATTEMPTS:\n",
                                            "            if not resend:\n").replace(
        "    for attempt in range(1, ATTEMPTS + 1):", "    for attempt in range(1, 1000):"),
    "resends at the same instant (no back-off)": SOLUTION.replace(
        "            db.clock.advance(min(0.025 * 2 ** attempt, 20))\n", "            continue\n"),
    "every error resent, a ValidationException too": SOLUTION.replace(
        "                resend = code in RESEND\n", "                resend = True\n"),
    "an off-by-one: the last attempt answered success": SOLUTION.replace(
        "            if not resend or attempt == ATTEMPTS:\n                raise\n",
        "            if not resend:\n                raise\n            if attempt == ATTEMPTS:\n"
        "                return \"applied\"\n"),
    "a 500 read as nothing written (never resent)": SOLUTION.replace(
        '"RequestLimitExceeded", "TransactionInProgressException", "InternalServerError", "ServiceUnavailable"}',
        '"RequestLimitExceeded", "TransactionInProgressException", "ServiceUnavailable"}'),
    "a missing wallet answered already applied": SOLUTION.replace(
        "                    raise WalletNotFound(wallet_id) from None\n",
        "                    return \"already applied\"\n"),
    "a new request ID for each attempt": SOLUTION.replace(
        "ledger_items(table, wallet_id, amount, request_id)",
        "ledger_items(table, wallet_id, amount, f'{request_id}-{attempt}')"),
    "a broad except": SOLUTION.replace("        except ClientError as error:\n",
                                       "        except Exception:\n            return \"already applied\"\n"
                                       "        except ClientError as error:\n"),
}

RIGHT = {
    "reasons by position, a for-else of resends": '''
ATTEMPTS = 4
WROTE_NOTHING = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "None"}
RESEND_CODES = {"ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError",
                "TransactionInProgressException", "TransactionConflictException", "RequestLimitExceeded"}


def my_pay(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    for attempt in range(ATTEMPTS):
        if attempt:
            db.clock.advance(0.1 * 2 ** attempt)
        try:
            table.meta.client.transact_write_items(TransactItems=ledger_items(table, wallet_id, amount, request_id))
            return "applied"
        except ClientError as error:
            last = error
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                if error.response["Error"]["Code"] in RESEND_CODES:
                    continue
                raise
            wallet, marker = [r.get("Code", "None") for r in error.response["CancellationReasons"]]
            if wallet == "ConditionalCheckFailed":
                raise WalletNotFound(wallet_id) from None
            if wallet == "None" and marker == "ConditionalCheckFailed":
                return "already applied"
            if not {wallet, marker} <= WROTE_NOTHING:
                raise
    raise last
''',
    "a whitelist of what wrote nothing, and tenacity-free": '''
ATTEMPTS = 4


def my_pay(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    safe_codes = {"ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError",
                  "TransactionInProgressException", "TransactionConflictException", "RequestLimitExceeded"}
    safe_reasons = {"None", "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
    sends = 0
    while True:
        sends += 1
        try:
            table.meta.client.transact_write_items(TransactItems=ledger_items(table, wallet_id, amount, request_id))
        except ClientError as error:
            code = error.response["Error"]["Code"]
            reasons = [r.get("Code", "None") for r in error.response.get("CancellationReasons", [])]
            if reasons and reasons[0] == "ConditionalCheckFailed":
                raise WalletNotFound(wallet_id) from None
            if reasons == ["None", "ConditionalCheckFailed"]:
                return "already applied"
            retry = set(reasons) <= safe_reasons if reasons else code in safe_codes
            if not retry or sends >= ATTEMPTS:
                raise
            db.clock.advance(0.05 * sends)
            continue
        return "applied"
''',
}
