"""helpers/swimlanes.py: the timeline records in virtual time; the chart refuses tables it cannot draw."""

from __future__ import annotations

import math

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

from helpers import BadInput, VirtualClock  # noqa: E402
from helpers.swimlanes import COLUMNS, Timeline, swimlanes  # noqa: E402


def test_events_are_timed_from_the_start_and_sorted_stably():
    clock = VirtualClock(start=50)
    timeline = Timeline(clock)
    timeline.record("client", "sends", to="handler")
    timeline.record("handler", "finishes later", at=58)
    clock.advance(5)
    timeline.record("client", "gives up")
    timeline.record("table", "same instant, recorded second")
    frame = timeline.frame()
    assert list(frame.columns) == COLUMNS
    assert frame.values.tolist() == [
        [0.0, "client", "sends", "handler"],
        [5.0, "client", "gives up", ""],
        [5.0, "table", "same instant, recorded second", ""],
        [8.0, "handler", "finishes later", ""],
    ]


def test_an_empty_timeline_has_the_columns():
    assert list(Timeline(VirtualClock()).frame().columns) == COLUMNS


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(lane="", event="x"), "lane must be a non-empty string"),
        (dict(lane=None, event="x"), "lane must be a non-empty string"),
        (dict(lane="client", event=" "), "event must be a non-empty string"),
        (dict(lane="client", event="x", to="client"), "to must name another lane"),
        (dict(lane="client", event="x", to=""), "to must name another lane"),
        (dict(lane="client", event="x", at=99), "after the timeline began"),
        (dict(lane="client", event="x", at=math.nan), "finite virtual time"),
    ],
)
def test_bad_events_are_refused_and_nothing_is_recorded(kwargs, message):
    timeline = Timeline(VirtualClock(start=100))
    with pytest.raises(BadInput, match=message):
        timeline.record(**kwargs)
    assert len(timeline) == 0


def test_a_timeline_needs_a_virtual_clock():
    with pytest.raises(BadInput, match="needs a VirtualClock"):
        Timeline(clock=None)


def good_frame():
    timeline = Timeline(VirtualClock(start=0))
    timeline.record("client", "sends", to="table")
    timeline.record("table", "balance 90", at=1)
    return timeline.frame()


def test_the_chart_draws_one_lane_per_party(monkeypatch):
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    swimlanes(good_frame(), lanes=["client", "table"], title="t")
    [figure] = shown
    ax = figure.axes[0]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["client", "table"]
    assert ax.get_title() == "t" and ax.get_xlabel() == "virtual time (s)"
    assert {text.get_text() for text in ax.texts} >= {"sends", "balance 90"}
    plt.close(figure)


@pytest.mark.parametrize(
    "frame, lanes, message",
    [
        ("not a frame", ["client"], "draws a DataFrame"),
        (pd.DataFrame({"t": [0.0], "lane": ["client"]}), ["client"], "lacks column"),
        (pd.DataFrame(columns=COLUMNS), ["client"], "no events"),
        (None, [], "distinct lane names"),
        (None, ["client", "client", "table"], "distinct lane names"),
        (None, ["client"], "not in"),
        (pd.DataFrame({"t": [-1.0], "lane": ["client"], "event": ["x"], "to": [""]}), ["client"], "t >= 0"),
        (pd.DataFrame({"t": ["soon"], "lane": ["client"], "event": ["x"], "to": [""]}), ["client"], "t >= 0"),
    ],
)
def test_the_chart_refuses_what_it_cannot_draw(frame, lanes, message):
    with pytest.raises(BadInput, match=message):
        swimlanes(good_frame() if frame is None else frame, lanes=lanes, title="t")
