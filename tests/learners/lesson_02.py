"""Learners' answers to 02's *Your turn*: `my_sign_up(table, username, email)` (format: tests/test_learners.py).

Creates ``{"pk": username, "email": email}`` once: "created", "already created" for a retry of the same sign-up,
UsernameTaken (the exercise cell's class) for someone else's username, writing nothing.
"""

SOLUTION = '''
def my_sign_up(table, username, email):
    for name, value in (("username", username), ("email", email)):
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{name} must be a non-empty string, got {value!r}")
    try:
        table.put_item(
            Item={"pk": username, "email": email},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return "created"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if TypeDeserializer().deserialize(error.response["Item"]["email"]) != email:
            raise UsernameTaken(f"{username!r} belongs to someone else; nothing was written") from None
        return "already created"
'''

READ_THEN_PUT = '''
def my_sign_up(table, username, email):
    for name, value in (("username", username), ("email", email)):
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{name} must be a non-empty string, got {value!r}")
    existing = table.get_item(Key={"pk": username}, ConsistentRead=True).get("Item")
    if existing is not None:
        if existing["email"] != email:
            raise UsernameTaken(username)
        return "already created"
    table.put_item(Item={"pk": username, "email": email})
    return "created"
'''

WRONG = {
    "read then put": READ_THEN_PUT,
    "ReturnValues, where ALL_OLD acts on success only (the starter)": '''
def my_sign_up(table, username, email):
    for name, value in (("username", username), ("email", email)):
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{name} must be a non-empty string, got {value!r}")
    try:
        table.put_item(Item={"pk": username, "email": email}, ConditionExpression="attribute_not_exists(pk)",
                       ReturnValues="ALL_OLD")
        return "created"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item")
        if old and TypeDeserializer().deserialize(old["email"]) != email:
            raise UsernameTaken(username) from None
        return "already created"
''',
    "no condition: a put overwrites": SOLUTION.replace(
        '            ConditionExpression="attribute_not_exists(pk)",\n', ''),
    "every failed condition is already created": SOLUTION.replace(
        'if TypeDeserializer().deserialize(error.response["Item"]["email"]) != email:', 'if False:'),
    "every failed condition is taken (a retry refused)": SOLUTION.replace(
        'if TypeDeserializer().deserialize(error.response["Item"]["email"]) != email:', 'if True:'),
    "ValueError instead of UsernameTaken": SOLUTION.replace(
        "raise UsernameTaken(f", "raise ValueError(f"),
    "a broad except: any error is already created": SOLUTION.replace(
        "    except ClientError as error:\n", "    except Exception as error:\n        return \"already created\"\n"
        "    except ClientError as error:\n"),
    "a throttle or a 500 read as taken": SOLUTION.replace(
        '        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":\n            raise\n'
        '        if TypeDeserializer().deserialize(error.response["Item"]["email"]) != email:',
        '        if error.response.get("Item") is None or '
        'TypeDeserializer().deserialize(error.response["Item"]["email"]) != email:'),
    "no validation of bad input": SOLUTION.replace(
        '    for name, value in (("username", username), ("email", email)):\n'
        '        if not isinstance(value, str) or not value.strip():\n'
        '            raise BadInput(f"{name} must be a non-empty string, got {value!r}")\n', ''),
    "the wrong attribute in the condition": SOLUTION.replace(
        '"attribute_not_exists(pk)"', '"attribute_not_exists(username)"'),
    "the email compared without deserializing": SOLUTION.replace(
        'TypeDeserializer().deserialize(error.response["Item"]["email"])', 'error.response["Item"]["email"]'),
}

RIGHT = {
    "a condition on the email too, then ALL_OLD": '''
def my_sign_up(table, username, email):
    if not (isinstance(username, str) and username.strip() and isinstance(email, str) and email.strip()):
        raise BadInput("username and email must be non-empty strings")
    try:
        table.put_item(Item={"pk": username, "email": email},
                       ConditionExpression="attribute_not_exists(pk) OR email = :email",
                       ExpressionAttributeValues={":email": email},
                       ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            raise UsernameTaken(username) from None
        raise
    return "created"
''',
    "the failed put, then the old item's email as a plain dict": '''
def my_sign_up(table, username, email):
    for value in (username, email):
        if type(value) is not str or value.strip() == "":
            raise BadInput(f"bad value {value!r}")
    try:
        table.put_item(Item={"pk": username, "email": email}, ConditionExpression="attribute_not_exists(pk)",
                       ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return "created"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = {k: TypeDeserializer().deserialize(v) for k, v in error.response["Item"].items()}
    if old.get("email") == email:
        return "already created"
    raise UsernameTaken(f"{username} is taken")
''',
}

BOTH_BACKENDS = True

SAYS = {   # what the NOT YET must say (issue 34: the mistake named in the lesson's words)
    "read then put": "just before your sign-up's write reached the table",
    "ValueError instead of UsernameTaken": "expected UsernameTaken, your sign-up raised ValueError",
}
