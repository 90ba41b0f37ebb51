"""`setup()`: the same display settings in every notebook.

Fixed figure size and dpi (nbval compares the `<Figure size …>` text), PNG
charts without a version stamp (GitHub renders them; byte-stable between
runs), and pandas tables that fit GitHub's width.
"""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

FIGSIZE = (8.0, 4.0)
DPI = 100


def setup() -> None:
    """Apply the collection's display settings (safe to call again)."""
    matplotlib.rcParams.update(
        {
            "figure.figsize": FIGSIZE,
            "figure.dpi": DPI,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "font.size": 11,
        }
    )
    pd.set_option("display.max_columns", 20)
    pd.set_option("display.width", 120)
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:  # plain Python: nothing more to set
        ip = None
    if ip is not None:
        ip.run_line_magic("matplotlib", "inline")
        ip.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
        ip.run_line_magic(
            "config",
            "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Software': None}}",
        )
        ip.InteractiveTB.set_mode("Minimal")  # short tracebacks, no paths of this machine
    plt.close("all")
