"""Mask pictures and explorers (chapters 7 and 8), tested through their widgets' Python API."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from transformer.masks import causal_mask
from transformer.viz.masks import CrossAttentionExplorer, MaskExplorer, mask_grid_html, mask_table, plot_mask

SENTENCES = [["<sos>", "Ich", "habe", "gegessen"], ["<sos>", "Ich"]]
SCORES = torch.tensor([
    [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0]],
    [[0.5, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
])


def softmax_by_hand(scores):
    exps = [math.exp(s) for s in scores]
    return torch.tensor([e / sum(exps) for e in exps])


# ----------------------------------------------------------- text tables


def test_mask_table_reproduces_the_lectures_5x5_table():
    expected = "\n".join([
        "q1·k1  -∞     -∞     -∞     -∞",
        "q2·k1  q2·k2  -∞     -∞     -∞",
        "q3·k1  q3·k2  q3·k3  -∞     -∞",
        "q4·k1  q4·k2  q4·k3  q4·k4  -∞",
        "q5·k1  q5·k2  q5·k3  q5·k4  q5·k5",
    ])
    assert mask_table(causal_mask(5), lambda i, j: f"q{i + 1}·k{j + 1}") == expected


def test_mask_table_reproduces_the_teacher_forcing_table():
    words = "<sos> Ich habe einen Apfel gegessen <eos>".split()
    rows = mask_table(causal_mask(7), lambda i, j: words[j], row_labels=[str(t) for t in range(1, 8)]).splitlines()
    assert rows[0].split() == ["1", "<sos>"] + ["-∞"] * 6
    assert rows[3].split() == ["4", "<sos>", "Ich", "habe", "einen", "-∞", "-∞", "-∞"]
    assert rows[6].split() == ["7", *words]


def test_mask_table_with_column_labels():
    table = mask_table(torch.tensor([[True, False], [True, True]]), lambda i, j: "x", row_labels=["a", "b"],
                       col_labels=["k0", "k1"])
    assert table.splitlines() == ["   k0  k1", "a  x   -∞", "b  x   x"]


def test_mask_table_rejects_bad_input():
    with pytest.raises(ValueError, match=r"mask: expected a \(T_q, T_k\) bool tensor, got shape \(3,\)"):
        mask_table(torch.ones(3, dtype=torch.bool), lambda i, j: "x")
    with pytest.raises(ValueError, match=r"row_labels: expected 2 labels, got 3"):
        mask_table(causal_mask(2), lambda i, j: "x", row_labels=["a", "b", "c"])


# ----------------------------------------------------------- pictures


def test_plot_mask_marks_blocked_cells():
    ax = plot_mask(causal_mask(3), ["a", "b", "c"], ["a", "b", "c"], title="causal")
    assert ax.get_title() == "causal"
    assert sum(t.get_text() == "-∞" for t in ax.texts) == 3  # the strict upper triangle of a 3 x 3 mask
    with pytest.raises(ValueError, match=r"mask: expected shape \(T_q=2, T_k=3\), got \(3, 3\)"):
        plot_mask(causal_mask(3), ["a", "b"], ["a", "b", "c"])


def test_mask_grid_html_shows_scores_and_blocks():
    page = mask_grid_html(SCORES[0], causal_mask(4), SENTENCES[0], SENTENCES[0], highlight=2)
    assert page.count("-∞") == 6
    assert "3.00" in page  # the last row's score against "gegessen" is allowed
    assert "&lt;sos&gt;" in page and page.count("border:2px") == 5  # the label and four cells of row 2


# ----------------------------------------------------------- the mask explorer


def test_mask_explorer_starts_causal_and_right_padded():
    ex = MaskExplorer(SENTENCES, SCORES, query=1)
    assert ex.tokens == [SENTENCES[0], ["<sos>", "Ich", "<pad>", "<pad>"]]
    assert torch.equal(ex.mask[0], causal_mask(4))
    # query 1 of sentence 1 sees keys 0 and 1, with scores 0 and 2
    torch.testing.assert_close(ex.weights, torch.cat([softmax_by_hand([0.0, 2.0]), torch.zeros(2)]))
    assert "may attend to 2 of 4 keys" in ex.view.value


def test_turning_the_causal_mask_off_lets_queries_see_the_future():
    ex = MaskExplorer(SENTENCES, SCORES, query=0)
    before = ex.view.value
    ex.causal.value = False
    assert ex.mask[0].all()
    torch.testing.assert_close(ex.weights, softmax_by_hand([1.0, 0.0, 0.0, 0.0]))
    assert ex.view.value != before


def test_padding_hides_the_pad_keys_and_can_be_turned_off():
    ex = MaskExplorer(SENTENCES, SCORES, causal=False)
    ex.sentence.value = 1
    ex.query.value = 1
    assert ex.mask[1, 1].tolist() == [True, True, False, False]
    torch.testing.assert_close(ex.weights, torch.cat([softmax_by_hand([1.0, 2.0]), torch.zeros(2)]))
    ex.mask_padding.value = False
    torch.testing.assert_close(ex.weights, softmax_by_hand([1.0, 2.0, 0.0, 0.0]))  # pads score 0


def test_shortening_a_sentence_pads_it():
    ex = MaskExplorer(SENTENCES, SCORES)
    ex.cut.value = 2
    assert ex.tokens[0] == ["<sos>", "Ich", "<pad>", "<pad>"]
    assert ex.is_real[0].tolist() == [True, True, False, False]
    assert not ex.mask[0, 3, 2:].any()


def test_the_cut_applies_to_the_sentence_shown():
    ex = MaskExplorer(SENTENCES, SCORES, sentence=1)
    assert (ex.cut.value, ex.cut.max) == (0, 2)  # up to the shortest sentence's length, for every sentence
    ex.cut.value = 1
    assert ex.lengths == [4, 1] and ex.tokens[1] == ["<sos>", "<pad>", "<pad>", "<pad>"]
    ex.sentence.value = 0
    assert ex.lengths == [3, 2] and ex.tokens[0] == ["<sos>", "Ich", "habe", "<pad>"]


def test_from_a_padded_sentence_every_control_changes_the_view():
    ex = MaskExplorer(SENTENCES, SCORES, query=1, sentence=1)
    first = ex.view.value
    for control in ex.controls:
        start = control.value
        if isinstance(control.value, bool):
            control.value = not start
        elif control is ex.side:
            control.value = "left"
        elif control is ex.sentence:
            control.value = 0
        else:
            control.value = start - 1 if start == control.max else start + 1
        assert ex.view.value != first, control.description
        control.value = start
        assert ex.view.value == first, control.description


def test_mask_explorer_rejects_a_bad_first_sentence():
    with pytest.raises(ValueError, match=r"sentence: expected an index in \[0, 1\], got 2"):
        MaskExplorer(SENTENCES, SCORES, sentence=2)
    with pytest.raises(TypeError, match=r"sentence: expected an index in \[0, 1\], got bool True"):
        MaskExplorer(SENTENCES, SCORES, sentence=True)


def test_left_padding_under_the_causal_mask_empties_rows():
    ex = MaskExplorer(SENTENCES, SCORES)
    ex.side.value = "left"
    ex.sentence.value = 1
    assert ex.tokens[1] == ["<pad>", "<pad>", "<sos>", "Ich"]
    assert (~ex.mask[1].any(dim=-1)).tolist() == [True, True, False, False]
    ex.query.value = 0
    assert torch.equal(ex.weights, torch.zeros(4))
    assert not ex.all_weights.isnan().any()
    assert "may attend to no key" in ex.view.value
    ex.query.value = 3  # "Ich" moved to position 3 and keeps its own scores: 1.0 on <sos>, 2.0 on itself
    torch.testing.assert_close(ex.weights, torch.cat([torch.zeros(2), softmax_by_hand([1.0, 2.0])]))


def test_a_sentence_of_length_zero_has_no_key_at_all():
    ex = MaskExplorer(SENTENCES, SCORES, causal=False, sentence=1)
    ex.cut.value = 2
    assert ex.tokens[1] == ["<pad>"] * 4
    assert not ex.mask[1].any()
    assert torch.equal(ex.all_weights[1], torch.zeros(4, 4))


def test_mask_explorer_rejects_mismatched_scores():
    with pytest.raises(ValueError, match=r"scores: expected shape \(batch, L, L\) = \(2, 4, 4\), got \(2, 3, 3\)"):
        MaskExplorer(SENTENCES, SCORES[:, :3, :3])


# ----------------------------------------------------------- the cross-attention explorer

GERMAN = ["Ich", "gegessen"]
ENGLISH = ["I", "ate", "<pad>"]
CROSS = torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0]])


def test_cross_explorer_hides_source_padding():
    ex = CrossAttentionExplorer(GERMAN, ENGLISH, CROSS)
    torch.testing.assert_close(ex.weights, torch.cat([softmax_by_hand([2.0, 0.0]), torch.zeros(1)]))
    assert "weight on &lt;pad&gt;: 0.00" in ex.view.value


def test_cross_explorer_without_the_mask_gives_weight_to_pads():
    ex = CrossAttentionExplorer(GERMAN, ENGLISH, CROSS, query=1)
    ex.mask_padding.value = False
    expected = softmax_by_hand([0.0, 3.0, 0.0])
    torch.testing.assert_close(ex.weights, expected)
    assert f"weight on &lt;pad&gt;: {expected[2]:.2f}" in ex.view.value


def test_cross_explorer_query_changes_the_view():
    ex = CrossAttentionExplorer(GERMAN, ENGLISH, CROSS)
    before = ex.view.value
    ex.query.value = 1
    assert int(ex.weights.argmax()) == 1 and ex.view.value != before


def test_cross_explorer_rejects_mismatched_scores():
    with pytest.raises(ValueError, match=r"scores: expected shape \(T_d=2, T_e=3\), got \(3, 2\)"):
        CrossAttentionExplorer(GERMAN, ENGLISH, CROSS.T)
