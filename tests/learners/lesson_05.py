"""Learners' answers to 05's *Your turn*: `my_debit(table, wallet_id, amount, request_id)` with a marker per request.

The format: tests/test_learners.py. The wallet is ``pk=wallet_id, sk="wallet"``; markers may live beside it.
"""

SOLUTION = '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.meta.client.transact_write_items(TransactItems=[
            {"Put": {"TableName": table.name,
                     "Item": {"pk": wallet_id, "sk": "req#" + request_id, "amount": amount},
                     "ConditionExpression": "attribute_not_exists(sk)"}},
            {"Update": {"TableName": table.name, "Key": {"pk": wallet_id, "sk": "wallet"},
                        "UpdateExpression": "SET balance = balance - :amount",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":amount": amount}}},
        ])
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        marker, wallet = (reason["Code"] for reason in error.response["CancellationReasons"])
        if wallet == "ConditionalCheckFailed":
            raise WalletNotFound(wallet_id) from None
        if marker == "ConditionalCheckFailed":
            return "already applied"
        raise
'''

REASONS = '''        marker, wallet = (reason["Code"] for reason in error.response["CancellationReasons"])
        if wallet == "ConditionalCheckFailed":
            raise WalletNotFound(wallet_id) from None
        if marker == "ConditionalCheckFailed":
            return "already applied"
        raise
'''

WRONG = {
    "the marker, then the debit, in two writes (the starter)": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.put_item(Item={"pk": wallet_id, "sk": "req#" + request_id, "amount": amount},
                       ConditionExpression="attribute_not_exists(sk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return "already applied"
    try:
        table.update_item(Key={"pk": wallet_id, "sk": "wallet"}, UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance)",
                          ExpressionAttributeValues={":amount": amount})
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise WalletNotFound(wallet_id) from None
    return "applied"
''',
    "the debit, then the marker, in two writes": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    marker = table.get_item(Key={"pk": wallet_id, "sk": "req#" + request_id}, ConsistentRead=True).get("Item")
    if marker is not None:
        return "already applied"
    try:
        table.update_item(Key={"pk": wallet_id, "sk": "wallet"}, UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance)",
                          ExpressionAttributeValues={":amount": amount})
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise WalletNotFound(wallet_id) from None
    table.put_item(Item={"pk": wallet_id, "sk": "req#" + request_id, "amount": amount})
    return "applied"
''',
    "last_request_id (04's debit): ABA": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    try:
        table.update_item(Key={"pk": wallet_id, "sk": "wallet"},
                          UpdateExpression="SET balance = balance - :amount, last_request_id = :rid",
                          ConditionExpression="attribute_exists(balance) AND "
                                              "(attribute_not_exists(last_request_id) OR last_request_id <> :rid)",
                          ExpressionAttributeValues={":amount": amount, ":rid": request_id},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise WalletNotFound(wallet_id) from None
        return "already applied"
''',
    "every cancellation is already applied": SOLUTION.replace(REASONS, '        return "already applied"\n'),
    "the reasons read by membership": SOLUTION.replace(REASONS, (
        '        reasons = [reason["Code"] for reason in error.response["CancellationReasons"]]\n'
        '        if "ConditionalCheckFailed" in reasons:\n            return "already applied"\n        raise\n')),
    "the slots swapped": SOLUTION.replace(
        'marker, wallet = (reason["Code"]', 'wallet, marker = (reason["Code"]'),
    "a conflict read as already applied": SOLUTION.replace(
        '        if marker == "ConditionalCheckFailed":\n            return "already applied"\n        raise\n',
        '        return "already applied"\n'),
    "no condition on the marker": SOLUTION.replace(
        ',\n                     "ConditionExpression": "attribute_not_exists(sk)"}}', '}}'),
    "the marker keyed by the amount, not the request": SOLUTION.replace(
        '"sk": "req#" + request_id', '"sk": f"req#{amount}"'),
    "a broad except": SOLUTION.replace("    except ClientError as error:\n",
                                       "    except Exception:\n        return \"already applied\"\n"
                                       "    except ClientError as error:\n"),
    "no validation of bad input": SOLUTION.replace("    check_debit(wallet_id, amount, request_id)\n", ""),
}

RIGHT = {
    "the debit first, the marker second, the reasons by position": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    items = [
        {"Update": {"TableName": table.name, "Key": {"pk": wallet_id, "sk": "wallet"},
                    "UpdateExpression": "SET balance = balance - :a", "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeValues": {":a": amount}}},
        {"Put": {"TableName": table.name, "Item": {"pk": wallet_id, "sk": f"request#{request_id}"},
                 "ConditionExpression": "attribute_not_exists(pk)"}},
    ]
    try:
        table.meta.client.transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] == "TransactionCanceledException":
            reasons = [r.get("Code", "None") for r in error.response.get("CancellationReasons", [])]
            if reasons == ["None", "ConditionalCheckFailed"]:
                return "already applied"
            if reasons[0] == "ConditionalCheckFailed":
                raise WalletNotFound(wallet_id) from None
        raise
    return "applied"
''',
    "the marker read back after a cancellation": '''
def my_debit(table, wallet_id, amount, request_id):
    check_debit(wallet_id, amount, request_id)
    client = table.meta.client
    try:
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": table.name, "Item": {"pk": wallet_id, "sk": "req#" + request_id},
                     "ConditionExpression": "attribute_not_exists(sk)"}},
            {"Update": {"TableName": table.name, "Key": {"pk": wallet_id, "sk": "wallet"},
                        "UpdateExpression": "SET balance = balance - :amount",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":amount": amount}}}])
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        codes = [reason.get("Code") for reason in error.response["CancellationReasons"]]
        if codes[1] == "ConditionalCheckFailed":
            raise WalletNotFound(wallet_id) from None
        if codes[0] != "ConditionalCheckFailed":
            raise
    return "already applied"
''',
}
