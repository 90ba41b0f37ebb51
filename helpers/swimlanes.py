"""Swimlane timelines: who saw what, and when, in virtual time.

A `Timeline` records events on named lanes (``client``, ``gateway``,
``handler``, ``table`` …) at the virtual clock's current time, or at a given
time. `swimlanes(frame, lanes=...)` draws them: one horizontal lane per party,
time on the x-axis, a dot per event with its label, and an arrow for an event
sent *to* another lane. Red dots mark where someone lost track: a timeout, an
error, a crash, an answer nobody receives. The chart is drawn from the same table the notebook
prints, so the numbers behind it are always on the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from .clock import VirtualClock
from .events import EventLog
from .validation import BadInput

COLUMNS = ["t", "lane", "event", "to"]


class Timeline:
    """Events on lanes, timed in virtual seconds since the timeline was made.

    >>> clock = VirtualClock(start=100)
    >>> timeline = Timeline(clock)
    >>> timeline.record("client", "sends", to="handler")
    >>> _ = clock.advance(5)
    >>> timeline.record("client", "gives up")
    >>> timeline.frame().values.tolist()
    [[0.0, 'client', 'sends', 'handler'], [5.0, 'client', 'gives up', '']]
    """

    def __init__(self, clock: VirtualClock) -> None:
        if not isinstance(clock, VirtualClock):
            raise BadInput(f"a Timeline needs a VirtualClock, got {type(clock).__name__}")
        self.clock = clock
        self.start = clock.now()
        self._log = EventLog()

    def record(self, lane: str, event: str, *, to: str | None = None, at: float | None = None) -> None:
        """Note `event` on `lane`, now (or at virtual time `at`); `to` names the lane it was sent to."""
        for name, value in (("lane", lane), ("event", event)):
            if not isinstance(value, str) or not value.strip():
                raise BadInput(f"{name} must be a non-empty string, got {value!r}")
        if to is not None and (not isinstance(to, str) or not to.strip() or to == lane):
            raise BadInput(f"to must name another lane, got {to!r}")
        when = self.clock.now() if at is None else at
        if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when) or when < self.start:
            raise BadInput(f"an event's time must be a finite virtual time after the timeline began, got {when!r}")
        self._log.record(t=round(float(when) - self.start, 3), lane=lane, event=event, to=to or "")

    def frame(self) -> pd.DataFrame:
        """The events in time order (events at the same time keep the order they were recorded in)."""
        frame = self._log.frame() if len(self._log) else pd.DataFrame(columns=COLUMNS)
        return frame.sort_values("t", kind="stable").reset_index(drop=True)[COLUMNS]

    def __len__(self) -> int:
        return len(self._log)


def _check(frame: Any, lanes: Sequence[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise BadInput(f"swimlanes draws a DataFrame, got {type(frame).__name__}")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise BadInput(f"the events table lacks column(s) {', '.join(missing)}; it needs {', '.join(COLUMNS)}")
    if frame.empty:
        raise BadInput("there are no events to draw")
    if not lanes or len(set(lanes)) != len(lanes):
        raise BadInput(f"lanes must be distinct lane names, got {list(lanes)!r}")
    unknown = sorted((set(frame["lane"]) | set(frame["to"]) - {""}) - set(lanes))
    if unknown:
        raise BadInput(f"events on lanes not in {list(lanes)!r}: {', '.join(map(repr, unknown))}")
    times = pd.to_numeric(frame["t"], errors="coerce")
    if times.isna().any() or not times.map(math.isfinite).all() or (times < 0).any():
        raise BadInput("every event needs a finite time t >= 0")


def swimlanes(frame: pd.DataFrame, *, lanes: Sequence[str], title: str, xlabel: str = "virtual time (s)",
              zoom: tuple[float, float] | None = None) -> None:
    """Draw `frame` (columns t, lane, event, to) as one lane per party, top to bottom in `lanes` order.

    Arrows sent at the same instant between the same two lanes (a request answered at once) are drawn side by
    side, a few pixels apart, so each one shows. `zoom=(start, end)` adds an inset that magnifies that stretch
    of the time axis (say, a 25 ms backoff on a 2 s chart) in the middle of the chart, with the same dots and
    arrows, unlabelled. An optional `color` column gives a dot's colour (empty: red where the event reads like
    a failure, else black).
    """
    swimlane_figure(frame, lanes=lanes, title=title, xlabel=xlabel, zoom=zoom)
    plt.show()


def swimlane_figure(frame: pd.DataFrame, *, lanes: Sequence[str], title: str, xlabel: str = "virtual time (s)",
                    zoom: tuple[float, float] | None = None) -> Any:
    """The chart `swimlanes` shows, as a matplotlib Figure (left open in pyplot; the caller shows or closes it)."""
    _check(frame, lanes)
    if zoom is not None and not (len(zoom) == 2 and all(isinstance(z, (int, float)) and math.isfinite(z)
                                                        for z in zoom) and 0 <= zoom[0] < zoom[1]):
        raise BadInput(f"zoom must be (start, end) with 0 <= start < end, got {zoom!r}")
    row = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}   # the first lane on top
    span = max(float(frame["t"].max()), 1.0)
    fig, ax = plt.subplots(figsize=(10.0, 1.1 * len(lanes) + 1.2))
    for y in row.values():
        ax.axhline(y, color="0.85", linewidth=1, zorder=0)
    width_px = fig.get_figwidth() * fig.dpi * 0.8             # roughly the axes' width in pixels
    per_px = span * 1.28 / width_px                              # data units per pixel along x
    _marks(ax, frame, row, per_px)
    levels = [(6, "bottom"), (18, "bottom"), (-8, "top"), (-20, "top")]   # label offsets in points
    busy: dict[tuple[str, int], float] = {}                      # (lane, level) -> x where its last label ends
    for _, event in frame.iterrows():
        t, y = float(event["t"]), row[event["lane"]]
        free = [i for i in range(len(levels)) if busy.get((event["lane"], i), -math.inf) < t]
        level = free[0] if free else min(range(len(levels)), key=lambda i: busy[(event["lane"], i)])
        busy[(event["lane"], level)] = t + (len(event["event"]) * 5.6 + 20) * per_px
        dy, va = levels[level]
        ax.annotate(event["event"], (t, y), xytext=(4, dy), textcoords="offset points", fontsize=8, va=va)
    ax.set_yticks(list(row.values()), list(row.keys()))
    ax.set_ylim(-0.7, len(lanes) - 0.2)
    ax.set_xlim(-span * 0.03, span * 1.25)
    if zoom is not None:
        _zoom(ax, frame, row, zoom, len(lanes))
    ax.grid(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("who")
    return fig


def _marks(ax: Any, frame: pd.DataFrame, row: dict[str, int], per_px: float) -> None:
    """The dots, and an arrow per event sent to another lane; arrows at one instant between one pair of lanes
    are spread 5 pixels apart."""
    drawn: dict[tuple[float, frozenset[str]], int] = {}
    for _, event in frame.iterrows():
        t, y = float(event["t"]), row[event["lane"]]
        if event["to"]:
            key = (t, frozenset((event["lane"], event["to"])))
            shift = drawn.get(key, 0) * 5 * per_px
            drawn[key] = drawn.get(key, 0) + 1
            ax.annotate("", xy=(t + shift, row[event["to"]]), xytext=(t + shift, y),
                        arrowprops={"arrowstyle": "->", "color": "tab:blue", "alpha": 0.6})
        color = event.get("color") or ("tab:red" if _looks_bad(event["event"]) else "black")
        ax.plot([t], [y], "o", color=color, markersize=5, zorder=3)


def _zoom(ax: Any, frame: pd.DataFrame, row: dict[str, int], zoom: tuple[float, float], lanes: int) -> None:
    start, end = float(zoom[0]), float(zoom[1])
    inset = ax.inset_axes([0.36, 0.08, 0.3, 0.84])           # mid-chart, where a timeout leaves room
    inside = frame[(frame["t"] >= start) & (frame["t"] <= end)]
    for y in row.values():
        inset.axhline(y, color="0.85", linewidth=1, zorder=0)
    _marks(inset, inside, row, (end - start) / 150)
    inset.set_xlim(start, end)
    inset.set_ylim(-0.7, lanes - 0.2)
    inset.set_yticks([])
    inset.tick_params(labelsize=7)
    inset.set_title(f"{start:g} to {end:g}, magnified", fontsize=7)
    ax.indicate_inset_zoom(inset, edgecolor="0.5")


def _looks_bad(text: str) -> bool:
    words = ("504", "502", "timeout", "timed out", "crash", "gives up", "lost", "gone", "discarded", "Error")
    return any(word in text for word in words)


def put_attempts(log: pd.DataFrame) -> pd.DataFrame:
    """Notebook 02's run log (one row per `put_item` attempt: `attempt`, `t`, `caller_saw`, and the order's
    `created_at` read back after it) as events on the client and table lanes, ready for `swimlanes()`."""
    events: list[dict[str, Any]] = []
    stamped = None
    for attempt, t, saw, created_at in log[["attempt", "t", "caller_saw", "created_at"]].itertuples(index=False):
        events.append({"t": t, "lane": "client", "event": f"put_item, attempt {attempt}", "to": "table"})
        did = (f"writes the order (created_at {created_at} s)" if stamped is None else
               f"overwrites it (created_at {stamped} → {created_at} s)" if created_at != stamped else
               "condition fails: writes nothing")
        stamped = created_at
        if saw == "timeout":
            events += [{"t": t, "lane": "table", "event": did, "to": ""},
                       {"t": t, "lane": "client", "event": "timeout: the answer is lost", "to": ""}]
        else:
            events += [{"t": t, "lane": "table", "event": did, "to": "client"},
                       {"t": t, "lane": "client", "event": f"told: {saw}", "to": ""}]
    return pd.DataFrame(events)
