"""What every chapter's explorer shares: rows of controls above an HTML view, live in a kernel and
working on the static page of the book.

An explorer builds its controls, then calls ``self.lay_out(...)``: the controls
are laid out (a list is one row), ``self.view`` is an empty ``HTML`` below
them, every control redraws the view through the explorer's ``_update``, and
the view is drawn once. Displaying the explorer displays ``self.widget``.

**The static page.** Most readers read the rendered book, where no kernel runs, so an explorer can
store its views: it sets its controls to every point of a grid (:meth:`Explorer.grid`, set by
:meth:`Explorer._static_grid`; by default every value a control can take), calls ``_update`` and
keeps ``self.view.value`` (:meth:`Explorer.static_views`); :mod:`transformer.viz.static` turns the
views into widgets the page runs without a kernel. ``self.widget`` then holds two parts:
``explorer-live`` (the controls and ``self.view``, redrawn by the kernel) and ``explorer-static``
(copies of the controls and the stored views, hidden in a kernel); the book's stylesheet
(``book/_ext/static_explorers.py``) shows the static part and hides the live one.

Storing the views costs seconds per explorer, which a reader in JupyterLab and strict nbval need
not pay, so ``self.widget`` stores them only when the environment variable
``TRANSFORMER_STATIC_VIEWS`` is set (to anything but ``0``): ``tools/execute_notebooks.py``, which
stores the outputs and widget state the book shows, sets it for its kernels. Without it,
``self.widget`` holds the live part only (its text form starts the same).

The view carries the class ``explorer-view``: the book's accessibility script
makes it a polite live region, so a screen reader announces every redraw. A
drawing in a view is an ``<svg role="img" aria-label="...">`` whose label says
what it shows.
"""

from __future__ import annotations

import math

# KERNEL_NOTE, MAX_STORED_VIEWS, STATIC_VIEWS_ENV and compact_styles: importable from here too
from .static import KERNEL_NOTE, MAX_STORED_VIEWS, STATIC_VIEWS_ENV, Node, compact_styles, static_part, storing_views  # noqa: F401


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


def _set(control, value) -> None:
    """Set ``control`` to ``value`` unless it holds it already (every change redraws the view)."""
    if not _same(control.value, value):
        control.value = value


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


class Explorer:
    """The base of every explorer: ``self.widget`` (controls, then ``self.view``) and its display."""

    _widget = None
    _storing = False

    def lay_out(self, *rows, watch=None) -> None:
        """``rows``: widgets, or lists of widgets shown side by side; ``watch``: the controls that
        redraw the view (default: all of them)."""
        import ipywidgets as w

        self.control_rows = [list(row) if isinstance(row, list) else row for row in rows]
        self.controls = [c for row in self.control_rows for c in (row if isinstance(row, list) else [row])]
        self.view = w.HTML()
        self.view.add_class("explorer-view")  # announced on change in the book (book/_static/accessibility.js)
        self._live = w.VBox([w.HBox(row) if isinstance(row, list) else row for row in self.control_rows] + [self.view])
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
        """The explorer as one widget: the live controls and view, and, when ``TRANSFORMER_STATIC_VIEWS``
        is set, the stored views for the page (:func:`transformer.viz.static.static_part`)."""
        if self._widget is None:
            import ipywidgets as w

            parts = [self._live, static_part(self)] if storing_views() else [self._live]
            self._widget = w.VBox(parts)
            self._widget.add_class("explorer")
        return self._widget

    # ------------------------------------------------------------------ the views over the grid

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
        """The grid below ``order[level:]`` as a tree of ``Node`` whose leaves are the views."""
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
            _set(control, value)
            children.append(self._store(order, override, ids, level + 1))
        _set(control, start)
        return Node(control, labels, index, children, ids)

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
                _set(control, value)

    def static_views(self) -> tuple[list, dict]:
        """The stored grid: the precomputable controls in nesting order, and ``{index tuple: view}``
        over the grid (indices in that order); every control is back at its value afterwards."""
        order, override, tree = self.static_tree()
        views = {}

        def walk(node, path):
            if isinstance(node, str):
                views[tuple(path)] = node
                return
            for i, child in enumerate(node.children):
                walk(child, [*path, i])

        walk(tree, [])
        return order, views

    def static_tree(self):
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
                    _set(control, value)
                self._update()
        return order, override, tree

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
