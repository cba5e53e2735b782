"""A small English -> German corpus, generated from a grammar (chapter 10).

Every sentence has the shape *subject, verb, object*: "I ate an apple".
Its German translation needs the two things chapter 10 is about:

- **reordering**: German forms the perfect tense with an auxiliary right after
  the subject (``habe``, ``hast``, ``hat``, ``haben``) and sends the participle
  to the end: "I ate an apple" -> "Ich habe einen Apfel gegessen";
- **agreement**: the article (and an adjective's ending) depends on the gender
  of the noun and on its case: ``einen Apfel``, ``eine Banane``, ``ein Brot``
  (accusative, for the object), ``der Mann``, ``die Frau``, ``das Kind``
  (nominative, for the subject).

Nothing is downloaded: :func:`all_pairs` lists every sentence the grammar can
make, :func:`split_pairs` holds out whole sentences with a seeded shuffle, and
:class:`Corpus` turns them into padded id tensors with two
:class:`~transformer.tokenization.WordTokenizer`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from ._validate import require_number, require_positive_int
from .tokenization import SPECIAL_TOKENS, WordTokenizer

EXAMPLE_SENTENCE = ("I ate an apple", "Ich habe einen Apfel gegessen")

# (English, German, German auxiliary): the auxiliary agrees with the subject.
PRONOUNS = [
    ("I", "Ich", "habe"), ("You", "Du", "hast"), ("We", "Wir", "haben"),
    ("They", "Sie", "haben"), ("He", "Er", "hat"), ("She", "Sie", "hat"),
]


@dataclass(frozen=True)
class Noun:
    english: str
    german: str
    gender: str  # "m", "f" or "n"
    food: bool  # only food can be eaten or cooked


SUBJECT_NOUNS = [Noun("man", "Mann", "m", False), Noun("woman", "Frau", "f", False), Noun("child", "Kind", "n", False)]

OBJECT_NOUNS = [
    Noun("apple", "Apfel", "m", True), Noun("cake", "Kuchen", "m", True),
    Noun("dog", "Hund", "m", False), Noun("ball", "Ball", "m", False),
    Noun("banana", "Banane", "f", True), Noun("soup", "Suppe", "f", True),
    Noun("cat", "Katze", "f", False), Noun("lamp", "Lampe", "f", False),
    Noun("bread", "Brot", "n", True), Noun("egg", "Ei", "n", True),
    Noun("book", "Buch", "n", False), Noun("car", "Auto", "n", False),
]

# (English past tense, German participle, takes only food)
VERBS = [
    ("ate", "gegessen", True), ("cooked", "gekocht", True),
    ("saw", "gesehen", False), ("bought", "gekauft", False), ("found", "gefunden", False),
]

ADJECTIVES = [("small", "klein"), ("big", "groß"), ("old", "alt"), ("good", "gut")]

# German articles by (article, case) and gender.
ARTICLES = {
    ("a", "accusative"): {"m": "einen", "f": "eine", "n": "ein"},
    ("the", "accusative"): {"m": "den", "f": "die", "n": "das"},
    ("the", "nominative"): {"m": "der", "f": "die", "n": "das"},
}

# Adjective endings after the article: "einen alten Apfel", "ein altes Brot", "das alte Brot".
ENDINGS = {
    ("a", "accusative"): {"m": "en", "f": "e", "n": "es"},
    ("the", "accusative"): {"m": "en", "f": "e", "n": "e"},
    ("the", "nominative"): {"m": "e", "f": "e", "n": "e"},
}


def english_article(article: str, next_word: str) -> str:
    """``"a"`` becomes ``"an"`` before a vowel sound: *an apple*, *an old cat*, *a big egg*."""
    if article == "a" and next_word[0] in "aeiou":
        return "an"
    return article


def noun_phrase(article: str, adjective: tuple[str, str] | None, noun: Noun, case: str) -> tuple[list[str], list[str]]:
    """English and German words of ``article [adjective] noun`` in ``case``."""
    en_rest = ([adjective[0]] if adjective else []) + [noun.english]
    en = [english_article(article, en_rest[0]), *en_rest]
    de = [ARTICLES[article, case][noun.gender]]
    if adjective:
        de.append(adjective[1] + ENDINGS[article, case][noun.gender])
    de.append(noun.german)
    return en, de


def _capitalize(words: list[str]) -> str:
    return " ".join([words[0][0].upper() + words[0][1:], *words[1:]])


def subjects() -> list[tuple[list[str], list[str], str]]:
    """Every subject: (English words, German words, auxiliary)."""
    out = [([en], [de], aux) for en, de, aux in PRONOUNS]
    for noun in SUBJECT_NOUNS:
        en, de = noun_phrase("the", None, noun, "nominative")
        out.append((en, de, "hat"))  # a noun subject is third person singular
    return out


def sentence_pair(subject, verb, article: str, adjective, noun: Noun) -> tuple[str, str]:
    """One English sentence and its German translation (perfect tense: the participle goes last)."""
    en_subj, de_subj, aux = subject
    en_past, participle, _ = verb
    en_obj, de_obj = noun_phrase(article, adjective, noun, "accusative")
    english = _capitalize([*en_subj, en_past, *en_obj])
    german = _capitalize([*de_subj, aux, *de_obj, participle])
    return english, german


def all_pairs() -> list[tuple[str, str]]:
    """Every (English, German) sentence of the grammar, in a fixed order (4320 pairs)."""
    pairs = []
    for subject in subjects():
        for verb in VERBS:
            for noun in OBJECT_NOUNS:
                if verb[2] and not noun.food:
                    continue
                for article in ("a", "the"):
                    for adjective in (None, *ADJECTIVES):
                        pairs.append(sentence_pair(subject, verb, article, adjective, noun))
    return pairs


def german_sentences() -> list[str]:
    """Every German sentence of the grammar."""
    return [de for _, de in all_pairs()]


def allowed_next_words(prefix: str) -> set[str]:
    """The words the grammar allows right after the German ``prefix`` (``"<eos>"`` if it can end there)."""
    words = prefix.split()
    out = set()
    for sentence in german_sentences():
        s = sentence.split()
        if s[: len(words)] == words:
            out.add(s[len(words)] if len(s) > len(words) else "<eos>")
    return out


def allowed_fill_ins(sentence: str, mask: str = "<mask>") -> set[str]:
    """The words that can replace ``mask`` in a German ``sentence`` so that the grammar makes it."""
    words = sentence.split()
    if words.count(mask) != 1:
        raise ValueError(f"sentence: expected exactly one {mask!r}, got {sentence!r}")
    i = words.index(mask)
    out = set()
    for candidate in german_sentences():
        c = candidate.split()
        if len(c) == len(words) and all(a == b for j, (a, b) in enumerate(zip(c, words)) if j != i):
            out.add(c[i])
    return out


def split_pairs(pairs: Sequence[tuple[str, str]], held_out: float = 0.1, seed: int = 0,
                keep_out: Sequence[str] = (EXAMPLE_SENTENCE[0],)) -> tuple[list, list]:
    """Shuffle with ``seed`` and hold out a fraction of whole sentences; ``keep_out`` are always held out.

    The running example is held out by default, so the translator never sees it in training.
    """
    require_number("held_out", held_out, 0, 1, open_low=True, open_high=True, expected="a fraction in (0, 1)")
    english = {en for en, _ in pairs}
    for sentence in keep_out:
        if sentence not in english:
            raise ValueError(f"keep_out: expected sentences of the corpus, got {sentence!r}")
    order = list(pairs)
    random.Random(seed).shuffle(order)
    n_held = round(held_out * len(order))
    forced = [p for p in order if p[0] in keep_out]
    rest = [p for p in order if p[0] not in keep_out]
    held = forced + rest[: max(n_held - len(forced), 0)]
    train = rest[max(n_held - len(forced), 0):]
    return train, held


def pad_batch(id_lists: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Lists of ids of different lengths -> ``(batch, longest)`` long tensor, padded on the right."""
    if not id_lists:
        raise ValueError("id_lists: expected at least one sequence, got none")
    longest = max(len(ids) for ids in id_lists)
    out = torch.full((len(id_lists), longest), pad_id, dtype=torch.long)
    for row, ids in enumerate(id_lists):
        out[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out


class Corpus:
    """The generated sentence pairs, split, with word-level tokenizers fitted on the training part.

    ``splits`` (a dict with at least ``"train"`` and ``"validation"``) replaces the random split.

    Source ids are the plain words (no ``<sos>``/``<eos>``); target ids are
    ``<sos> words <eos>``, ready for teacher forcing. Both use ``<pad> = 0``.
    """

    def __init__(self, held_out: float = 0.1, seed: int = 0, extra_specials: Sequence[str] = (),
                 splits: dict[str, list[tuple[str, str]]] | None = None):
        self.pairs = all_pairs()
        if splits is None:
            self.train, self.held_out = split_pairs(self.pairs, held_out, seed)
        else:  # e.g. transformer.evaluation.systematic_splits(): training on "train", held out = "validation"
            self.train, self.held_out = list(splits["train"]), list(splits["validation"])
        self.splits = splits
        specials = (*SPECIAL_TOKENS, *extra_specials)
        self.src = WordTokenizer.fit((en for en, _ in self.train), specials)
        self.tgt = WordTokenizer.fit((de for _, de in self.train), specials)
        self.pad_id = self.tgt.vocab.pad_id

    def __repr__(self) -> str:
        return (f"Corpus(train={len(self.train)}, held_out={len(self.held_out)}, "
                f"src_vocab={len(self.src.vocab)}, tgt_vocab={len(self.tgt.vocab)})")

    def encode_src(self, sentences: Sequence[str]) -> torch.Tensor:
        """English sentences -> ``(batch, T_e)`` ids."""
        return pad_batch([self.src.encode(s, add_special=False) for s in sentences], self.pad_id)

    def encode_tgt(self, sentences: Sequence[str]) -> torch.Tensor:
        """German sentences -> ``(batch, T_d)`` ids, ``<sos> ... <eos>``."""
        return pad_batch([self.tgt.encode(s) for s in sentences], self.pad_id)

    def decode_tgt(self, ids: torch.Tensor) -> list[str]:
        """``(batch, seq)`` target ids -> sentences, cut at the first ``<eos>``."""
        eos = self.tgt.vocab.eos_id
        out = []
        for row in ids.tolist():
            if eos in row:
                row = row[: row.index(eos)]
            out.append(self.tgt.decode(row))
        return out

    def batches(self, batch_size: int, generator: torch.Generator,
                pairs: Sequence[tuple[str, str]] | None = None) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """An endless stream of ``(src (batch, T_e), tgt (batch, T_d))`` drawn at random from ``pairs``."""
        require_positive_int("batch_size", batch_size)
        pairs = self.train if pairs is None else pairs
        src = [self.src.encode(en, add_special=False) for en, _ in pairs]
        tgt = [self.tgt.encode(de) for _, de in pairs]
        while True:
            rows = torch.randint(len(pairs), (batch_size,), generator=generator).tolist()
            yield pad_batch([src[i] for i in rows], self.pad_id), pad_batch([tgt[i] for i in rows], self.pad_id)


def maskable(ids: torch.Tensor, special_ids: Sequence[int]) -> torch.Tensor:
    """The positions a masking step may hide: ``ids (batch, seq)`` -> ``(batch, seq)`` bool, False at every
    id of ``special_ids`` (padding, ``<sos>``, ``<mask>``, ...). Every masking step of the package uses it."""
    return ~torch.isin(ids, torch.tensor(list(special_ids), dtype=ids.dtype))  # (batch, seq)

