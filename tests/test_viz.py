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
