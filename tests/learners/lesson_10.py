"""Learners' answers to 10's *Your turn*: `my_deliver(conn, provider)`; the format: tests/test_learners.py.

Delivers one undelivered outbox row (charge the provider, record charge_id and delivered_at) and returns True,
or False when nothing is pending; `conn` is autocommit (the answer sends its own BEGIN / COMMIT).
"""

SOLUTION = '''
def my_deliver(conn, provider):
    try:
        conn.execute("BEGIN")
        row = conn.execute(
            "SELECT outbox_id, wallet_id, amount FROM outbox WHERE delivered_at IS NULL "
            "ORDER BY outbox_id LIMIT 1 FOR UPDATE SKIP LOCKED").fetchone()
        if row is None:
            conn.execute("COMMIT")
            return False
        outbox_id, wallet_id, amount = row
        charge = provider.charge(wallet_id, amount, idempotency_key=f"outbox-{outbox_id}")
        conn.execute("UPDATE outbox SET charge_id = %s, delivered_at = %s WHERE outbox_id = %s",
                     (charge.charge_id, now(), outbox_id))
        conn.execute("COMMIT")
        return True
    except Exception:
        if not conn.broken:
            conn.execute("ROLLBACK")
        raise
'''

WRONG = {
    "marked delivered first, charged after (the starter)": '''
def my_deliver(conn, provider):
    row = conn.execute(
        "UPDATE outbox SET delivered_at = %s WHERE outbox_id = (SELECT outbox_id FROM outbox "
        "WHERE delivered_at IS NULL ORDER BY outbox_id LIMIT 1 FOR UPDATE SKIP LOCKED) "
        "RETURNING outbox_id, wallet_id, amount", (now(),)).fetchone()
    if row is None:
        return False
    outbox_id, wallet_id, amount = row
    charge = provider.charge(wallet_id, amount, idempotency_key=f"outbox-{outbox_id}")
    conn.execute("UPDATE outbox SET charge_id = %s WHERE outbox_id = %s", (charge.charge_id, outbox_id))
    return True
''',
    "a new idempotency key for every attempt": SOLUTION.replace(
        'idempotency_key=f"outbox-{outbox_id}"', 'idempotency_key=f"outbox-{outbox_id}-{uuid.uuid4()}"').replace(
        "def my_deliver", "import uuid\n\n\ndef my_deliver"),
    "a provider failure swallowed, the row marked delivered": SOLUTION.replace(
        '        charge = provider.charge(wallet_id, amount, idempotency_key=f"outbox-{outbox_id}")\n',
        '        try:\n            charge = provider.charge(wallet_id, amount, idempotency_key=f"outbox-{outbox_id}")\n'
        '        except Exception:\n            charge = type("NoCharge", (), {"charge_id": None})()\n'),
    "never answers False (an empty outbox is True)": SOLUTION.replace(
        '            conn.execute("COMMIT")\n            return False\n', '            conn.execute("COMMIT")\n'
        '            return True\n'),
    "no lock: two workers charge one row with different keys": SOLUTION.replace(
        " FOR UPDATE SKIP LOCKED", "").replace(
        'idempotency_key=f"outbox-{outbox_id}"', 'idempotency_key=f"outbox-{outbox_id}-{id(conn)}"'),
    "the charge recorded, delivered_at never set": SOLUTION.replace(
        '"UPDATE outbox SET charge_id = %s, delivered_at = %s WHERE outbox_id = %s",\n'
        '                     (charge.charge_id, now(), outbox_id)',
        '"UPDATE outbox SET charge_id = %s WHERE outbox_id = %s",\n'
        '                     (charge.charge_id, outbox_id)'),
    "every row charged, only the first one marked": SOLUTION.replace(
        "WHERE outbox_id = %s\",\n                     (charge.charge_id, now(), outbox_id)",
        "WHERE outbox_id = %s\",\n                     (charge.charge_id, now(), 1)"),
    "the key made from the amount (two payments of one amount are one charge)": SOLUTION.replace(
        'idempotency_key=f"outbox-{outbox_id}"', 'idempotency_key=f"{wallet_id[:6]}-{amount % 20}"'),
    "True answered before the commit, and no commit": SOLUTION.replace(
        '        conn.execute("COMMIT")\n        return True\n', '        return True\n'),
}

RIGHT = {
    "BEGIN, charge, UPDATE ... RETURNING, COMMIT; ROLLBACK in finally": '''
def my_deliver(conn, provider):
    conn.execute("BEGIN")
    done = False
    try:
        row = conn.execute("SELECT outbox_id, wallet_id, amount FROM outbox WHERE delivered_at IS NULL "
                           "ORDER BY outbox_id FOR UPDATE SKIP LOCKED LIMIT 1").fetchone()
        if not row:
            conn.execute("COMMIT")
            done = True
            return False
        charge = provider.charge(row[1], row[2], idempotency_key="outbox-" + str(row[0]))
        conn.execute("UPDATE outbox SET charge_id = %s, delivered_at = %s WHERE outbox_id = %s RETURNING outbox_id",
                     (charge.charge_id, now(), row[0])).fetchone()
        conn.execute("COMMIT")
        done = True
        return True
    finally:
        if not done and not conn.broken:
            conn.execute("ROLLBACK")
''',
    "charge outside the transaction, then record, keyed by the row": '''
def my_deliver(conn, provider):
    with conn.transaction():
        row = conn.execute("SELECT outbox_id, wallet_id, amount FROM outbox WHERE delivered_at IS NULL "
                           "ORDER BY outbox_id LIMIT 1 FOR UPDATE SKIP LOCKED").fetchone()
        if row is None:
            return False
        outbox_id, wallet_id, amount = row
        charge = provider.charge(wallet_id, amount, idempotency_key="outbox-%d" % outbox_id)
        conn.execute("UPDATE outbox SET charge_id = %s, delivered_at = %s WHERE outbox_id = %s",
                     (charge.charge_id, now(), outbox_id))
    return True
''',
}

SAYS = {   # what the NOT YET must say (issue 34: the mistake named in the lesson's words)
    "the charge recorded, delivered_at never set": "still have no delivered_at",
}
