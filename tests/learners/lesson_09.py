"""Learners' answers to 09's *Your turn*: `my_pay(url, payment, api_key)`; the format: tests/test_learners.py.

POSTs `payment` to ``url + "/payments"`` with an `Idempotency-Key` (a quoted String: ``"<key>"``), one key per
payment; resends after a timeout, a 409 or a 503; raises on any other 4xx; returns the 201's JSON body.
"""

SOLUTION = '''
def my_pay(url, payment, api_key):
    key = str(keys())
    @tenacity.retry(retry=RETRYABLE, stop=tenacity.stop_after_attempt(6), reraise=True,
                    wait=tenacity.wait_exponential(multiplier=0.1, max=2), sleep=db.clock.advance)
    def attempt():
        return requests.post(url + "/payments", json=payment, timeout=TIMEOUT,
                             headers={"Authorization": f"Bearer {api_key}", "Idempotency-Key": f'"{key}"'})
    response = attempt()
    response.raise_for_status()
    return response.json()
'''

HEADER = '"Idempotency-Key": f\'"{key}"\''

WRONG = {
    "a new key for every attempt (the starter)": SOLUTION.replace("    key = str(keys())\n", "").replace(
        "    def attempt():\n", "    def attempt():\n        key = str(keys())\n"),
    "no Idempotency-Key at all": SOLUTION.replace(', ' + HEADER, ''),
    "the key not quoted (not a String structured field)": SOLUTION.replace(HEADER, '"Idempotency-Key": key'),
    "the key made from the payment's content": SOLUTION.replace(
        "    key = str(keys())\n",
        "    key = hashlib.sha256(json.dumps(payment, sort_keys=True).encode()).hexdigest()[:32]\n"),
    "never resends": SOLUTION.replace("tenacity.stop_after_attempt(6)", "tenacity.stop_after_attempt(1)"),
    "no raise_for_status: a refusal returned as a body": SOLUTION.replace("    response.raise_for_status()\n", ""),
    "resends every error, a 400 too": SOLUTION.replace(
        "retry=RETRYABLE,", "retry=tenacity.retry_if_exception_type(requests.RequestException) | "
        "tenacity.retry_if_result(lambda r: r.status_code >= 400),"),
    "a broad except: None for any failure": SOLUTION.replace(
        "    response = attempt()\n    response.raise_for_status()\n    return response.json()\n",
        "    try:\n        response = attempt()\n        response.raise_for_status()\n        return response.json()\n"
        "    except Exception:\n        return None\n"),
    "resends only timeouts, not a 503": SOLUTION.replace(
        "retry=RETRYABLE,", "retry=tenacity.retry_if_exception_type(requests.RequestException),"),
    "a key per payment, kept in a global that is never renewed": '''
KEY = str(keys())


def my_pay(url, payment, api_key):
    @tenacity.retry(retry=RETRYABLE, stop=tenacity.stop_after_attempt(6), reraise=True,
                    wait=tenacity.wait_exponential(multiplier=0.1, max=2), sleep=db.clock.advance)
    def attempt():
        return requests.post(url + "/payments", json=payment, timeout=TIMEOUT,
                             headers={"Authorization": f"Bearer {api_key}", "Idempotency-Key": f'"{KEY}"'})
    response = attempt()
    response.raise_for_status()
    return response.json()
''',
}

RIGHT = {
    "a loop of its own, with httpx-free requests": '''
def my_pay(url, payment, api_key):
    key = str(keys())
    headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": f'"{key}"'}
    for attempt in range(6):
        try:
            response = requests.post(url + "/payments", json=payment, headers=headers, timeout=TIMEOUT)
        except requests.RequestException:
            if attempt == 5:
                raise
            db.clock.advance(0.1 * 2 ** attempt)
            continue
        if response.status_code in (409, 503) and attempt < 5:
            db.clock.advance(0.1 * 2 ** attempt)
            continue
        response.raise_for_status()
        return response.json()
''',
    "a uuid4 key, made once": '''
import uuid


def my_pay(url, payment, api_key):
    key = uuid.uuid4()
    @tenacity.retry(retry=RETRYABLE, stop=tenacity.stop_after_attempt(6), reraise=True,
                    wait=tenacity.wait_exponential(multiplier=0.1, max=2), sleep=db.clock.advance)
    def send():
        return requests.post(f"{url}/payments", json=payment, timeout=TIMEOUT,
                             headers={"Authorization": "Bearer " + api_key, "Idempotency-Key": '"%s"' % key})
    response = send()
    response.raise_for_status()
    return response.json()
''',
}

SAYS = {   # what the NOT YET must say (issue 34: the mistake named in the lesson's words)
    "no Idempotency-Key at all": "the server's 400 (idempotency_key_missing",
    "the key not quoted (not a String structured field)": "the server's 400 (idempotency_key_invalid",
    "the key made from the payment's content": "the body of an earlier payment's charge",
    "never resends": "1 request sent): the wallet was debited 1 time",
}
