"""The explorers a chapter stored for its static page, read from the widget state saved in the notebook.

A chapter's notebook keeps, in ``metadata.widgets``, the state of every widget its kernel drew, and each
output that shows a widget names its model. An explorer is a box with the class ``explorer``; its second
child is the static part the book's page shows: the controls (classes ``explorer-c0``, ``explorer-c1``, ...)
and every view the kernel drew, each an HTML string ``<div class='explorer-frame' data-k='0.1 0.*'>``
that lists the grid points (one index per control, ``*`` for any) it was drawn for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FRAME = re.compile(r"<div class='explorer-frame' data-k='([^']*)'>")


def ref(value) -> str | None:
    """The model id in a reference ``IPY_MODEL_<id>``, or None."""
    return value[len("IPY_MODEL_"):] if isinstance(value, str) and value.startswith("IPY_MODEL_") else None


def read(path: Path) -> tuple[dict, list[str]]:
    """(model id -> model, the id of every explorer the chapter shows, in order) of the notebook at ``path``."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    roots = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view and "explorer" in state.get(view["model_id"], {}).get("state", {}).get("_dom_classes", []):
                roots.append(view["model_id"])
    return state, roots


def static_part(state: dict, root: str) -> str:
    """The model id of the static part of the explorer ``root``."""
    return ref(state[root]["state"]["children"][1])


def walk(state: dict, model_id: str, selected_only: bool = False, above: tuple = ()):
    """The models below ``model_id``, depth first, a model once for every place it is shown in: all of them,
    or only those shown (a stack shows its selected child). A model that contains itself is not entered again."""
    if model_id in above or model_id not in state:
        return
    s = state[model_id]["state"]
    yield model_id
    children = [ref(c) for c in s.get("children", []) if ref(c) in state]
    if selected_only and state[model_id]["model_name"] == "StackModel":
        index = s.get("selected_index")
        children = [] if index is None else children[index:index + 1]
    for child in children:
        yield from walk(state, child, selected_only, (*above, model_id))


def frames(state: dict, static: str) -> list[tuple[list[str], str]]:
    """(the grid-point patterns, the view) of every view stored below ``static``, in order, each model once."""
    out, seen = [], set()
    for mid in walk(state, static):
        value = state[mid]["state"].get("value")
        if mid not in seen and isinstance(value, str) and FRAME.match(value):
            out.append((FRAME.match(value).group(1).split(), value))
        seen.add(mid)
    return out


def matches(pattern: str, key: list) -> bool:
    """Whether the grid-point pattern ``0.*.2`` covers ``key`` (a list of indices; ``"*"`` in it: any)."""
    parts = pattern.split(".")
    return len(parts) == len(key) and all(p == "*" or k == "*" or int(p) == k for p, k in zip(parts, key))
