"""The multi-head explorers and figure (chapter 5), tested through their widgets' Python API."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from transformer.viz.multihead import HeadCountExplorer, HeadExplorer, plot_heads

TOKENS = ["the", "cat", "sat"]
PREVIOUS = torch.tensor([[1.0, 0.0, 0.0], [0.9, 0.05, 0.05], [0.05, 0.9, 0.05]])  # looks one word back
SELF = torch.tensor([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])  # looks at itself


def explorer(**kw):
    return HeadExplorer(TOKENS, {"previous word": PREVIOUS, "itself": SELF}, **kw)


def test_head_explorer_starts_on_the_first_head_and_query():
    ex = explorer()
    assert ex.head.value == "previous word" and ex.query.value == 0
    assert torch.equal(ex.weights, PREVIOUS[0])
    assert ex.top == ("the", 1.0)
    assert "looks most at <b>the</b> (weight 1.00)" in ex.view.value


def test_choosing_head_and_query_updates_weights_and_view():
    ex = explorer(query=2)
    assert ex.top[0] == "cat"
    assert "looks most at <b>cat</b> (weight 0.90)" in ex.view.value
    ex.head.value = "itself"
    assert torch.equal(ex.weights, SELF[2])
    assert ex.top == ("sat", pytest.approx(0.8))
    assert "In <b>itself</b>, <b>sat</b> looks most at <b>sat</b> (weight 0.80)" in ex.view.value
    ex.query.value = 1
    assert torch.equal(ex.weights, SELF[1])
    assert "<b>cat</b> looks most at <b>cat</b>" in ex.view.value


def test_head_explorer_rejects_bad_patterns():
    with pytest.raises(ValueError, match=r"patterns\['itself'\]: expected shape \(3, 3\), got \(2, 3\)"):
        HeadExplorer(TOKENS, {"previous word": PREVIOUS, "itself": SELF[:2]})
    with pytest.raises(ValueError, match="patterns: expected at least one"):
        HeadExplorer(TOKENS, {})


def test_head_explorer_escapes_tokens():
    ex = HeadExplorer(["<sos>", "a"], {"head <1>": torch.eye(2)})
    assert "&lt;sos&gt;" in ex.view.value and "head &lt;1&gt;" in ex.view.value


@pytest.mark.parametrize("n_heads", [1, 2, 8, 64, 512])
def test_head_count_explorer_counts_like_the_formula(n_heads):
    ex = HeadCountExplorer(d_model=512, batch=2, seq=10)
    ex.n_heads.value = n_heads
    assert ex.d_h == 512 // n_heads
    assert ex.n_params == 4 * 512**2 + 4 * 512 == 1_050_624  # W^Q, W^K, W^V, W^O with their biases
    assert ex.n_weights == 2 * n_heads * 10 * 10
    assert ex.shapes["split into heads"] == (2, n_heads, 10, 512 // n_heads)
    assert ex.shapes["scores and weights"] == (2, n_heads, 10, 10)
    assert ex.shapes["concatenated"] == ex.shapes["output = concat W^O"] == (2, 10, 512)
    assert f"d_h = 512 / {n_heads} = {512 // n_heads}" in ex.view.value
    assert "1,050,624" in ex.view.value


def test_head_count_explorer_offers_only_divisors_and_leaves_the_random_state_alone():
    state = torch.get_rng_state()
    ex = HeadCountExplorer(d_model=12, n_heads=3)
    assert list(ex.n_heads.options) == [1, 2, 3, 4, 6, 12]
    assert ex.n_params == 4 * 144 + 4 * 12
    assert torch.equal(state, torch.get_rng_state())
    with pytest.raises(ValueError, match="n_heads: expected a divisor of d_model=12, got 5"):
        HeadCountExplorer(d_model=12, n_heads=5)


def test_plot_heads_draws_one_heatmap_per_head():
    fig, axes = plot_heads(torch.stack([PREVIOUS, SELF]), TOKENS, titles=["previous", "self"], suptitle="two")
    assert [ax.get_title() for ax in axes] == ["previous", "self"]
    assert fig._suptitle.get_text() == "two"
    with pytest.raises(ValueError, match=r"weights: expected shape \(heads, T_q=3, T_k=3\), got \(3, 3\)"):
        plot_heads(PREVIOUS, TOKENS)
    with pytest.raises(ValueError, match=r"titles: expected one title per head \(2\), got 1"):
        plot_heads(torch.stack([PREVIOUS, SELF]), TOKENS, titles=["one"])
