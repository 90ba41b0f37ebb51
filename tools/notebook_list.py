"""The committed notebooks, in reading order (solutions included)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(NOTEBOOKS.glob("solutions/*.ipynb"))


# nbstripout flags the project uses: keep outputs and execution counts (nbval needs both),
# drop what changes between runs.
NBSTRIPOUT_FLAGS = [
    "--keep-output",
    "--keep-count",
    "--extra-keys",
    "metadata.language_info.version cell.metadata.execution",
]
