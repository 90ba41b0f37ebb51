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


def _arrow_xs(ax):
    return sorted(round(a.xy[0], 6) for a in ax.texts if getattr(a, "arrow_patch", None) is not None)


def test_a_request_answered_at_the_same_instant_draws_two_arrows_side_by_side():
    """A request and its answer at one instant between the same two lanes: before this, both arrows were drawn on
    the same vertical line and only one showed."""
    import matplotlib.pyplot as plt
    frame = pd.DataFrame([[0.0, "client", "sends", "table"], [0.0, "table", "answers", "client"],
                          [1.0, "client", "sends again", "table"]], columns=COLUMNS)
    plt.close("all")
    swimlanes(frame, lanes=["client", "table"], title="t")
    xs = _arrow_xs(plt.gcf().axes[0])
    assert len(xs) == 3 and xs[0] == 0.0 < xs[1] < 0.05 and xs[2] == 1.0
    plt.close("all")


def test_a_zoom_magnifies_a_short_stretch_and_bad_zooms_are_refused():
    import matplotlib.pyplot as plt
    frame = pd.DataFrame([[0.0, "sdk", "sends", "table"], [2.0, "sdk", "timeout", ""],
                          [2.025, "sdk", "sends again", "table"]], columns=COLUMNS)
    plt.close("all")
    swimlanes(frame, lanes=["sdk", "table"], title="t", zoom=(1.99, 2.04))
    main, inset = plt.gcf().axes[0], plt.gcf().axes[0].child_axes[0]
    assert inset.get_xlim() == (1.99, 2.04) and _arrow_xs(inset) == [2.025]
    assert len(_arrow_xs(main)) == 2
    plt.close("all")
    for bad in [(2.0, 1.0), (-1, 1), (0, math.inf), (1,)]:
        with pytest.raises(BadInput, match="zoom must be"):
            swimlanes(frame, lanes=["sdk", "table"], title="t", zoom=bad)
