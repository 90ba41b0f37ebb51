"""Learners' answers to 00's *Your turn*: `my_handler(table, request)`; the format: tests/test_learners.py.

A request is ``{"wallet": ..., "amount": ..., "payment_id": ...}``, the payment ID made once per payment by the
caller; the handler answers ``{"status": "paid"}`` once the payment is made (now or by an earlier copy).
"""

SOLUTION = '''
from helpers import WalletNotFound


def my_handler(table, request):
    check_debit(request["wallet"], request["amount"], request["payment_id"])
    try:
        table.update_item(
            Key={"pk": request["wallet"]},
            UpdateExpression="SET balance = balance - :amount, last_payment_id = :pid",
            ConditionExpression="attribute_exists(balance) AND "
                                "(attribute_not_exists(last_payment_id) OR last_payment_id <> :pid)",
            ExpressionAttributeValues={":amount": request["amount"], ":pid": request["payment_id"]},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise WalletNotFound(request["wallet"]) from None
    return {"status": "paid"}
'''

WRONG = {
    "a set in memory (the starter)": '''
seen_payments = set()


def my_handler(table, request):
    check_debit(request["wallet"], request["amount"], request["payment_id"])
    if request["payment_id"] in seen_payments:
        return {"status": "paid"}
    table.update_item(Key={"pk": request["wallet"]}, UpdateExpression="SET balance = balance - :amount",
                      ConditionExpression="attribute_exists(balance)",
                      ExpressionAttributeValues={":amount": request["amount"]})
    seen_payments.add(request["payment_id"])
    return {"status": "paid"}
''',
    "read the wallet, then debit (check-then-write)": '''
from helpers import WalletNotFound


def my_handler(table, request):
    check_debit(request["wallet"], request["amount"], request["payment_id"])
    wallet = table.get_item(Key={"pk": request["wallet"]}, ConsistentRead=True).get("Item")
    if wallet is None:
        raise WalletNotFound(request["wallet"])
    if wallet.get("last_payment_id") == request["payment_id"]:
        return {"status": "paid"}
    table.update_item(Key={"pk": request["wallet"]},
                      UpdateExpression="SET balance = balance - :amount, last_payment_id = :pid",
                      ExpressionAttributeValues={":amount": request["amount"], ":pid": request["payment_id"]})
    return {"status": "paid"}
''',
    "the debit and the stamp in two writes": '''
def my_handler(table, request):
    check_debit(request["wallet"], request["amount"], request["payment_id"])
    try:
        table.update_item(Key={"pk": request["wallet"]}, UpdateExpression="SET balance = balance - :amount",
                          ConditionExpression="attribute_exists(balance) AND "
                                              "(attribute_not_exists(last_payment_id) OR last_payment_id <> :pid)",
                          ExpressionAttributeValues={":amount": request["amount"], ":pid": request["payment_id"]})
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return {"status": "paid"}
    table.update_item(Key={"pk": request["wallet"]}, UpdateExpression="SET last_payment_id = :pid",
                      ExpressionAttributeValues={":pid": request["payment_id"]})
    return {"status": "paid"}
''',
    "no attribute_exists(balance): a missing wallet is not WalletNotFound": SOLUTION.replace(
        '"attribute_exists(balance) AND "\n                                "(attribute_not_exists(last_payment_id) OR '
        'last_payment_id <> :pid)"', '"last_payment_id <> :pid"'),
    "a missing wallet answered paid": SOLUTION.replace(
        '            raise WalletNotFound(request["wallet"]) from None\n', '            pass\n'),
    "every error answered paid": SOLUTION.replace(
        '        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":\n            raise\n', ''),
    "a broad except": SOLUTION.replace("    except ClientError as error:\n",
                                       "    except Exception:\n        return {\"status\": \"paid\"}\n"
                                       "    except ClientError as error:\n"),
    "a payment ID made inside the handler": SOLUTION.replace("from helpers", "import uuid\n\nfrom helpers").replace(
        'check_debit(request["wallet"], request["amount"], request["payment_id"])',
        'check_debit(request["wallet"], request["amount"], request["payment_id"])\n'
        '    request = {**request, "payment_id": str(uuid.uuid4())}'),
    "no validation of bad input": SOLUTION.replace(
        '    check_debit(request["wallet"], request["amount"], request["payment_id"])\n', ''),
    "no condition on the payment ID": SOLUTION.replace(
        '"attribute_exists(balance) AND "\n                                "(attribute_not_exists(last_payment_id) OR '
        'last_payment_id <> :pid)"', '"attribute_exists(balance)"'),
}

RIGHT = {
    "a marker per payment, in a transaction": '''
from helpers import WalletNotFound


def my_handler(table, request):
    wallet, amount, payment_id = request["wallet"], request["amount"], request["payment_id"]
    check_debit(wallet, amount, payment_id)
    try:
        table.meta.client.transact_write_items(TransactItems=[
            {"Update": {"TableName": table.name, "Key": {"pk": wallet},
                        "UpdateExpression": "SET balance = balance - :a",
                        "ConditionExpression": "attribute_exists(balance)",
                        "ExpressionAttributeValues": {":a": amount}}},
            {"Put": {"TableName": table.name, "Item": {"pk": "payment#" + payment_id},
                     "ConditionExpression": "attribute_not_exists(pk)"}},
        ])
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = [r.get("Code") for r in error.response["CancellationReasons"]]
        if reasons[0] == "ConditionalCheckFailed":
            raise WalletNotFound(wallet) from None
        if reasons[1] != "ConditionalCheckFailed":
            raise
    return {"status": "paid"}
''',
    "the stamp compared after a failed condition": '''
from helpers import WalletNotFound


def my_handler(table, request):
    check_debit(request["wallet"], request["amount"], request["payment_id"])
    try:
        table.update_item(Key={"pk": request["wallet"]},
                          UpdateExpression="SET balance = balance - :amount, last_payment_id = :pid",
                          ConditionExpression="attribute_exists(pk) AND NOT last_payment_id = :pid",
                          ExpressionAttributeValues={":amount": request["amount"], ":pid": request["payment_id"]},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return {"status": "paid"}
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item")
        if old is None:
            raise WalletNotFound(request["wallet"]) from None
        if old.get("last_payment_id", {}).get("S") != request["payment_id"]:
            raise RuntimeError("the condition failed for another reason") from None
        return {"status": "paid"}
''',
}
