"""The generated English -> German corpus (chapter 10): its grammar, its split, its tensors.

The expectations are written out by hand here (genders, articles, auxiliaries,
whole sentences), not read from transformer.data.
"""

from __future__ import annotations

import pytest
import torch

from transformer.data import (
    Corpus,
    all_pairs,
    allowed_fill_ins,
    allowed_next_words,
    maskable,
    pad_batch,
    split_pairs,
)

# Hand-written translations: reordering (participle last) and agreement (article and adjective ending).
BY_HAND = [
    ("I ate an apple", "Ich habe einen Apfel gegessen"),
    ("You ate a good cake", "Du hast einen guten Kuchen gegessen"),
    ("We saw the dog", "Wir haben den Hund gesehen"),
    ("They bought an old ball", "Sie haben einen alten Ball gekauft"),
    ("She bought a small banana", "Sie hat eine kleine Banane gekauft"),
    ("He cooked the soup", "Er hat die Suppe gekocht"),
    ("The woman found the big cat", "Die Frau hat die große Katze gefunden"),
    ("The child cooked the old bread", "Das Kind hat das alte Brot gekocht"),
    ("They saw an old egg", "Sie haben ein altes Ei gesehen"),
    ("The man found a big book", "Der Mann hat ein großes Buch gefunden"),
    ("The woman saw a car", "Die Frau hat ein Auto gesehen"),
    ("I found an egg", "Ich habe ein Ei gefunden"),
]

GENDER = {"Apfel": "m", "Kuchen": "m", "Hund": "m", "Ball": "m", "Banane": "f", "Suppe": "f", "Katze": "f",
          "Lampe": "f", "Brot": "n", "Ei": "n", "Buch": "n", "Auto": "n"}
ACCUSATIVE = {("a", "m"): "einen", ("a", "f"): "eine", ("a", "n"): "ein",
              ("the", "m"): "den", ("the", "f"): "die", ("the", "n"): "das"}
AUXILIARY = {"I": "habe", "You": "hast", "We": "haben", "They": "haben", "He": "hat", "She": "hat", "The": "hat"}
PARTICIPLE = {"ate": "gegessen", "cooked": "gekocht", "saw": "gesehen", "bought": "gekauft", "found": "gefunden"}
FOOD = {"Apfel", "Kuchen", "Banane", "Suppe", "Brot", "Ei"}


@pytest.fixture(scope="module")
def pairs():
    return all_pairs()


@pytest.mark.parametrize("english, german", BY_HAND)
def test_hand_translations_are_in_the_corpus(pairs, english, german):
    assert (english, german) in pairs


def test_size_by_hand(pairs):
    # 9 subjects x (2 food verbs x 6 food nouns + 3 verbs x 12 nouns) x 2 articles x (no adjective + 4)
    assert len(pairs) == 9 * (2 * 6 + 3 * 12) * 2 * 5 == 4320
    assert len(set(pairs)) == len(pairs)
    assert len({en for en, _ in pairs}) == len(pairs)  # one translation per sentence


def test_word_order_auxiliary_second_participle_last(pairs):
    for en, de in pairs:
        e, d = en.split(), de.split()
        verb = e[1] if e[0] != "The" else e[2]
        assert d[-1] == PARTICIPLE[verb], (en, de)
        aux_position = 1 if e[0] != "The" else 2
        assert d[aux_position] == AUXILIARY[e[0]], (en, de)
        assert verb not in d  # the English verb is not copied


def test_accusative_article_and_adjective_agree_with_the_noun(pairs):
    for en, de in pairs:
        e, d = en.split(), de.split()
        noun = d[-2]
        article = e[-2] if e[-2] in ("a", "an", "the") else e[-3]
        article = "a" if article == "an" else article
        has_adjective = e[-2] not in ("a", "an", "the")
        german_article = d[-4] if has_adjective else d[-3]
        assert german_article == ACCUSATIVE[article, GENDER[noun]], (en, de)
        if has_adjective:
            ending = {("a", "m"): "en", ("a", "f"): "e", ("a", "n"): "es",
                      ("the", "m"): "en", ("the", "f"): "e", ("the", "n"): "e"}[article, GENDER[noun]]
            stem = {"small": "klein", "big": "groß", "old": "alt", "good": "gut"}[e[-2]]
            assert d[-3] == stem + ending, (en, de)


def test_nominative_subjects():
    pairs = dict(all_pairs())
    assert pairs["The man ate an apple"].startswith("Der Mann hat")
    assert pairs["The woman ate an apple"].startswith("Die Frau hat")
    assert pairs["The child ate an apple"].startswith("Das Kind hat")


def test_a_or_an(pairs):
    for en, _ in pairs:
        words = en.split()
        for i, w in enumerate(words[:-1]):
            if w in ("a", "an"):
                assert (w == "an") == (words[i + 1][0] in "aeiou"), en


