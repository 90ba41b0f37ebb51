"""Learners' answers to 03's *Your turn*: `my_debit(table, wallet_id, amount, request_id)`.

The format: tests/test_learners.py. "applied", or "already applied" for a request ID the wallet already carries;
WalletNotFound for a wallet that does not exist; the check and the debit one conditional write.
"""

SOLUTION = '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(
            Key={"pk": wallet_id},
            UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
            ConditionExpression="attribute_exists(balance) AND "
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
        return "already applied"
'''

CONDITION = ('"attribute_exists(balance) AND "\n                                '
             '"(attribute_not_exists(last_request_id) OR last_request_id <> :rid)"')

WRONG = {
    "read, then debit and stamp in two writes (the starter)": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    wallet = table.get_item(Key={"pk": wallet_id}, ConsistentRead=True)["Item"]
    if wallet.get("last_request_id") == request_id:
        return "already applied"
    table.update_item(Key={"pk": wallet_id}, UpdateExpression="SET balance = balance - :amount",
                      ExpressionAttributeValues={":amount": amount})
    table.update_item(Key={"pk": wallet_id}, UpdateExpression="SET last_request_id = :rid",
                      ExpressionAttributeValues={":rid": request_id})
    return "applied"
''',
    "read, then one write that debits and stamps": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    wallet = table.get_item(Key={"pk": wallet_id}, ConsistentRead=True).get("Item")
    if wallet is None:
        raise WalletNotFound(wallet_id)
    if wallet.get("last_request_id") == request_id:
        return "already applied"
    table.update_item(Key={"pk": wallet_id},
                      UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
                      ExpressionAttributeValues={":amount": amount, ":rid": request_id})
    return "applied"
''',
    "the condition on the debit, the stamp in a second write": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(Key={"pk": wallet_id}, UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance) AND "
                                              "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
                          ExpressionAttributeValues={":amount": amount, ":rid": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise WalletNotFound(wallet_id) from None
        return "already applied"
    table.update_item(Key={"pk": wallet_id}, UpdateExpression="SET last_request_id = :rid",
                      ExpressionAttributeValues={":rid": request_id})
    return "applied"
''',
    "every failed condition is already applied (a missing wallet pays)": SOLUTION.replace(
        '            raise WalletNotFound(wallet_id) from None\n', '            pass\n'),
    "every error is already applied": SOLUTION.replace(
        '        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":\n            raise\n', ''),
    "a broad except": SOLUTION.replace("    except ClientError as error:\n",
                                       "    except Exception:\n        return \"already applied\"\n"
                                       "    except ClientError as error:\n"),
    "a new request ID made inside the debit": SOLUTION.replace(
        "    check_debit(wallet_id, amount, request_id)\n",
        "    check_debit(wallet_id, amount, request_id)\n    request_id = f\"{request_id}-{db.clock.now()}\"\n"),
    "no condition on the request ID": SOLUTION.replace(CONDITION, '"attribute_exists(balance)"'),
    "no validation of bad input": SOLUTION.replace("    check_debit(wallet_id, amount, request_id)\n", ""),
    "the debit answered before the write": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(Key={"pk": wallet_id},
                          UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
                          ConditionExpression="attribute_exists(balance) AND "
                                              "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
                          ExpressionAttributeValues={":amount": amount, ":rid": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException" and "Item" not in error.response:
            raise WalletNotFound(wallet_id) from None
    return "applied"
''',
}

RIGHT = {
    "the old item's stamp compared": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(Key={"pk": wallet_id},
                          UpdateExpression="SET balance = balance - :a, last_request_id = :r",
                          ConditionExpression="attribute_exists(pk) AND NOT last_request_id = :r",
                          ExpressionAttributeValues={":a": amount, ":r": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item", {})
        if not old:
            raise WalletNotFound(wallet_id) from None
        assert old["last_request_id"]["S"] == request_id
        return "already applied"
    return "applied"
''',
    "a marker and the debit in one transaction": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.meta.client.transact_write_items(TransactItems=[
            {"Update": {"TableName": table.name, "Key": {"pk": wallet_id},
                        "UpdateExpression": "SET balance = balance - :a",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":a": amount}}},
            {"Put": {"TableName": table.name, "Item": {"pk": f"request#{request_id}"},
                     "ConditionExpression": "attribute_not_exists(pk)"}}])
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        wallet, marker = [r.get("Code") for r in error.response["CancellationReasons"]]
        if wallet == "ConditionalCheckFailed":
            raise WalletNotFound(wallet_id) from None
        if marker == "ConditionalCheckFailed":
            return "already applied"
        raise
''',
}

BOTH_BACKENDS = True
