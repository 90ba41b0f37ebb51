"""Learners' answers to 12's *Your turn*: `my_pay(send, order, saved, budget, rng)` (format: tests/test_learners.py).

A caller written as a generator (it sleeps with `yield seconds`): the key made once per order and saved before the
first attempt, full jitter between attempts, at most MAX_ATTEMPTS attempts, a retry only when the budget allows,
"gave up" when it stops without an answer, a refusal raised at once.
"""

SOLUTION = '''
def my_pay(send, order, saved, budget, rng):
    if order not in saved:
        saved[order] = str(uuid.uuid4())
    key = saved[order]
    budget.new_request()
    for attempt in range(MAX_ATTEMPTS):
        try:
            return send(key)
        except ReadTimeoutError:
            pass
        except ClientError as error:
            if error.response["Error"]["Code"] not in RETRYABLE:
                raise
        if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():
            return "gave up"
        yield rng.uniform(0, min(CAP, BASE * 2 ** attempt))
'''

WRONG = {
    "a new key per attempt": SOLUTION.replace(
        "            return send(key)", "            return send(str(uuid.uuid4()))"),
    "a key per call, not saved (the starter's)": SOLUTION.replace(
        '''    if order not in saved:
        saved[order] = str(uuid.uuid4())
    key = saved[order]''', "    key = str(uuid.uuid4())"),
    "the saved key read but never stored": SOLUTION.replace(
        '''    if order not in saved:
        saved[order] = str(uuid.uuid4())
    key = saved[order]''', "    key = saved.get(order) or str(uuid.uuid4())"),
    "the key saved after the first attempt": SOLUTION.replace(
        '''    if order not in saved:
        saved[order] = str(uuid.uuid4())
    key = saved[order]''', "    key = saved.get(order, str(uuid.uuid4()))").replace(
        "            return send(key)", '''            result = send(key)
            saved[order] = key
            return result''').replace(
        "        except ReadTimeoutError:\n            pass",
        "        except ReadTimeoutError:\n            saved[order] = key"),
    "exponential backoff without jitter": SOLUTION.replace(
        "yield rng.uniform(0, min(CAP, BASE * 2 ** attempt))", "yield min(CAP, BASE * 2 ** attempt)"),
    "a jitter wider than the bound": SOLUTION.replace(
        "yield rng.uniform(0, min(CAP, BASE * 2 ** attempt))", "yield rng.uniform(0, CAP)"),
    "the budget never asked": SOLUTION.replace(
        "if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():", "if attempt + 1 == MAX_ATTEMPTS:"),
    "the budget asked before the first attempt too": SOLUTION.replace(
        '''    budget.new_request()
    for attempt in range(MAX_ATTEMPTS):
        try:''', '''    budget.new_request()
    for attempt in range(MAX_ATTEMPTS):
        if not budget.may_retry():
            return "gave up"
        try:'''),
    "retries until it works": SOLUTION.replace("for attempt in range(MAX_ATTEMPTS):", "for attempt in range(10):")
                                      .replace("attempt + 1 == MAX_ATTEMPTS", "attempt + 1 == 10"),
    "retries a refusal too": SOLUTION.replace(
        '''        except ClientError as error:
            if error.response["Error"]["Code"] not in RETRYABLE:
                raise''', '''        except Exception:
            pass'''),
    "answers 'gave up' for a refusal": SOLUTION.replace(
        '''            if error.response["Error"]["Code"] not in RETRYABLE:
                raise''', '''            if error.response["Error"]["Code"] not in RETRYABLE:
                return "gave up"
        except (ValueError, LookupError):
            return "gave up"'''),
    "gives up on the first error": SOLUTION.replace(
        '''        except ReadTimeoutError:
            pass''', '''        except ReadTimeoutError:
            return "gave up"''').replace(
        '''            if error.response["Error"]["Code"] not in RETRYABLE:
                raise''', '''            return "gave up"'''),
    "one key saved for every order": SOLUTION.replace(
        '''    if order not in saved:
        saved[order] = str(uuid.uuid4())
    key = saved[order]''', '''    if "key" not in saved:
        saved["key"] = str(uuid.uuid4())
    key = saved["key"]'''),
    "never calls budget.new_request()": SOLUTION.replace("    budget.new_request()\n", ""),
    "budget.new_request() on every attempt": SOLUTION.replace(
        "    budget.new_request()\n    for attempt in range(MAX_ATTEMPTS):\n",
        "    for attempt in range(MAX_ATTEMPTS):\n        budget.new_request()\n"),
    "asks the budget and ignores its answer": SOLUTION.replace(
        "if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():",
        "budget.may_retry()\n        if attempt + 1 == MAX_ATTEMPTS:"),
    "'already applied' taken for a failure": SOLUTION.replace(
        "            return send(key)", '''            if send(key) == "applied":
                return "applied"'''),
    "full jitter's exponent counted from 1": SOLUTION.replace(
        "BASE * 2 ** attempt))", "BASE * 2 ** (attempt + 1)))"),
    "MAX_ATTEMPTS retries: one attempt too many": SOLUTION.replace(
        "for attempt in range(MAX_ATTEMPTS):", "for attempt in range(MAX_ATTEMPTS + 1):").replace(
        "attempt + 1 == MAX_ATTEMPTS", "attempt == MAX_ATTEMPTS"),
    "no yield: sleeps with time.sleep": '''
import time

def my_pay(send, order, saved, budget, rng):
    key = saved.setdefault(order, str(uuid.uuid4()))
    for attempt in range(MAX_ATTEMPTS):
        try:
            return send(key)
        except (ReadTimeoutError, ClientError):
            time.sleep(0)
    return "gave up"
''',
}

RIGHT = {
    "the solution": SOLUTION,
    "setdefault and equal jitter": '''
def my_pay(send, order, saved, budget, rng):
    key = saved.setdefault(order, str(uuid.uuid4()))
    budget.new_request()
    attempt = 0
    while True:
        try:
            return send(key)
        except (ReadTimeoutError, ClientError) as error:
            if isinstance(error, ClientError) and error.response["Error"]["Code"] not in RETRYABLE:
                raise
        attempt += 1
        if attempt == MAX_ATTEMPTS or not budget.may_retry():
            return "gave up"
        bound = min(CAP, BASE * 2 ** (attempt - 1))
        yield bound / 2 + rng.uniform(0, bound / 2)
''',
    "raises the last error instead of 'gave up'": SOLUTION.replace(
        '''        except ClientError as error:
            if error.response["Error"]["Code"] not in RETRYABLE:
                raise
        if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():
            return "gave up"''', '''        except ClientError as error:
            if error.response["Error"]["Code"] not in RETRYABLE:
                raise
            if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():
                raise
            yield rng.uniform(0, min(CAP, BASE * 2 ** attempt))
            continue
        if attempt + 1 == MAX_ATTEMPTS or not budget.may_retry():
            return "gave up"'''),
}

# What the NOT YET must say to the two clients issue 47 found passing (tests/test_learners.py checks the words).
SAYS = {
    "one key saved for every order": "two orders from one phone",
    "never calls budget.new_request()": "with every tenth answer lost: your client gave up",
}
