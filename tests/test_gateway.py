"""helpers/services/gateway.py: a deadline in virtual time; API Gateway's 504 while the handler commits anyway."""

from __future__ import annotations

import math

import pytest

from helpers import BadInput, VirtualClock
from helpers.services.gateway import REST_API_INTEGRATION_TIMEOUT, Gateway, HandlerFailed, invoke
from helpers.swimlanes import Timeline


def test_the_default_is_the_rest_api_integration_timeout():
    assert REST_API_INTEGRATION_TIMEOUT == 29.0
    assert Gateway(VirtualClock()).integration_timeout == 29.0


def test_an_answer_within_the_deadline_moves_the_clock_to_the_answer():
    clock = VirtualClock(start=0)
    call = invoke(clock, lambda event: (event * 2, 3.0), 21, timeout=5)
    assert (call.timed_out, call.body, call.finished_at, call.answered_at) == (False, 42, 3.0, 3.0)
    assert clock.now() == 3.0


def test_past_the_deadline_the_caller_stops_waiting_but_the_handler_ran():
    clock, ran = VirtualClock(start=0), []
    call = invoke(clock, lambda event: (ran.append(event) or "late", 8.0), "pay", timeout=5)
    assert ran == ["pay"]                                  # the work happened
    assert call.timed_out and call.answered_at == 5.0 and call.finished_at == 8.0
    assert clock.now() == 5.0                              # the caller is free at its deadline


def test_exactly_at_the_deadline_is_in_time():
    assert not invoke(VirtualClock(), lambda e: (1, 29.0), None, timeout=29).timed_out


def test_gateway_504_200_and_502():
    clock = VirtualClock(start=0)
    gateway = Gateway(clock)
    assert gateway.request(lambda e: ("slow", 35), {}).status == 504
    assert gateway.request(lambda e: ("fast", 2), {}).body == "fast"

    def broken(event):
        raise RuntimeError("boom")

    failed = gateway.request(broken, {})
    assert (failed.status, failed.body) == (502, {"message": "Internal server error"})
    assert clock.now() == 29 + 2
    assert [i.timed_out for i in gateway.invocations] == [True, False]


def test_the_504_body_is_api_gateways():
    assert Gateway(VirtualClock()).request(lambda e: (1, 30), {}).body == {"message": "Endpoint request timed out"}


def test_the_gateway_records_its_timeline():
    clock = VirtualClock(start=0)
    timeline = Timeline(clock)
    Gateway(clock, integration_timeout=10, timeline=timeline).request(lambda e: ("x", 12), {})
    rows = timeline.frame()[["t", "lane", "event"]].values.tolist()
    assert rows == [
        [0.0, "gateway", "invokes the handler"],
        [10.0, "gateway", "10 s passed: 504 to the caller"],
        [12.0, "handler", "finishes; its answer is discarded"],
    ]


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, "29", None, True])
def test_a_bad_timeout_is_refused(timeout):
    with pytest.raises(BadInput, match="must be a positive number of seconds"):
        invoke(VirtualClock(), lambda e: (1, 1), None, timeout=timeout)
    with pytest.raises(BadInput, match="integration_timeout must be a positive number"):
        Gateway(VirtualClock(), integration_timeout=timeout)


@pytest.mark.parametrize("result", ["just a body", (1,), (1, 2, 3), None])
def test_a_handler_must_return_body_and_seconds(result):
    clock = VirtualClock(start=0)
    with pytest.raises(TypeError, match=r"returns \(body, seconds\)"):
        invoke(clock, lambda e: result, None, timeout=5)
    assert clock.now() == 0


@pytest.mark.parametrize("seconds", [-1, math.nan, math.inf, "3", None, False])
def test_a_handler_running_time_must_be_a_non_negative_number(seconds):
    clock = VirtualClock(start=0)
    with pytest.raises(BadInput, match="non-negative number of seconds"):
        invoke(clock, lambda e: ("x", seconds), None, timeout=5)
    assert clock.now() == 0
    with pytest.raises(BadInput):                          # a broken contract is a bug, not a 502
        Gateway(clock).request(lambda e: ("x", seconds), None)


def test_a_handler_that_raises_is_reported_with_its_cause():
    def broken(event):
        raise KeyError("wallet")

    with pytest.raises(HandlerFailed, match="the handler raised KeyError") as raised:
        invoke(VirtualClock(), broken, None, timeout=5)
    assert isinstance(raised.value.__cause__, KeyError)


def test_a_gateway_needs_a_virtual_clock():
    with pytest.raises(BadInput, match="needs a VirtualClock"):
        Gateway(clock=123)
