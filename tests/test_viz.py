"""Explorers are tested through their widgets' Python API: set a value, check what changes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from transformer.viz import AttentionExplorer, plot_attention, weight_bars

TOKENS = ["the", "cat", "sat"]
SCORES = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 1.0, 1.0]])


def test_explorer_starts_as_scaled_dot_product_attention():
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4)
    expected = torch.softmax(SCORES[0] / 2.0, dim=-1)  # sqrt(d_k) = 2
    assert torch.allclose(ex.weights, expected)
    assert f"{expected[0]:.2f}" in ex.view.value


def test_stretch_sharpens_and_flattens():
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4)
    ex.stretch.value = 30.0
    assert float(ex.weights.max()) > 0.99 and int(ex.weights.argmax()) == 0  # a hard lookup
    ex.stretch.value = 0.1
    assert torch.allclose(ex.weights, torch.full((3,), 1 / 3), atol=0.05)  # nearly an average


def test_choosing_a_query_updates_the_view():
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4)
    before = ex.view.value
    ex.query.value = 1
    assert int(ex.weights.argmax()) == 1
    assert ex.view.value != before
    ex.query.value = 2
    assert torch.allclose(ex.weights, torch.full((3,), 1 / 3))  # equal scores give equal weights


def test_explorer_rejects_mismatched_scores():
    with pytest.raises(ValueError, match=r"scores: expected shape \(3, 3\), got \(2, 3\)"):
        AttentionExplorer(TOKENS, SCORES[:2], d_k=4)


def test_weight_bars_escape_tokens():
    assert "&lt;eos&gt;" in weight_bars(["<eos>"], torch.tensor([1.0]))


def test_plot_attention_checks_labels():
    ax = plot_attention(torch.eye(3), TOKENS, TOKENS, title="identity")
    assert ax.get_title() == "identity"
    with pytest.raises(ValueError, match=r"weights: expected shape \(T_q=2, T_k=3\), got \(3, 3\)"):
        plot_attention(torch.eye(3), TOKENS[:2], TOKENS)


# ------------------------------------------------------------------ the static page (explorer.py, static.py)

def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_stored_views_are_the_views_the_kernel_draws():
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4, query=1)
    order, views = ex.static_views()
    assert order == [ex.query, ex.stretch]
    assert len(views) == 3 * 51  # every query, every stretch on the slider
    grid = dict((c, values) for c, values, _ in ex.grid())
    for (q, s), view in list(views.items())[::17]:
        ex.query.value, ex.stretch.value = grid[ex.query][q], grid[ex.stretch][s]
        assert ex.view.value == view
    assert ex.view_at([2, 20]) == views[(2, 20)]


def test_the_static_part_is_built_only_for_the_book(monkeypatch):
    from transformer.viz.static import STATIC_VIEWS_ENV

    monkeypatch.delenv(STATIC_VIEWS_ENV, raising=False)  # JupyterLab, strict nbval: the live part only
    live_only = AttentionExplorer(TOKENS, SCORES, d_k=4, query=1).widget
    monkeypatch.setenv(STATIC_VIEWS_ENV, "1")  # tools/execute_notebooks.py: the views stored for the page
    both = AttentionExplorer(TOKENS, SCORES, d_k=4, query=1).widget
    assert len(live_only.children) == 1 and len(both.children) == 2
    assert "explorer-static" in both.children[1]._dom_classes
    assert repr(live_only)[:400] == repr(both)[:400]  # the text output strict nbval compares starts the same
    monkeypatch.setenv(STATIC_VIEWS_ENV, "0")
    assert len(AttentionExplorer(TOKENS, SCORES, d_k=4).widget.children) == 1


def test_storing_the_views_leaves_the_live_explorer_as_it_was(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_STATIC_VIEWS", "1")
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4, query=1)
    ex.stretch.value = 3.0  # off the stored grid: the grid gains it
    before, weights = ex.view.value, ex.weights
    widget = ex.widget
    assert (ex.query.value, ex.stretch.value, ex.view.value) == (1, 3.0, before)
    assert torch.equal(ex.weights, weights)
    live, static = widget.children
    assert "explorer-live" in live._dom_classes and "explorer-static" in static._dom_classes
    assert static.layout.display == "none"  # a kernel shows the live part; the book's stylesheet, the static one
    ex.stretch.value = 10.0  # the kernel still recomputes for any value
    assert ex.view.value != before


def test_the_static_copies_are_linked_to_the_stored_views(monkeypatch):
    import ipywidgets as w

    monkeypatch.setenv("TRANSFORMER_STATIC_VIEWS", "1")
    ex = AttentionExplorer(TOKENS, SCORES, d_k=4, query=1)
    static = ex.widget.children[1]
    widgets = list(_walk(static))
    query = next(x for x in widgets if isinstance(x, w.Dropdown))
    stretch = next(x for x in widgets if isinstance(x, w.SelectionSlider))
    assert query.index == 1 and query.options[1][0] == "cat"
    assert stretch.options[stretch.index][0] == "1.00"  # the label the live slider shows
    assert "explorer-c0" in query._dom_classes and "explorer-c1" in stretch._dom_classes
    stacks = [x for x in widgets if isinstance(x, w.Stack)]
    outer = stacks[1]  # the first is the root, around everything
    assert len(outer.children) == 3 and outer.selected_index == 1
    from ipywidgets.widgets.widget import _instances

    links = [x for x in _instances.values() if isinstance(x, w.widgets.widget_link.DirectionalLink)
             and x.target[0] in stacks]
    assert {(link.source[0], link.source[1], link.target[1]) for link in links} >= {
        (query, "index", "selected_index"), (stretch, "index", "selected_index")}
    shown = outer.children[1].children[stretch.index]
    assert "data-k='1.20'" in shown.value and text_of(shown.value) == text_of(ex.view.value)


def text_of(markup: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", markup)


def test_shared_styles_keep_the_text():
    from transformer.viz.static import compact_styles

    views = [weight_bars(TOKENS, torch.tensor([0.2, 0.3, 0.5])), weight_bars(TOKENS, torch.tensor([0.5, 0.3, 0.2]))]
    small, sheet = compact_styles(views, "scope")
    assert [text_of(v) for v in small] == [text_of(v) for v in views]
    assert sum(map(len, small)) < 0.7 * sum(map(len, views))
    assert ".scope .explorer-frame .a{" in sheet and "!important" in sheet


def test_a_checkbox_becomes_two_buttons_and_free_text_a_note(monkeypatch):
    import ipywidgets as w

    from transformer.tokenization import BPETokenizer
    from transformer.viz import BPEExplorer, CrossAttentionExplorer

    monkeypatch.setenv("TRANSFORMER_STATIC_VIEWS", "1")
    ex = CrossAttentionExplorer(["a", "b"], ["x", "<pad>"], torch.zeros(2, 2))
    buttons = [x for x in _walk(ex.widget.children[1]) if isinstance(x, w.ToggleButtons)]
    assert len(buttons) == 1 and buttons[0].options == (("off", 0), ("on", 1)) and buttons[0].index == 1
    tok = BPETokenizer.train(["low lower lowest"], 3)
    bpe = BPEExplorer(tok, "low lower")
    notes = [x for x in _walk(bpe.widget.children[1]) if isinstance(x, w.HTML) and "explorer-note" in x._dom_classes]
    assert len(notes) == 1 and "needs a live kernel: open in Colab or Binder" in notes[0].value
    assert "#launch-colab" in notes[0].value  # the book puts the page's own launch links here
    assert len(bpe.static_views()[1]) == len(tok.merges) + 1
