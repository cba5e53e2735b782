"""What every chapter's explorer shares: rows of controls above an HTML view, live in a kernel and
working on the static page of the book.

An explorer builds its controls, then calls ``self._layout(...)``: the controls
are laid out (a list is one row), ``self.view`` is an empty ``HTML`` below
them, every control redraws the view through the explorer's ``_update``, and
the view is drawn once. Displaying the explorer displays ``self.widget``.

**The static page.** Most readers read the rendered book, where no kernel runs. The first time
``self.widget`` is asked for, the explorer also stores its views: it sets its controls to every
point of a grid (:meth:`Explorer._static_grid`; by default every value a control can take), calls
``_update`` and keeps ``self.view.value``. The views go into nested ``Stack`` widgets, one level per
control, and a copy of each control (a slider becomes a ``SelectionSlider`` over the grid, a
checkbox two toggle buttons "off" / "on") is linked to the level's ``selected_index`` with
``jsdlink``: ipywidgets' HTML manager runs those links in the browser, without a kernel, so the
copy shows the very view the kernel draws for the value it shows. Identical views are stored once,
identical sub-trees once, a level whose views do not depend on its control is skipped, and the
inline styles the views repeat become shared CSS classes. A control that cannot be precomputed
(free text) is replaced by a one-line note with launch links. ``self.widget`` holds both parts:
``explorer-live`` (the controls and ``self.view``, redrawn by the kernel) and ``explorer-static``
(the copies and the stored views, hidden in a kernel); the book's stylesheet
(``book/_ext/static_explorers.py``) shows the static part and hides the live one.

Each stored view is wrapped in ``<div class="explorer-frame" data-k="...">``: ``data-k`` lists the
grid points it is drawn for, as indices of the precomputable controls in display order, joined by
``.`` (``*`` where the view does not depend on that control), so a test can check that the view the
page shows is the one stored for the values the controls show.

The view carries the class ``explorer-view``: the book's accessibility script
makes it a polite live region, so a screen reader announces every redraw. A
drawing in a view is an ``<svg role="img" aria-label="...">`` whose label says
what it shows.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections import Counter

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


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


def _format(value, spec: str) -> str:
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def _grid_values(control, values=None):
    """``(values, labels)`` of the stored grid of one control, or None if it cannot be precomputed."""
    import ipywidgets as w

    if isinstance(control, (w.Text, w.Textarea)):
        return None
    if isinstance(control, (w.Dropdown, w.ToggleButtons, w.RadioButtons, w.Select, w.SelectionSlider)):
        pairs = list(zip(control._options_values, control._options_labels))
        if values is not None:
            pairs = [(v, lab) for v, lab in pairs if any(_same(v, x) for x in values)]
        return [v for v, _ in pairs], [lab for _, lab in pairs]
    if isinstance(control, (w.Checkbox, w.ToggleButton)):
        return [False, True], ["off", "on"]
    if isinstance(control, w.FloatLogSlider):
        if values is None:
            n = round((control.max - control.min) / control.step)
            values = [control.base ** round(control.min + k * control.step, 10) for k in range(n + 1)]
        return list(values), [_format(v, control.readout_format) for v in values]
    if isinstance(control, (w.IntSlider, w.FloatSlider)):
        if values is None:
            n = round((control.max - control.min) / control.step)
            values = [control.min + k * control.step for k in range(n + 1)]
            if isinstance(control, w.FloatSlider):
                values = [round(v, 10) for v in values]
        return list(values), [_format(v, control.readout_format) for v in values]
    raise TypeError(f"the static page cannot store a grid for a {type(control).__name__}")


class _Node:
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

    counts: Counter[str] = Counter()
    for view in views:
        for match in _STYLE.finditer(view):
            if " class=" not in match.group(0):
                counts.update(split(match.group(2)))
    uses: Counter[tuple] = Counter()
    for view in views:
        for match in _STYLE.finditer(view):
            if " class=" not in match.group(0):
                shared = tuple(d for d in split(match.group(2)) if counts[d] > 1)
                if shared:
                    uses[shared] += 1
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


class Explorer:
    """The base of every explorer: ``self.widget`` (controls, then ``self.view``) and its display."""

    _widget = None
    _storing = False

    def _layout(self, *rows, watch=None) -> None:
        """``rows``: widgets, or lists of widgets shown side by side; ``watch``: the controls that
        redraw the view (default: all of them)."""
        import ipywidgets as w

        self._rows = [list(row) if isinstance(row, list) else row for row in rows]
        self.controls = [c for row in self._rows for c in (row if isinstance(row, list) else [row])]
        self.view = w.HTML()
        self.view.add_class("explorer-view")  # announced on change in the book (book/_static/accessibility.js)
        self._live = w.VBox([w.HBox(row) if isinstance(row, list) else row for row in self._rows] + [self.view])
        self._live.add_class("explorer-live")
        for control in self.controls if watch is None else watch:
            control.observe(self._redraw, names="value")
        self._widget = None
        self._update()

    def _redraw(self, _change=None) -> None:
        if not self._storing:
            self._update()

    def _update(self, _change=None) -> None:
        raise NotImplementedError("an explorer redraws self.view in _update")

    def _view_key(self):
        """What the view depends on, if less than every control's value (the static page then draws
        each distinct view once); None: every control's value."""
        return None

    def _static_grid(self) -> dict:
        """The stored grid: ``{control: values}`` for the controls whose grid is not every value they
        can take (a coarser step or range for a slider; None: every value), in the order the views
        nest (the controls not named follow, in the order of display; a control whose options depend
        on another comes after it). Each control's current value is added to its grid. The live
        control keeps its own step and range."""
        return {}

    @property
    def widget(self):
        """The explorer as one widget: the live controls and view, and the stored views for the page."""
        if self._widget is None:
            import ipywidgets as w

            self._widget = w.VBox([self._live, self._static()])
            self._widget.add_class("explorer")
        return self._widget

    # ------------------------------------------------------------------ the static page

    def _grid(self, control, override):
        grid = _grid_values(control, override.get(control))
        if grid is None:
            return None
        values, labels = grid
        if not any(_same(control.value, v) for v in values):  # the value it shows must be stored
            values, labels = zip(*sorted([*zip(values, labels), (control.value, None)], key=lambda p: p[0]))
            values, labels = list(values), list(labels)
            spec = getattr(control, "readout_format", "")
            labels = [lab if lab is not None else _format(control.value, spec) for lab in labels]
        return values, labels

    def _store(self, order, override, ids, level=0):
        """The grid below ``order[level:]`` as a tree of ``_Node`` whose leaves are the views."""
        if level == len(order):
            key = self._view_key()
            if key is None or key not in self._drawn:
                self._update()
                if key is None:
                    return self.view.value
                self._drawn[key] = self.view.value
            return self._drawn[key]
        control = order[level]
        values, labels = self._grid(control, override)
        start = control.value
        index = next(i for i, v in enumerate(values) if _same(v, start))
        children = []
        for value in values:
            if not _same(control.value, value):
                control.value = value
            children.append(self._store(order, override, ids, level + 1))
        if not _same(control.value, start):
            control.value = start
        return _Node(control, labels, index, children, ids)

    def grid(self) -> list[tuple]:
        """``(control, values, labels)`` of each control the page stores views for, in display order:
        the values on its stored grid (at the other controls' current values) and their labels."""
        override = dict(self._static_grid())
        return [(c, *self._grid(c, override)) for c in self.controls if _grid_values(c) is not None]

    def view_at(self, indices) -> str:
        """The view the kernel draws with each control of :meth:`grid` at the value of that index;
        the controls go back to their values afterwards."""
        grid = self.grid()
        saved = [c.value for c in self.controls]
        try:
            for (control, _, _), i in zip(grid, indices):
                values = self._grid(control, dict(self._static_grid()))[0]  # may depend on the ones before
                control.value = values[i]
            return self.view.value
        finally:
            for control, value in zip(self.controls, saved):
                if not _same(control.value, value):
                    control.value = value

    def static_views(self) -> tuple[list, dict]:
        """The stored grid: the precomputable controls in nesting order, and ``{index tuple: view}``
        over the grid (indices in that order); every control is back at its value afterwards."""
        order, override, tree = self._static_tree()
        views = {}

        def walk(node, path):
            if isinstance(node, str):
                views[tuple(path)] = node
                return
            for i, child in enumerate(node.children):
                walk(child, [*path, i])

        walk(tree, [])
        return order, views

    def _static_tree(self):
        from contextlib import ExitStack

        override = dict(self._static_grid())
        gridded = [c for c in self.controls if _grid_values(c) is not None]
        order = [c for c in override if c in gridded] + [c for c in gridded if c not in override]
        saved = [c.value for c in self.controls]
        with ExitStack() as stack:
            for widget in [*self.controls, self.view]:
                stack.enter_context(widget.hold_sync())
            self._storing, self._drawn = True, {}
            try:
                tree = self._store(order, override, {})
            finally:
                self._storing, self._drawn = False, {}
                for control, value in zip(self.controls, saved):
                    if not _same(control.value, value):
                        control.value = value
                self._update()
        return order, override, tree

    def _static(self):
        """The static part of ``self.widget``: copies of the controls linked to the stored views."""
        import ipywidgets as w

        order, _, tree = self._static_tree()
        shown = [c for c in self.controls if c in order]  # display order: the key of data-k

        # which controls are one copy above the views, and which (their options depend on another
        # control's value) get a copy per branch, inside the views
        levels: dict[int, list[_Node]] = {}

        def collect(node):
            if isinstance(node, _Node):
                levels.setdefault(order.index(node.control), []).append(node)
                for child in node.children:
                    collect(child)

        collect(tree)
        first = {}
        node = tree
        while isinstance(node, _Node):
            first[node.control] = node
            node = node.children[node.index]
        shared = {}
        for level, nodes in levels.items():
            control = order[level]
            if all(n.labels == nodes[0].labels for n in nodes):
                shared[control] = self._copy(control, first[control].labels, first[control].index, shown)

        # the leaves: one frame per distinct view, with the grid points it stands for
        keys: dict[str, list[str]] = {}

        def paths(node, key):
            if isinstance(node, str):
                keys.setdefault(node, []).append(".".join(key[c] for c in shown))
                return
            if node.collapsed:
                paths(node.children[0], {**key, node.control: "*"})
            else:
                for i, child in enumerate(node.children):
                    paths(child, {**key, node.control: str(i)})

        paths(tree, {c: "*" for c in shown})
        if len(keys) > MAX_STORED_VIEWS:
            raise ValueError(f"{type(self).__name__}: {len(keys)} distinct views to store, more than "
                             f"{MAX_STORED_VIEWS}; coarsen the grid in _static_grid")
        distinct = list(keys)
        scope = "xs" + hashlib.md5("".join(distinct).encode()).hexdigest()[:8]
        compact, sheet = compact_styles(distinct, scope)
        Frame, Stacked = _frame_classes()
        frames = {view: Frame(value=f"<div class='explorer-frame' data-k='{' '.join(keys[view])}'>{small}</div>")
                  for view, small in zip(distinct, compact)}

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
                inner = Stacked(children=[build(child) for child in node.children], selected_index=index)
            if control is None:  # a copy for this branch, shown above its views
                control = self._copy(node.control, node.labels, node.index, shown)
                if not node.collapsed:
                    w.jsdlink((control, "index"), (inner, "selected_index"))
                inner = w.VBox([control, inner])
            elif not node.collapsed and (control.model_id, inner.model_id) not in linked:
                linked.add((control.model_id, inner.model_id))
                w.jsdlink((control, "index"), (inner, "selected_index"))
            built[node.sig] = inner
            return inner

        root = w.Stack([build(tree)], selected_index=0)
        root.add_class("explorer-view")  # announced on change in the book (book/_static/accessibility.js)

        rows = []
        for row in self._rows:
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
                rows.append(w.HBox(cells) if isinstance(row, list) else cells[0])
        style = w.HTML(f"<style>{sheet}</style>", layout=w.Layout(display="none"))
        static = w.VBox([style, *rows, root], layout=w.Layout(display="none"))
        static.add_class("explorer-static")
        static.add_class(scope)
        return static

    @staticmethod
    def _copy(control, labels, index, shown):
        """The control's copy on the static page: the same kind where the browser can read an index
        from it, a ``SelectionSlider`` over the grid for a slider, toggle buttons for a checkbox."""
        import ipywidgets as w

        options = [(label, i) for i, label in enumerate(labels)]
        kwargs = {"description": control.description, "index": index}
        width = getattr(getattr(control, "style", None), "description_width", "")
        if isinstance(control, (w.Checkbox, w.ToggleButton)):
            copy = w.ToggleButtons(options=options, style={"description_width": "initial"}, **kwargs)
        elif isinstance(control, (w.Dropdown, w.ToggleButtons, w.RadioButtons, w.Select, w.SelectionSlider)):
            copy = type(control)(options=options, **kwargs)
        else:
            copy = w.SelectionSlider(options=options, continuous_update=True, **kwargs)
        if width and not isinstance(control, (w.Checkbox, w.ToggleButton)):
            copy.style.description_width = width
        copy.add_class(f"explorer-c{shown.index(control)}")
        return copy

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
