"""Small chart functions. Each draws one message from a DataFrame it is given: lines(), bars(), 03's balances()
and 12's load_over_time()."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

STYLE = {
    "true balance": {"color": "black", "linestyle": "--", "linewidth": 2.5},
    "naive": {"color": "tab:red", "marker": "o"},
    "idempotent": {"color": "tab:green", "marker": "s", "markersize": 4},
    "fresh ID per retry": {"color": "tab:orange", "marker": "^", "linestyle": ":"},
}


def lines(frame: pd.DataFrame, *, title: str, xlabel: str, ylabel: str) -> None:
    """One line per column of `frame` against its index, with a legend."""
    fig, ax = plt.subplots()
    for column in frame.columns:
        ax.plot(frame.index, frame[column], label=column, **STYLE.get(column, {}))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    plt.show()


def balances(frame: pd.DataFrame, *, title: str) -> None:
    """Notebook 03's headline: the balance after each payment, one line per debit function.

    Two pairs of lines coincide exactly (idempotent on the true balance, a fresh ID per retry on the naive
    debit). Each pair's first line is drawn wide and pale underneath, its twin thin with markers on top, so
    both stay visible.
    """
    fig, ax = plt.subplots()
    x = frame.index
    _ = ax.plot(x, frame["true balance"], color="black", linewidth=8, alpha=0.2, label="true balance")
    _ = ax.plot(x, frame["idempotent"], color="tab:green", marker="s", markersize=5, linewidth=1.5,
                label="idempotent (exactly on the true balance)")
    _ = ax.plot(x, frame["naive"], color="tab:red", linewidth=8, alpha=0.25, label="naive")
    _ = ax.plot(x, frame["fresh ID per retry"], color="tab:orange", marker="^", markersize=6,
                linestyle=":", linewidth=1.5, label="fresh ID per retry (exactly on naive)")
    ax.set_title(title)
    ax.set_xlabel("payments made (logical operations)")
    ax.set_ylabel("balance read back from the table")
    ax.legend(frameon=False)
    plt.show()


def bars(series: pd.Series, *, title: str, xlabel: str, ylabel: str) -> None:
    """One bar per row of `series`, labelled with its value."""
    fig, ax = plt.subplots()
    drawn = ax.bar([str(x) for x in series.index], series.values, color="tab:blue")
    ax.bar_label(drawn, labels=[str(v) for v in series.values])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    plt.show()


def load_over_time(frame: pd.DataFrame, *, title: str, ylabel: str, shaded: tuple[float, float] | None = None,
                   xlabel: str = "virtual time (s)", shaded_label: str = "outage") -> None:
    """Notebook 12's load charts: one panel per column of `frame` (requests per bucket of time, the index the
    bucket's start), on one scale, with the outage `shaded` (start, end) in
    every panel, labelled `shaded_label`."""
    fig, axes = plt.subplots(len(frame.columns), 1, sharex=True, sharey=True,
                             figsize=(8.0, 1.6 * len(frame.columns) + 0.8))
    width = float(frame.index[1] - frame.index[0]) if len(frame.index) > 1 else 1.0
    for ax, column in zip(axes, frame.columns):
        if shaded is not None:
            ax.axvspan(*shaded, color="tab:red", alpha=0.12, label=shaded_label)
        ax.bar(frame.index, frame[column], width=width, align="edge", color="tab:blue")
        ax.set_title(column, fontsize=10, loc="left")
        ax.set_ylabel(ylabel, fontsize=9)
    if shaded is not None:
        axes[0].legend(frameon=False, loc="upper right")
    axes[-1].set_xlabel(xlabel)
    fig.suptitle(title)
    fig.tight_layout()
    plt.show()
