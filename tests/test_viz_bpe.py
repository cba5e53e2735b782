"""The merges explorer of chapter 1, tested through its widgets: move the slider, edit the text."""

from __future__ import annotations

import pytest
import torch

from transformer.tokenization import BPETokenizer
from transformer.viz.bpe import BPEExplorer, token_boxes

COUNTS = {"eat": 4, "eats": 2, "eating": 3, "cook": 2, "cooks": 1, "cooking": 3, "bake": 2, "baking": 2}
CORPUS = [" ".join(w for w, c in COUNTS.items() for _ in range(c))]
TOK = BPETokenizer.train(CORPUS, 10)  # merges: at, eat, in, ing, co, coo, cook, ak, bak, cooking


def test_starts_with_every_merge():
    ex = BPEExplorer(TOK, "eating")
    assert ex.merges.value == 10 and ex.merges.max == 10
    assert ex.tokens == ["eat", "ing"]
    assert "10 merges" in ex.view.value and "2 tokens for 1 words" in ex.view.value


def test_no_merges_is_one_token_per_character():
    ex = BPEExplorer(TOK, "eat cook", merges=0)
    assert ex.tokens == list("eat") + list("cook")
    # ids: 4 specials, then the alphabet b a c e g i k n o s t in sorted order
    letters = sorted(set("".join(COUNTS)))
    assert ex.ids.tolist() == [4 + letters.index(ch) for ch in "eatcook"]
    assert ex.ids.dtype == torch.long
    assert "no merges" in ex.view.value


def test_moving_the_slider_merges_step_by_step():
    ex = BPEExplorer(TOK, "eating", merges=0)
    counts = []
    for k in range(11):
        ex.merges.value = k
        counts.append(len(ex.tokens))
    # eating: 6 characters; 'at' (1), 'eat' (2), 'in' (3), 'ing' (4) each save one token; later merges do not touch it
    assert counts == [6, 5, 4, 3, 2, 2, 2, 2, 2, 2, 2]
    ex.merges.value = 2
    assert ex.tokens == ["eat", "i", "n", "g"]
    assert "last merge: e + at" in ex.view.value


def test_ids_do_not_move_as_merges_are_added():
    ex = BPEExplorer(TOK, "baking", merges=10)
    full_ids = ex.ids.tolist()
    assert [TOK.vocab.token_of(i) for i in full_ids] == ex.tokens == ["bak", "ing"]
    ex.merges.value = 4
    assert [TOK.vocab.token_of(i) for i in ex.ids.tolist()] == ex.tokens == ["b", "a", "k", "ing"]


def test_editing_the_text_updates_the_view_and_marks_unknown_characters():
    ex = BPEExplorer(TOK, "eat")
    before = ex.view.value
    ex.text.value = "eaten cake"  # 'n' is known, but no merge joins e-n; nothing is unknown
    assert ex.view.value != before
    assert ex.tokens == ["eat", "e", "n", "c", "ak", "e"]
    ex.text.value = "pizza"  # p and z were never seen
    assert ex.tokens == ["p", "i", "z", "z", "a"]
    assert ex.ids.tolist().count(TOK.vocab.unk_id) == 3
    assert ex.view.value.count("&lt;unk&gt;") == 3


def test_token_boxes_escape_and_separate_words():
    out = token_boxes([["<b>"], ["a", "b"]])
    assert "&lt;b&gt;" in out and out.count("<span style='margin-right") == 2


@pytest.mark.parametrize("kwargs, error, match", [
    ({"tokenizer": "bpe", "text": "a"}, TypeError, "tokenizer: expected a BPETokenizer, got str"),
    ({"tokenizer": TOK, "text": ["a"]}, TypeError, "text: expected str, got list"),
    ({"tokenizer": TOK, "text": "a", "merges": 11}, ValueError, r"merges: expected an int in \[0, 10\], got 11"),
    ({"tokenizer": TOK, "text": "a", "merges": 2.0}, TypeError, r"merges: expected an int in \[0, 10\], got float 2.0"),
])
def test_explorer_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        BPEExplorer(**kwargs)
