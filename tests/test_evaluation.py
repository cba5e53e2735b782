"""Chapter 10's evaluation: systematic splits counted by hand from the grammar, BLEU computed by hand,
and error categories on sentences read word by word."""

from __future__ import annotations

import math

import pytest
import torch

from transformer.data import Corpus, all_pairs
from transformer.evaluation import (
    ValidationLoss,
    corpus_scores,
    error_categories,
    error_table,
    roles,
    systematic_splits,
)
from transformer.train import fit, translate, translation_loss

from conftest import small_translator


@pytest.fixture(scope="module")
def splits():
    return systematic_splits()


def test_the_splits_cover_the_corpus_once(splits):
    pairs = all_pairs()
    seen = [p for part in splits.values() for p in part]
    assert sorted(seen) == sorted(pairs) and len(seen) == len(set(seen)) == 4320
    # by hand: 9 subjects x 5 verbs (an egg can be eaten and cooked too) x 2 articles x (no adjective + 4)
    assert len(splits["unseen_noun"]) == 9 * 5 * 2 * 5 == 450
    # old cat, small dog: 3 verbs that take any object; big bread, good soup: all 5; x 9 subjects x 2 articles
    assert len(splits["unseen_combination"]) == 9 * 2 * (3 + 3 + 5 + 5) == 288
    assert len(splits["validation"]) == len(splits["test"]) == round(0.05 * 4320) == 216
    assert ("I ate an apple", "Ich habe einen Apfel gegessen") in splits["test"]


def test_unseen_means_unseen_in_training(splits):
    train_words = {w for en, _ in splits["train"] for w in en.lower().split()}
    german_words = {w for _, de in splits["train"] for w in de.split()}
    assert "egg" not in train_words and "Ei" not in german_words
    for adjective, noun in [("old", "cat"), ("big", "bread"), ("good", "soup"), ("small", "dog")]:
        assert {adjective, noun} <= train_words  # each word is known ...
        assert not any(f"{adjective} {noun}" in en for en, _ in splits["train"])  # ... never the two together
        assert any(f"{adjective} {noun}" in en for en, _ in splits["unseen_combination"])


def test_splits_are_seeded_and_check_their_arguments():
    assert systematic_splits(seed=1) == systematic_splits(seed=1) != systematic_splits(seed=2)
    with pytest.raises(ValueError, match="unseen_noun: expected one of .*, got 'unicorn'"):
        systematic_splits(unseen_noun="unicorn")
    with pytest.raises(ValueError, match=r"unseen_combinations: expected \(adjective, noun\) of the grammar, "
                                         r"got \('green', 'cat'\)"):
        systematic_splits(unseen_combinations=[("green", "cat")])
    with pytest.raises(ValueError, match=r"fraction: expected a fraction in \(0, 0.5\), got 0.6"):
        systematic_splits(fraction=0.6)


def test_bleu_by_hand():
    # one 5-word sentence, the last word wrong: n-gram precisions 4/5, 3/4, 2/3, 1/2; no brevity penalty
    got = corpus_scores(["a b c d e"], ["a b c d f"])
    assert got["BLEU"] == pytest.approx(100 * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25, abs=1e-9)
    # one word short: every n-gram right, brevity penalty exp(1 - 5/4); swapping the arguments would not give this
    got = corpus_scores(["a b c d"], ["a b c d e"])
    assert got["BLEU"] == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-9)
    assert corpus_scores(["Ich habe einen Apfel gegessen"] * 2, ["Ich habe einen Apfel gegessen"] * 2)["chrF"] == 100
    assert got["BLEU signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert got["chrF signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:")
    assert 0 < corpus_scores(["Ich habe einen Apfel gegesen"], ["Ich habe einen Apfel gegessen"])["chrF"] < 100
    with pytest.raises(ValueError, match=r"hypotheses: expected one per reference \(2, at least 1\), got 1"):
        corpus_scores(["a"], ["a", "b"])


def test_roles_and_error_categories():
    assert roles("Der Mann hat einen alten Hund gesehen") == [
        "subject", "subject", "auxiliary", "article", "adjective", "noun", "participle"]
    assert roles("Ich habe einen Apfel gegessen") == ["subject", "auxiliary", "article", "noun", "participle"]
    ref = "Ich habe ein altes Ei gegessen"
    assert error_categories(ref, ref) == set()
    assert error_categories("Ich habe ein altes Brot gegessen", ref) == {"noun"}
    assert error_categories("Ich habe einen alten Apfel gekocht", ref) == {"article", "adjective", "noun",
                                                                          "participle"}
    assert error_categories("Ich hat ein altes Ei gegessen", ref) == {"auxiliary"}
    assert error_categories("Ich habe ein Ei gegessen", ref) == {"length"}
    with pytest.raises(ValueError, match="german: expected a sentence of the grammar"):
        roles("Hallo Welt")
    table = error_table(["Ich habe ein altes Brot gegessen", ref, "Ich habe ein Ei"], [ref, ref, ref])
    assert table["exact"] == 1 and table["noun"] == 1 and table["length"] == 1 and table["article"] == 0


def test_validation_loss_is_measured_while_training_without_dropout():
    torch.manual_seed(0)
    corpus = Corpus(splits=systematic_splits())
    assert corpus.train == corpus.splits["train"] and corpus.held_out == corpus.splits["validation"]
    model = small_translator(corpus, dropout=0.3)
    held = corpus.held_out[:32]
    batch = (corpus.encode_src([en for en, _ in held]), corpus.encode_tgt([de for _, de in held]))
    curve = ValidationLoss(model, batch, every=5)
    seen = []

    def check(step, loss):  # called after the curve: at its steps the model is back in training mode
        seen.append((step, model.training))

    fit(model, corpus.batches(16, torch.Generator().manual_seed(0)), steps=10, callback=lambda s, x: (curve(s, x),
        check(s, x)))
    assert curve.steps == [5, 10] and all(training for _, training in seen)
    with torch.no_grad():  # after fit the model is in eval mode: the last point is the loss of the final model
        assert curve.losses[-1] == pytest.approx(translation_loss(model, batch).item(), abs=1e-6)
    with pytest.raises(ValueError, match="every: expected"):
        ValidationLoss(model, batch, every=0)


def test_beam_search_translation_equals_greedy_with_one_beam():
    torch.manual_seed(0)
    corpus = Corpus()
    model = small_translator(corpus).eval()
    sentences = [en for en, _ in corpus.held_out[:5]]
    greedy = translate(model, corpus, sentences)
    assert translate(model, corpus, sentences, beam_size=2, alpha=0.0) != [] and len(greedy) == 5
    from transformer.decoding import beam_decode
    one = [corpus.decode_tgt(torch.tensor([beam_decode(model, corpus.encode_src([s]), 1, 12, corpus.tgt.vocab.sos_id,
                                                       corpus.tgt.vocab.eos_id)[1:]]))[0] for s in sentences]
    assert one == greedy
