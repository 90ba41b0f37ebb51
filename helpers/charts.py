"""Small chart functions. Each draws one message from a DataFrame it is given."""

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
