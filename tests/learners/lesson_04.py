"""Learners' answers to 04's *Your turn*: `my_debit(table, wallet_id, amount, request_id)` with an overdraft guard.

The format: tests/test_learners.py. The wallet is ``pk=wallet_id, sk="wallet"``; answers "applied",
"already applied" or "insufficient funds" (nothing taken); WalletNotFound for a wallet that does not exist.
"""

SOLUTION = '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(
            Key={"pk": wallet_id, "sk": "wallet"},
            UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
            ConditionExpression="attribute_exists(balance) AND balance >= :amount AND "
                                "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
            ExpressionAttributeValues={":amount": amount, ":rid": request_id},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise WalletNotFound(wallet_id) from None
        old = {name: TypeDeserializer().deserialize(value) for name, value in error.response["Item"].items()}
        if old.get("last_request_id") == request_id:
            return "already applied"
        return "insufficient funds"
'''

DECIDE = ('        if old.get("last_request_id") == request_id:\n            return "already applied"\n'
          '        return "insufficient funds"\n')

WRONG = {
    "deciding by the balance (the starter)": SOLUTION.replace(DECIDE, (
        '        if old["balance"] < amount:\n            return "insufficient funds"\n'
        '        return "already applied"\n')),
    "every failed condition is insufficient funds": SOLUTION.replace(DECIDE, '        return "insufficient funds"\n'),
    "every failed condition is already applied": SOLUTION.replace(DECIDE, '        return "already applied"\n'),
    "no overdraft guard": SOLUTION.replace("balance >= :amount AND ", ""),
    "off by one: balance > :amount": SOLUTION.replace("balance >= :amount", "balance > :amount"),
    "old['last_request_id'] on a wallet no debit touched": SOLUTION.replace(
        'old.get("last_request_id")', 'old["last_request_id"]').replace(
        "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)", "last_request_id <> :rid"),
    "a read after the failed condition": SOLUTION.replace(
        '        old = {name: TypeDeserializer().deserialize(value) '
        'for name, value in error.response["Item"].items()}\n',
        '        old = table.get_item(Key={"pk": wallet_id, "sk": "wallet"}, ConsistentRead=True)["Item"]\n'
        '        if old["balance"] < amount:\n            return "insufficient funds"\n'),
    "every error is insufficient funds": SOLUTION.replace(
        '        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":\n            raise\n'
        '        if "Item" not in error.response:\n            raise WalletNotFound(wallet_id) from None\n',
        '        if "Item" not in error.response:\n            return "insufficient funds"\n'),
    "a missing wallet is insufficient funds": SOLUTION.replace(
        "            raise WalletNotFound(wallet_id) from None\n", '            return "insufficient funds"\n'),
    "check the balance first, then debit": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    wallet = table.get_item(Key={"pk": wallet_id, "sk": "wallet"}, ConsistentRead=True).get("Item")
    if wallet is None:
        raise WalletNotFound(wallet_id)
    if wallet.get("last_request_id") == request_id:
        return "already applied"
    if wallet["balance"] < amount:
        return "insufficient funds"
    table.update_item(Key={"pk": wallet_id, "sk": "wallet"},
                      UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
                      ExpressionAttributeValues={":amount": amount, ":rid": request_id})
    return "applied"
''',
}

RIGHT = {
    "the stamp read from DynamoDB's JSON": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(Key={"pk": wallet_id, "sk": "wallet"},
                          UpdateExpression="SET balance = balance - :a, last_request_id = :r",
                          ConditionExpression="attribute_exists(pk) AND :a <= balance AND NOT last_request_id = :r",
                          ExpressionAttributeValues={":a": amount, ":r": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = error.response.get("Item")
        if item is None:
            raise WalletNotFound(wallet_id) from None
        if item.get("last_request_id", {}).get("S") == request_id:
            return "already applied"
        return "insufficient funds"
    return "applied"
''',
    "the guard's two causes in two conditions, ALL_OLD for which": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    key = {"pk": wallet_id, "sk": "wallet"}
    try:
        table.update_item(Key=key, UpdateExpression="SET balance = balance - :a, last_request_id = :r",
                          ConditionExpression="attribute_exists(balance) AND "
                                              "(attribute_not_exists(last_request_id) OR last_request_id <> :r) "
                                              "AND balance >= :a",
                          ExpressionAttributeValues={":a": amount, ":r": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise WalletNotFound(wallet_id) from None
        stamp = TypeDeserializer().deserialize(error.response["Item"].get("last_request_id", {"NULL": True}))
        return "already applied" if stamp == request_id else "insufficient funds"
''',
}

BOTH_BACKENDS = True

SAYS = {   # what the NOT YET must say (issue 34: the mistake named in the lesson's words)
    "every failed condition is already applied": "should answer 'insufficient funds'; your debit answered",
    "old['last_request_id'] on a wallet no debit touched": "that no debit has touched yet",
    "check the balance first, then debit": "just before your debit's write reached the table",
}
