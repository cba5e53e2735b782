"""What every chapter's explorer shares: rows of controls above an HTML view.

An explorer builds its controls, then calls ``self._layout(...)``: the controls
are laid out (a list is one row), ``self.view`` is an empty ``HTML`` below
them, every control redraws the view through the explorer's ``_update``, and
the view is drawn once. Displaying the explorer displays ``self.widget``.

The view carries the class ``explorer-view``: the book's accessibility script
makes it a polite live region, so a screen reader announces every redraw. A
drawing in a view is an ``<svg role="img" aria-label="...">`` whose label says
what it shows.
"""

from __future__ import annotations


class Explorer:
    """The base of every explorer: ``self.widget`` (controls, then ``self.view``) and its display."""

    widget = None

    def _layout(self, *rows, watch=None) -> None:
        """``rows``: widgets, or lists of widgets shown side by side; ``watch``: the controls that
        redraw the view (default: all of them)."""
        import ipywidgets as w

        controls = [c for row in rows for c in (row if isinstance(row, list) else [row])]
        self.view = w.HTML()
        self.view.add_class("explorer-view")  # announced on change in the book (book/_static/accessibility.js)
        self.widget = w.VBox([*(w.HBox(row) if isinstance(row, list) else row for row in rows), self.view])
        for control in controls if watch is None else watch:
            control.observe(self._update, names="value")
        self._update()

    def _update(self, _change=None) -> None:
        raise NotImplementedError("an explorer redraws self.view in _update")

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
