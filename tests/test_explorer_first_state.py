"""Every control of every explorer changes the view when it is moved alone from the explorer's first state.

A reader who opens a chapter, on the static page or in a kernel, and moves one control (one step of a
slider, the next option of a dropdown, the other toggle button) must see the view change: a control
that does nothing where the explorer opens teaches nothing there. The test reads the views each chapter
stored for the static page (the widget state saved with the notebook, which the kernel drew: see
``transformer.viz.static``): the first state is the index each control's copy shows, following the stacks'
selected views; a move is one step of one control (up, or down from the last value, as the browser test
moves it); the view after it is every stored view whose grid points match. A control whose copy exists
once per branch (its options depend on another control) may show any of its values after its parent
moves, so its index is left open there, and every view that may then show must differ from the first.
"""

from __future__ import annotations

import re

import pytest

import widget_state
from conftest import ROOT

CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def explorers():
    """``(chapter, n, first key, {control: (its labels, copied per branch)}, [(patterns, frame)])``."""
    found = []
    for path in CHAPTERS:
        state, roots = widget_state.read(path)
        for n, root in enumerate(roots):
            static = widget_state.static_part(state, root)
            controls, per_branch, key = {}, {}, {}
            for mid in widget_state.walk(state, static):
                s = state[mid]["state"]
                for cls in s.get("_dom_classes", []):
                    if re.fullmatch(r"explorer-c\d+", cls):
                        k = int(cls[len("explorer-c"):])
                        per_branch[k] = per_branch.get(k, 0) + 1
                        controls[k] = list(s["_options_labels"])
            for mid in widget_state.walk(state, static, selected_only=True):
                s = state[mid]["state"]
                for cls in s.get("_dom_classes", []):
                    if re.fullmatch(r"explorer-c\d+", cls):
                        key[int(cls[len("explorer-c"):])] = s["index"]
            frames = widget_state.frames(state, static)
            first = [key[k] for k in range(len(key))]
            found.append((path.stem, n, first, {k: (controls[k], per_branch[k] > 1) for k in controls}, frames))
    return found


def _views(frames, key, echoed=()) -> set[str]:
    """The views stored for ``key``, without the ``data-k`` wrapper and without the words ``echoed``: a view
    that only repeats a control's new value back (``seed 1`` for ``seed 0``) has not changed."""
    out = set()
    for patterns, frame in frames:
        if any(widget_state.matches(p, key) for p in patterns):
            text = widget_state.FRAME.sub("", frame, count=1)
            for word in echoed:
                text = re.sub(rf"(?<![\w.]){re.escape(word)}(?![\w.])", "", text)
            out.add(text)
    return out


EXPLORERS = explorers()


def test_every_control_is_copied_once_in_its_place():
    """A control whose options or range change with another control is copied into every branch of the stored
    views, which the page shows after all the other controls: the Tab key then skips it, and a keyboard user
    who changed its parent cannot reach it next. So no control of any explorer may be copied per branch."""
    per_branch = [(chapter, n, k) for chapter, n, _, controls, _ in EXPLORERS
                  for k, (_, branch) in controls.items() if branch]
    assert not per_branch, f"controls copied into every branch (chapter, explorer, control): {per_branch}"


def test_every_chapter_with_an_explorer_is_read():
    assert {chapter for chapter, *_ in EXPLORERS} >= {p.stem for p in CHAPTERS if p.stem[:2] <= "10"}
    assert all(len(first) == len(controls) for _, _, first, controls, _ in EXPLORERS)


@pytest.mark.parametrize("chapter, n, first, controls, frames", EXPLORERS,
                         ids=[f"{c}-{n}" for c, n, *_ in EXPLORERS])
def test_every_control_changes_the_view_from_the_first_state(chapter, n, first, controls, frames):
    assert len(_views(frames, first)) == 1, f"{chapter} explorer {n}: not one stored view for the first state"
    dead = []
    for k, (labels, _) in sorted(controls.items()):
        moved = list(first)
        moved[k] = first[k] + 1 if first[k] < len(labels) - 1 else first[k] - 1
        echoed = (labels[first[k]], labels[moved[k]])
        shown = _views(frames, first, echoed)
        for later, (_, branch) in controls.items():
            if later > k and branch:
                moved[later] = "*"  # its own copy in the new branch may show any of its values
        after = _views(frames, moved, echoed)
        assert after, f"{chapter} explorer {n}: no stored view for {moved}"
        if after & shown:
            dead.append(k)
    assert not dead, f"{chapter} explorer {n}: moving control(s) {dead} alone from {first} leaves the view as it was"
