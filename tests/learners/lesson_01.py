"""Learners' answers to 01's *Your turn*: `my_set_status(table, order_id, status, seq)`.

The format: tests/test_learners.py.

Every order starts placed (seq 1); a newer seq applies, a copy of the applied one is "already applied", an older
one raises StaleUpdate and writes nothing.
"""

SOLUTION = '''
def my_set_status(table, order_id, status, seq):
    if status not in STATUSES or not isinstance(seq, int) or seq < 1:
        raise BadInput(f"need a status from {STATUSES} and a whole seq >= 1, got {status!r}, {seq!r}")
    try:
        table.update_item(
            Key={"pk": order_id},
            UpdateExpression="SET #status = :status, seq = :seq",
            ConditionExpression="seq < :seq",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":status": status, ":seq": seq},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "Item" not in error.response:
            raise LookupError(f"order {order_id!r} does not exist") from None
        current = int(error.response["Item"]["seq"]["N"])
        if current == seq:
            return "already applied"
        raise StaleUpdate(f"order {order_id!r} is at seq {current}; refusing seq {seq}") from None
'''

READ_THEN_UPDATE = '''
def my_set_status(table, order_id, status, seq):
    if status not in STATUSES or not isinstance(seq, int) or seq < 1:
        raise BadInput(f"bad update {status!r} {seq!r}")
    order = table.get_item(Key={"pk": order_id}, ConsistentRead=True).get("Item")
    if order is None:
        raise LookupError(order_id)
    if order["seq"] == seq:
        return "already applied"
    if order["seq"] > seq:
        raise StaleUpdate(f"the order is at seq {order['seq']}")
    table.update_item(Key={"pk": order_id}, UpdateExpression="SET #status = :status, seq = :seq",
                      ExpressionAttributeNames={"#status": "status"},
                      ExpressionAttributeValues={":status": status, ":seq": seq})
    return "applied"
'''

WRONG = {
    "different is not newer (the starter's seq <> :seq)": SOLUTION.replace('"seq < :seq"', '"seq <> :seq"'),
    "every failed condition is already applied": SOLUTION.replace(
        'current = int(error.response["Item"]["seq"]["N"])', 'current = seq'),
    "read then update": READ_THEN_UPDATE,
    "off by one: seq 0 accepted": SOLUTION.replace("seq < 1:", "seq < 0:"),
    "the comparison the wrong way round": SOLUTION.replace('"seq < :seq"', '"seq > :seq"'),
    "no condition at all": SOLUTION.replace('            ConditionExpression="seq < :seq",\n', ''),
    "a stale update answered as success": SOLUTION.replace(
        'raise StaleUpdate(f"order {order_id!r} is at seq {current}; refusing seq {seq}") from None',
        'return "stale, ignored"'),
    "a broad except: every error is already applied": SOLUTION.replace(
        "    except ClientError as error:\n        if error.response",
        "    except Exception:\n        return \"already applied\"\n    except ClientError as error:\n"
        "        if error.response"),
    "ALL_OLD asked with ReturnValues, where it acts on success only": SOLUTION.replace(
        'ReturnValuesOnConditionCheckFailure="ALL_OLD"', 'ReturnValues="ALL_OLD"'),
    "no validation of bad input": SOLUTION.replace(
        '    if status not in STATUSES or not isinstance(seq, int) or seq < 1:\n'
        '        raise BadInput(f"need a status from {STATUSES} and a whole seq >= 1, got {status!r}, {seq!r}")\n', ''),
    "every error without an item read as a stale update (a 500 that applied too)": SOLUTION.replace(
        '        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":\n            raise\n'
        '        if "Item" not in error.response:\n'
        '            raise LookupError(f"order {order_id!r} does not exist") from None',
        '        if "Item" not in error.response:\n            raise StaleUpdate("refused") from None'),
    "an update for an order that does not exist creates it": SOLUTION.replace(
        '"seq < :seq"', '"attribute_not_exists(seq) OR seq < :seq"'),
    "the status compared, not the seq": SOLUTION.replace('"seq < :seq"', '"#status <> :status"'),
}

RIGHT = {
    "a read for the answer, the condition on the write": '''
def my_set_status(table, order_id, status, seq):
    if status not in STATUSES or type(seq) is not int or seq < 1:
        raise BadInput(f"bad update {status!r} {seq!r}")
    try:
        table.update_item(Key={"pk": order_id}, UpdateExpression="SET #s = :s, seq = :n",
                          ConditionExpression="attribute_exists(pk) AND seq < :n",
                          ExpressionAttributeNames={"#s": "status"},
                          ExpressionAttributeValues={":s": status, ":n": seq})
        return "applied"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
    order = table.get_item(Key={"pk": order_id}, ConsistentRead=True).get("Item")
    if order is None:
        raise LookupError(order_id)
    if order["seq"] == seq and order["status"] == status:
        return "already applied"
    raise StaleUpdate(f"{order_id} is at seq {order['seq']}")
''',
    "the old item deserialized whole": '''
def my_set_status(table, order_id, status, seq):
    if status not in STATUSES or not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise BadInput(f"need a status from {STATUSES} and a whole seq >= 1")
    try:
        table.update_item(Key={"pk": order_id}, UpdateExpression="SET #status = :status, seq = :seq",
                          ConditionExpression="attribute_exists(pk) AND seq < :seq",
                          ExpressionAttributeNames={"#status": "status"},
                          ExpressionAttributeValues={":status": status, ":seq": seq},
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item")
        if not old:
            raise LookupError(order_id) from None
        if int(old["seq"]["N"]) < seq:
            raise RuntimeError("cannot happen")
        if int(old["seq"]["N"]) > seq:
            raise StaleUpdate(f"seq {seq} is older than {old['seq']['N']}") from None
        return "already applied"
    return "applied"
''',
}

BOTH_BACKENDS = True

SAYS = {   # what the NOT YET must say (issue 34: the mistake named in the lesson's words)
    "read then update": "just before your write reached the table",
    "an update for an order that does not exist creates it": "an order that does not exist",
}
