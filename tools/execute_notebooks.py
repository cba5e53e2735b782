"""Execute notebooks in place and store their outputs and widget state (authors only).

    python -m tools.execute_notebooks notebooks/04_queries_keys_values.ipynb ...

Each notebook runs in its own folder with a fresh kernel; saved widget state
lets the rendered book draw the explorers. Strict nbval later re-runs every
notebook and compares its outputs with what this script stored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"executed {path}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("MPLBACKEND", "Agg")
    for arg in sys.argv[1:]:
        execute(Path(arg))
