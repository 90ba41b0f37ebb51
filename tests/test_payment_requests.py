"""helpers/payment_requests.py: notebook 06's request checks scope the key to its caller and name each problem
(06's `pay` under bad input, nothing written: tests/test_lesson_06.py and tests/test_bad_input.py)."""

from __future__ import annotations

import pytest

import helpers
from helpers.payment_requests import check_payment

pytestmark = pytest.mark.backend_independent  # no table: run on the moto tier only


def test_check_payment_scopes_the_key_and_names_each_problem():
    payload = {"wallet": "alice", "amount": 10}
    assert check_payment("k", payload, "inv-1", "shop-a") == "shop-a#k"
    for args, name in [(("k", {"wallet": "alice"}, "inv-1", "c"), "payload"), (("k", payload, "", "c"), "invocation"),
                       (("k", payload, "inv-1", "a#b"), "caller"),
                       (("k", payload, "inv-1", "c" * 101), "caller")]:
        with pytest.raises(helpers.BadInput, match=name):
            check_payment(*args)
