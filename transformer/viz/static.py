"""The static part of an explorer: its stored views as widgets the book's page runs without a kernel.

:class:`~transformer.viz.explorer.Explorer` computes the views over the grid as a tree of
:class:`Node`, one level per control; :func:`static_part` turns it into widgets. The
views go into nested ``Stack`` widgets, and a copy of each control (a slider becomes a
``SelectionSlider`` over the grid, a checkbox two toggle buttons "off" / "on") is linked to its
level's ``selected_index`` with ``jsdlink``: ipywidgets' HTML manager runs those links in the
browser, so the copy shows the very view the kernel draws for the value it shows. Identical views
are stored once, identical sub-trees once, a level whose views do not depend on its control is
skipped, and the inline styles the views repeat become shared CSS classes (:func:`compact_styles`).
A control that cannot be precomputed (free text) is replaced by a one-line note with launch links.

Each stored view is wrapped in ``<div class="explorer-frame" data-k="...">``: ``data-k`` lists the
grid points it is drawn for, as indices of the precomputable controls in display order, joined by
``.`` (``*`` where the view does not depend on that control), so a test can check that the view the
page shows is the one stored for the values the controls show.

Storing the views costs seconds per explorer, so ``Explorer.widget`` builds this part only when the
environment variable ``TRANSFORMER_STATIC_VIEWS`` is set (to anything but ``0``):
``tools/execute_notebooks.py`` sets it for the kernels that store the book's outputs.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from collections import Counter

#: The environment variable that asks ``Explorer.widget`` for the static part (``1``: store the views).
STATIC_VIEWS_ENV = "TRANSFORMER_STATIC_VIEWS"

#: An explorer stores at most this many distinct views; a larger grid is an error (coarsen it in
#: ``_static_grid``): every chapter page, its stored views included, must stay under 2 MB.
MAX_STORED_VIEWS = 1500

#: The note that replaces a control the page cannot precompute; ``#launch-colab`` and
#: ``#launch-binder`` become the page's own launch links when the book is built.
KERNEL_NOTE = ("<span class='explorer-kernel-note'>{name}: needs a live kernel: open in Colab or Binder "
               "<a class='explorer-launch' href='#launch-colab' target='_blank' rel='noopener'>Colab</a> "
               "<a class='explorer-launch' href='#launch-binder' target='_blank' rel='noopener'>Binder</a>"
               "</span>")

_STYLE = re.compile(r"""<[a-zA-Z][^<>]*?\sstyle=(['"])(.*?)\1[^<>]*>""", re.S)
_FRAMES: list = []
_SELECTIONS = ("Dropdown", "ToggleButtons", "RadioButtons", "Select", "SelectionSlider")


def storing_views() -> bool:
    """Whether ``Explorer.widget`` stores the views for the static page (``TRANSFORMER_STATIC_VIEWS``)."""
    return os.environ.get(STATIC_VIEWS_ENV, "").strip() not in ("", "0")


class Node:
    """One level of the grid: the views below each value of one control. ``sig`` is the same number
    for two nodes exactly when their sub-trees are the same (views are interned in ``ids``)."""

    __slots__ = ("control", "labels", "index", "children", "sig", "collapsed")

    def __init__(self, control, labels, index, children, ids: dict):
        self.control, self.labels, self.index, self.children = control, labels, index, children
        kids = tuple(_sig(c, ids) for c in children)
        self.collapsed = len(set(kids)) == 1  # the views do not depend on this control here
        self.sig = ids.setdefault((id(control), tuple(labels), index, kids), len(ids))


def _sig(node, ids: dict) -> int:
    return ids.setdefault(("view", node), len(ids)) if isinstance(node, str) else node.sig


def _frame_classes():
    """``HTML`` and ``Stack`` that save only what the page needs (the value, the children, the
    selected index): the browser fills the rest with its defaults. Hundreds of them are stored."""
    if _FRAMES:
        return _FRAMES
    import ipywidgets as w
    from ipywidgets.widgets.trait_types import TypedTuple
    from traitlets import Any, Bool, Unicode

    unsynced = {"_dom_classes": TypedTuple(trait=Unicode()), "_view_count": Any(), "_view_module": Any(),
                "_view_module_version": Any(), "_view_name": Any(), "tabbable": Any(), "tooltip": Any(),
                "layout": Any(), "style": Any()}
    html_only = {"description": Unicode(""), "description_allow_html": Bool(False), "placeholder": Unicode("")}
    stack_only = {"box_style": Unicode(""), "titles": TypedTuple(trait=Unicode())}
    frame = type("StoredView", (w.HTML,), {**{k: t.tag(sync=False) for k, t in {**unsynced, **html_only}.items()},
                                           "__doc__": "A stored view of an explorer."})
    stack = type("StoredViews", (w.Stack,), {**{k: t.tag(sync=False) for k, t in {**unsynced, **stack_only}.items()},
                                             "__doc__": "Stored views, one shown."})
    _FRAMES.extend([frame, stack])
    return _FRAMES


def _name(rank: int) -> str:
    """Short class names: a, b, ..., z, aa, ab, ..."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    rank += 1
    while rank:
        rank, r = divmod(rank - 1, 26)
        name = letters[r] + name
    return name


def compact_styles(views: list[str], scope: str) -> tuple[list[str], str]:
    """Move the inline style declarations the views repeat into shared classes.

    Returns the views, each ``style`` attribute reduced to the declarations used once and a class
    for the rest, and the stylesheet: its rules apply inside an element of class ``scope`` (the
    class names are short and only mean something there) and keep inline priority with
    ``!important``. The text of every view is unchanged. A tag that already has a class keeps its style.
    """
    def split(style):
        return [d.strip() for d in style.split(";") if d.strip()]

    styles = [m.group(2) for view in views for m in _STYLE.finditer(view) if " class=" not in m.group(0)]
    counts: Counter[str] = Counter(d for style in styles for d in split(style))
    uses: Counter[tuple] = Counter(t for t in (tuple(d for d in split(s) if counts[d] > 1) for s in styles) if t)
    names = {decls: _name(rank) for rank, (decls, _) in enumerate(uses.most_common())}

    def replace(match: re.Match) -> str:
        tag, quote, style = match.group(0), match.group(1), match.group(2)
        if " class=" in tag:
            return tag
        decls = split(style)
        shared = tuple(d for d in decls if counts[d] > 1)
        if not shared:
            return tag
        rest = ";".join(d for d in decls if counts[d] <= 1)
        attr = f" class={names[shared]}" + (f" style={quote}{rest}{quote}" if rest else "")
        return tag.replace(f" style={quote}{style}{quote}", attr, 1)

    out = [_STYLE.sub(replace, view) for view in views]
    sheet = "".join(f".{scope} .explorer-frame .{name}{{{';'.join(d + ' !important' for d in decls)}}}"
                    for decls, name in names.items())
    return out, sheet


def copy_control(control, labels, index, shown):
    """The control's copy on the static page: the same kind where the browser can read an index
    from it, a ``SelectionSlider`` over the grid for a slider, toggle buttons for a checkbox."""
    import ipywidgets as w

    options = [(label, i) for i, label in enumerate(labels)]
    kwargs = {"description": control.description, "index": index}
    width = getattr(getattr(control, "style", None), "description_width", "")
    toggle = isinstance(control, (w.Checkbox, w.ToggleButton))
    if toggle:
        copy = w.ToggleButtons(options=options, style={"description_width": "initial"}, **kwargs)
    elif isinstance(control, tuple(getattr(w, kind) for kind in _SELECTIONS)):
        copy = type(control)(options=options, **kwargs)
    else:
        copy = w.SelectionSlider(options=options, continuous_update=True, **kwargs)
    if width and not toggle:
        copy.style.description_width = width
    copy.add_class(f"explorer-c{shown.index(control)}")
    return copy


def _shared_copies(tree, order, shown) -> dict:
    """One copy above the views for each control whose options are the same in every branch (a
    control whose options depend on another's value gets a copy per branch, inside the views)."""
    levels: dict = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Node):
            levels.setdefault(node.control, []).append(node)
            stack.extend(node.children)
    first = {}
    node = tree
    while isinstance(node, Node):  # the branch of the current values
        first[node.control] = node
        node = node.children[node.index]
    return {c: copy_control(c, first[c].labels, first[c].index, shown)
            for c in order if c in levels and all(n.labels == levels[c][0].labels for n in levels[c])}


def _frame_keys(tree, shown) -> dict[str, list[str]]:
    """Each distinct view, with the ``data-k`` keys of the grid points it stands for."""
    keys: dict[str, list[str]] = {}

    def paths(node, key):
        if isinstance(node, str):
            keys.setdefault(node, []).append(".".join(key[c] for c in shown))
        elif node.collapsed:
            paths(node.children[0], {**key, node.control: "*"})
        else:
            for i, child in enumerate(node.children):
                paths(child, {**key, node.control: str(i)})

    paths(tree, {c: "*" for c in shown})
    return keys


def _frames(keys: dict[str, list[str]], owner: str) -> tuple[dict, str, str]:
    """``({view: frame widget}, stylesheet, scope class)`` for the distinct views."""
    if len(keys) > MAX_STORED_VIEWS:
        raise ValueError(f"{owner}: {len(keys)} distinct views to store, more than "
                         f"{MAX_STORED_VIEWS}; coarsen the grid in _static_grid")
    distinct = list(keys)
    scope = "xs" + hashlib.md5("".join(distinct).encode()).hexdigest()[:8]
    compact, sheet = compact_styles(distinct, scope)
    frame = _frame_classes()[0]
    frames = {view: frame(value=f"<div class='explorer-frame' data-k='{' '.join(keys[view])}'>{small}</div>")
              for view, small in zip(distinct, compact)}
    return frames, sheet, scope


def _stacks(tree, frames: dict, shared: dict, shown):
    """The tree as nested ``Stack`` widgets, each linked to the copy of its control."""
    import ipywidgets as w

    stacked = _frame_classes()[1]
    built: dict[int, object] = {}
    linked: set[tuple[str, str]] = set()

    def build(node):
        if isinstance(node, str):
            return frames[node]
        if node.sig in built:
            return built[node.sig]
        control = shared.get(node.control)
        if node.collapsed:
            inner = build(node.children[0])
        else:
            index = node.index if control is None else control.index
            inner = stacked(children=[build(child) for child in node.children], selected_index=index)
        if control is None:  # a copy for this branch, shown above its views
            control = copy_control(node.control, node.labels, node.index, shown)
            if not node.collapsed:
                w.jsdlink((control, "index"), (inner, "selected_index"))
            inner = w.VBox([control, inner])
        elif not node.collapsed and (control.model_id, inner.model_id) not in linked:
            linked.add((control.model_id, inner.model_id))
            w.jsdlink((control, "index"), (inner, "selected_index"))
        built[node.sig] = inner
        return inner

    return build(tree)


def _control_rows(rows, shared: dict, order) -> list:
    """The explorer's rows of controls on the static page: the shared copies, and a note with launch
    links for each control the page cannot precompute."""
    import ipywidgets as w

    out = []
    for row in rows:
        cells = []
        for control in row if isinstance(row, list) else [row]:
            if control in shared:
                cells.append(shared[control])
            elif control not in order:
                name = html.escape(control.description or "text")
                value = html.escape(str(control.value))
                note = w.HTML(KERNEL_NOTE.format(name=f"{name} &ldquo;{value}&rdquo;"))
                note.add_class("explorer-note")
                cells.append(note)
        if cells:
            out.append(w.HBox(cells) if isinstance(row, list) else cells[0])
    return out


def static_part(explorer):
    """The static part of ``explorer.widget``: copies of the controls linked to the stored views,
    hidden in a kernel (the book's stylesheet shows it)."""
    import ipywidgets as w

    order, _, tree = explorer.static_tree()
    shown = [c for c in explorer.controls if c in order]  # display order: the key of data-k
    shared = _shared_copies(tree, order, shown)
    frames, sheet, scope = _frames(_frame_keys(tree, shown), type(explorer).__name__)
    root = w.Stack([_stacks(tree, frames, shared, shown)], selected_index=0)
    root.add_class("explorer-view")  # announced on change in the book (book/_static/accessibility.js)
    style = w.HTML(f"<style>{sheet}</style>", layout=w.Layout(display="none"))
    controls = _control_rows(explorer.control_rows, shared, order)
    static = w.VBox([style, *controls, root], layout=w.Layout(display="none"))
    static.add_class("explorer-static")
    static.add_class(scope)
    return static
