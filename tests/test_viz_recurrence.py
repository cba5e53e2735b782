"""Chapter 0: step counts, fading signals, the recurrence explorer (through its widgets) and the road map.

References: the counts of Vaswani et al. (2017), Table 1 (sequential operations O(n) for a recurrent
layer and O(1) for self-attention; maximum path length O(n) and O(1)), worked out for small n, and
a signal multiplied by hand.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import math

import pytest
import torch

from transformer.viz.recurrence import (
    RecurrenceExplorer,
    path_length,
    plot_road_map,
    sequential_steps,
    surviving_fraction,
)


def test_counts_for_i_ate_an_apple():
    # h_1 .. h_4 one after another; word 1 reaches h_4 through h_2 and h_3: 3 hops
    assert sequential_steps(4, "rnn") == 4 and path_length(4, "rnn") == 3
    assert sequential_steps(4, "attention") == 1 and path_length(4, "attention") == 1
    assert path_length(1, "rnn") == path_length(1, "attention") == 0


def test_surviving_fraction_by_hand():
    assert surviving_fraction(0.9, 0) == 1.0
    assert surviving_fraction(0.5, 3) == 0.125
    assert math.isclose(surviving_fraction(0.9, 20), 0.12157665459056931)
    # an RNN over 21 words: word 1 makes 20 hops
    assert math.isclose(surviving_fraction(0.9, path_length(21, "rnn")), 0.9 ** 20)


def test_explorer_starts_at_21_words():
    ex = RecurrenceExplorer()
    assert ex.counts.tolist() == [[21, 20], [1, 1]]
    assert ex.survival.shape == (21,)
    assert math.isclose(float(ex.survival[0]), 0.9 ** 20) and float(ex.survival[-1]) == 1.0
    assert "0.90<sup>20</sup> = 0.122" in ex.view.value


def test_moving_n_changes_the_rnn_and_not_attention():
    ex = RecurrenceExplorer()
    ex.n.value = 50
    assert ex.counts.tolist() == [[50, 49], [1, 1]]
    assert ex.survival.shape == (50,)
    assert "<sup>49</sup>" in ex.view.value


def test_moving_the_factor_changes_what_survives():
    ex = RecurrenceExplorer(n=11)
    ex.factor.value = 0.5
    expected = torch.tensor([0.5 ** (10 - j) for j in range(11)], dtype=torch.float64)
    assert torch.allclose(ex.survival, expected)
    assert "0.50<sup>10</sup> = 0.000977" in ex.view.value
    ex.factor.value = 1.0
    assert torch.equal(ex.survival, torch.ones(11, dtype=torch.float64))  # a perfect memory: nothing fades


@pytest.mark.parametrize("call, error, match", [
    (lambda: sequential_steps(0, "rnn"), ValueError, "n: expected a positive int, got 0"),
    (lambda: path_length(3, "lstm"), ValueError, r"model: expected one of \['attention', 'rnn'\], got 'lstm'"),
    (lambda: surviving_fraction(0.9, -1), ValueError, "hops: expected an int >= 0, got -1"),
    (lambda: surviving_fraction(-0.1, 2), ValueError, "factor: expected a number >= 0, got -0.1"),
    (lambda: RecurrenceExplorer(n=1), ValueError, r"n: expected an int in \[2, 60\], got 1"),
    (lambda: RecurrenceExplorer(factor=1.5), ValueError, r"factor: expected a number in \[0.5, 1.0\], got 1.5"),
    # a wrong type is a TypeError, a wrong value a ValueError
    (lambda: surviving_fraction("0.9", 2), TypeError, "factor: expected a number >= 0, got str '0.9'"),
    (lambda: surviving_fraction(0.9, 2.0), TypeError, "hops: expected an int >= 0, got float 2.0"),
    (lambda: surviving_fraction(float("nan"), 2), ValueError, "factor: expected a number >= 0, got nan"),
    (lambda: RecurrenceExplorer(n=21.0), TypeError, r"n: expected an int in \[2, 60\], got float 21.0"),
    (lambda: RecurrenceExplorer(factor="0.9"), TypeError, r"factor: expected a number in \[0.5, 1.0\], got str"),
])
def test_bad_arguments_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_road_map_labels_every_chapter():
    ax = plot_road_map()
    text = " ".join(t.get_text() for t in ax.texts)
    for chapter in range(1, 10):
        assert f"ch {chapter}" in text or f"ch 4, {chapter}" in text, chapter
    assert "chapter 10" in ax.get_title()
    for part in ("masked self-attention", "cross-attention", "feed-forward", "add & norm", "softmax"):
        assert part in text
