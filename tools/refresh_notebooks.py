"""Re-execute every committed notebook in place, then normalise it.

    make notebooks                      # all of them, on the moto default
    python tools/refresh_notebooks.py notebooks/03_request_id_increments.ipynb

Outputs are deterministic, so refreshing on a clean tree leaves `git diff` empty
unless the lesson (or a package) changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebook_list import NBSTRIPOUT_FLAGS, notebooks  # noqa: E402


def refresh(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    subprocess.run([sys.executable, "-m", "nbstripout", *NBSTRIPOUT_FLAGS, str(path)], check=True)
    print(f"refreshed {path.relative_to(path.parents[1])}")


if __name__ == "__main__":
    targets = [Path(p).resolve() for p in sys.argv[1:]] or notebooks()
    for target in targets:
        refresh(target)