def test_only_food_is_eaten_or_cooked(pairs):
    for _, de in pairs:
        d = de.split()
        if d[-1] in ("gegessen", "gekocht"):
            assert d[-2] in FOOD, de
    assert "I ate a ball" not in dict(pairs)


def test_split_is_seeded_disjoint_and_complete(pairs):
    train, held = split_pairs(pairs, held_out=0.1, seed=0)
    again = split_pairs(pairs, held_out=0.1, seed=0)
    assert (train, held) == again
    other = split_pairs(pairs, held_out=0.1, seed=1)
    assert set(other[1]) != set(held)
    assert not set(train) & set(held)
    assert sorted(train + held) == sorted(pairs)
    assert len(held) == 432  # 10% of 4320
    assert not {en for en, _ in train} & {en for en, _ in held}  # whole sentences are held out


def test_lecture_sentence_is_held_out(pairs):
    for seed in range(5):
        train, held = split_pairs(pairs, seed=seed)
        assert ("I ate an apple", "Ich habe einen Apfel gegessen") in held
        assert all(en != "I ate an apple" for en, _ in train)


def test_split_rejects_bad_arguments(pairs):
    with pytest.raises(ValueError, match="held_out: expected a fraction"):
        split_pairs(pairs, held_out=1.5)
    with pytest.raises(ValueError, match="keep_out: expected sentences of the corpus"):
        split_pairs(pairs, keep_out=["I ate a unicorn"])


def test_corpus_vocabularies_cover_the_held_out_sentences():
    corpus = Corpus()
    assert repr(corpus) == "Corpus(train=3888, held_out=432, src_vocab=38, tgt_vocab=54)"
    # 4 specials + 34 English words; 4 specials + 50 German words
    for en, de in corpus.held_out:
        assert corpus.src.vocab.unk_id not in corpus.src.encode(en, add_special=False)
        assert corpus.tgt.vocab.unk_id not in corpus.tgt.encode(de)


def test_pad_batch_by_hand():
    out = pad_batch([[5, 6, 7], [8], [9, 10]], pad_id=0)
    assert out.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert out.dtype == torch.long
    with pytest.raises(ValueError, match="id_lists"):
        pad_batch([], 0)


def test_encode_and_decode():
    corpus = Corpus()
    src = corpus.encode_src(["I ate an apple", "The man saw a big dog"])
    assert src.shape == (2, 6) and src[0, 4:].tolist() == [0, 0]
    tgt = corpus.encode_tgt(["Ich habe einen Apfel gegessen"])
    voc = corpus.tgt.vocab
    assert tgt[0, 0] == voc.sos_id and tgt[0, -1] == voc.eos_id and tgt.shape == (1, 7)
    assert corpus.decode_tgt(tgt[:, 1:]) == ["Ich habe einen Apfel gegessen"]
    # everything after <eos> is dropped
    extra = torch.cat([tgt[:, 1:], torch.tensor([[voc.id_of("Brot")]])], dim=1)
    assert corpus.decode_tgt(extra) == ["Ich habe einen Apfel gegessen"]


def test_batches_are_padded_and_reproducible():
    corpus = Corpus()
    a = next(corpus.batches(8, torch.Generator().manual_seed(3)))
    b = next(corpus.batches(8, torch.Generator().manual_seed(3)))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    src, tgt = a
    assert src.shape[0] == tgt.shape[0] == 8
    assert (tgt[:, 0] == corpus.tgt.vocab.sos_id).all()
    assert ((tgt == corpus.tgt.vocab.eos_id).sum(dim=1) == 1).all()
    lengths = (src != 0).sum(dim=1)
    assert lengths.max() == src.shape[1] and lengths.min() >= 4  # shortest sentence: "I ate an apple"


def test_allowed_words_by_hand():
    assert allowed_next_words("Du") == {"hast"}
    assert allowed_next_words("Ich habe einen") == {"Apfel", "Kuchen", "Hund", "Ball",
                                                    "kleinen", "großen", "alten", "guten"}
    assert allowed_next_words("Ich habe einen Ball") == {"gesehen", "gekauft", "gefunden"}
    assert allowed_next_words("Ich habe einen Apfel gegessen") == {"<eos>"}
    assert allowed_fill_ins("Ich habe <mask> Apfel gegessen") == {"einen", "den"}
    assert allowed_fill_ins("Ich habe <mask> altes Brot gegessen") == {"ein"}
    assert allowed_fill_ins("Die Frau <mask> einen Apfel gegessen") == {"hat"}
    with pytest.raises(ValueError, match="exactly one"):
        allowed_fill_ins("Ich habe einen Apfel gegessen")


def test_maskable_is_false_exactly_at_the_special_ids():
    ids = torch.tensor([[1, 7, 8, 2, 0], [1, 9, 2, 0, 0]])
    assert maskable(ids, (0, 1, 2)).int().tolist() == [[0, 1, 1, 0, 0], [0, 1, 0, 0, 0]]
    assert maskable(ids, ()).all()
