"""Execute notebooks in place and store their outputs and widget state (authors only).

    python -m tools.execute_notebooks notebooks/04_queries_keys_values.ipynb ...

Each notebook runs in its own folder with a fresh kernel; saved widget state
lets the rendered book draw the explorers. The kernels run with
``TRANSFORMER_STATIC_VIEWS=1``, so every explorer also stores its views over
its grid for the static page (``transformer/viz/static.py``); a kernel without
it (JupyterLab, strict nbval) builds the live explorer only, with the same
text outputs. They also run with one thread: strict nbval (``make test``)
re-runs every notebook with two threads on AVX2 code and compares its outputs
with what this script stored, so they must depend on neither.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from transformer.viz.static import STATIC_VIEWS_ENV


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    # the kernel's environment: explorers store their views; one thread (the check runs two)
    client.execute(env={**os.environ, STATIC_VIEWS_ENV: "1", "OMP_NUM_THREADS": "1"})
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"executed {path}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("MPLBACKEND", "Agg")
    for arg in sys.argv[1:]:
        execute(Path(arg))
