"""A tiny generated English for the book's trained model (chapters 2 to 5 and 7).

Three noun classes, each noun singular or plural::

    animals  animal dog cat horse cow fox owl chicken
    places   street road river bridge field park alley avenue
    objects  box ball cup book apple chair egg umbrella

Each class has its own adjectives (an animal is *tired*, a place *wide*, an
object *heavy*), the verb agrees with its subject in number (*the dog
sleeps*, *the dogs sleep*; *is*/*are*, *was*/*were*), and a singular noun
takes *the*, *a* or, before a vowel, *an* (*an owl*, *an apple*): the word
just before a hidden noun tells about it. Half the sentences are the
lectures' pronoun sentences::

    the animal didn't cross the street because it was too tired
    the animal didn't cross the street because it was too wide

Two nouns of different classes, then a pronoun whose referent only the last
word tells: the noun of the adjective's class. The pronoun and its verb agree
with that referent (*it was* / *they were*), so filling in a hidden pronoun
(or checking a visible one) means finding the referent. Every sentence comes
from a seeded :class:`random.Random`: one seed, one corpus.
"""

from __future__ import annotations

import random

from .._validate import require_int, require_probability

CLASSES: dict[str, tuple[str, ...]] = {
    "animal": ("animal", "dog", "cat", "horse", "cow", "fox", "owl", "chicken"),
    "place": ("street", "road", "river", "bridge", "field", "park", "alley", "avenue"),
    "object": ("box", "ball", "cup", "book", "apple", "chair", "egg", "umbrella"),
}
ADJECTIVES: dict[str, tuple[str, ...]] = {
    "animal": ("tired", "hungry", "scared", "sleepy", "angry", "weak"),
    "place": ("wide", "long", "busy", "crowded", "muddy", "icy"),
    "object": ("heavy", "full", "fragile", "sharp", "broken", "empty"),
}
# Frames of the pronoun sentences: (first noun's class, verb phrase, second noun's class).
FRAMES = (("animal", "didn't cross", "place"), ("animal", "didn't carry", "object"),
          ("place", "stopped", "animal"), ("object", "slowed", "animal"))
PRONOUN = {"singular": ("it", "was"), "plural": ("they", "were")}
LECTURE_SENTENCES = ("the animal didn't cross the street because it was too tired",
                     "the animal didn't cross the street because it was too wide")
ATTRIBUTIVE = 0.4  # the chance of an adjective before a noun, outside the pronoun sentences
_INTRANSITIVE = (("sleeps", "sleep"), ("runs", "run"), ("waits", "wait"), ("plays", "play"))
_COPULA = (("is", "are"), ("was", "were"))
_TRANSITIVE = {"place": ("crossed", "reached", "left"), "object": ("carried", "found", "dropped")}


def plural(noun: str) -> str:
    """``"dog"`` -> ``"dogs"``, ``"box"`` -> ``"boxes"``."""
    return noun + ("es" if noun.endswith("x") else "s")


NOUN_CLASS: dict[str, str] = {form: cls for cls, nouns in CLASSES.items()
                              for noun in nouns for form in (noun, plural(noun))}
_SINGULAR = {noun for nouns in CLASSES.values() for noun in nouns}
ADJECTIVE_CLASS: dict[str, str] = {adj: cls for cls, adjs in ADJECTIVES.items() for adj in adjs}


def words() -> list[str]:
    """Every word of the grammar, in a fixed order (nouns by class, singular then plural; then the rest)."""
    nouns = [form for nouns in CLASSES.values() for form in (*nouns, *map(plural, nouns))]
    adjectives = [adj for adjs in ADJECTIVES.values() for adj in adjs]
    verbs = [v for pair in (*_INTRANSITIVE, *_COPULA) for v in pair]
    verbs += [v for vs in _TRANSITIVE.values() for v in vs] + ["cross", "carry", "stopped", "slowed"]
    rest = ["the", "a", "an", "didn", "'", "t", "because", "it", "they", "too", "in"]
    return nouns + adjectives + verbs + rest


def article(noun: str, definite: bool, next_word: str | None = None) -> str:
    """``the`` if ``definite`` or ``noun`` is plural; else ``an`` before a vowel, ``a`` before a consonant
    (the vowel of ``next_word``, an adjective before the noun, if given)."""
    if definite or noun not in _SINGULAR:
        return "the"
    return "an" if (next_word or noun)[0] in "aeiou" else "a"


def _noun(rng: random.Random, cls: str, adjective: float = 0.0) -> tuple[str, str]:
    """A noun phrase of class ``cls`` and its number: ``("the dogs", "plural")``, ``("an icy road", "singular")``.

    With probability ``adjective`` an adjective of the class stands before the noun.
    """
    noun = rng.choice(CLASSES[cls])
    noun, number = (noun, "singular") if rng.random() < 0.5 else (plural(noun), "plural")
    adj = rng.choice(ADJECTIVES[cls]) if rng.random() < adjective else None
    words = [article(noun, rng.random() < 0.5, adj), adj, noun]
    return " ".join(w for w in words if w), number


def pronoun_sentence(rng: random.Random) -> str:
    """``<noun phrase> <verb> <noun phrase> because <it was | they were> too <adjective>``."""
    first, verb, second = rng.choice(FRAMES)
    (n1, num1), (n2, num2) = _noun(rng, first), _noun(rng, second)
    refers_to_first = rng.random() < 0.5
    cls, number = (first, num1) if refers_to_first else (second, num2)
    pronoun, be = PRONOUN[number]
    return f"{n1} {verb} {n2} because {pronoun} {be} too {rng.choice(ADJECTIVES[cls])}"


def simple_sentence(rng: random.Random) -> str:
    """A sentence without a pronoun: agreement (*the dogs sleep*) and class-typed verbs and adjectives."""
    kind, p = rng.randrange(4), ATTRIBUTIVE
    if kind == 0:  # the dog sleeps / the dogs sleep
        noun, number = _noun(rng, "animal", p)
        return f"{noun} {rng.choice(_INTRANSITIVE)[number == 'plural']}"
    if kind == 1:  # the river is wide / the boxes were heavy
        cls = rng.choice(list(CLASSES))
        noun, number = _noun(rng, cls, p)
        return f"{noun} {rng.choice(_COPULA)[number == 'plural']} {rng.choice(ADJECTIVES[cls])}"
    if kind == 2:  # the dog crossed the icy river / a hungry cat found the apples
        cls = rng.choice(list(_TRANSITIVE))
        return f"{_noun(rng, 'animal', p)[0]} {rng.choice(_TRANSITIVE[cls])} {_noun(rng, cls, p)[0]}"
    return f"{_noun(rng, 'animal', p)[0]} found {_noun(rng, 'object', p)[0]} in {_noun(rng, 'place', p)[0]}"


def generate(n: int, seed: int = 0, pronoun_share: float = 0.5) -> list[str]:
    """``n`` sentences drawn with ``random.Random(seed)``; a share ``pronoun_share`` of them are pronoun sentences."""
    require_int("n", n, low=0)
    require_probability("pronoun_share", pronoun_share)
    rng = random.Random(seed)
    return [pronoun_sentence(rng) if rng.random() < pronoun_share else simple_sentence(rng) for _ in range(n)]


def split(n: int = 40000, n_validation: int = 1000, seed: int = 0) -> tuple[list[str], list[str]]:
    """``(train, validation)``: ``n`` generated sentences, of which ``n_validation`` distinct ones are held out.

    No validation sentence occurs in ``train`` (which keeps its repeats, so the
    short sentences stay frequent), nor do the two :data:`LECTURE_SENTENCES`:
    the model meets them first in the book.
    """
    sentences = generate(n, seed)
    distinct = sorted(set(sentences) - set(LECTURE_SENTENCES))
    random.Random(seed + 1).shuffle(distinct)
    validation = distinct[:n_validation]
    held_out = set(validation) | set(LECTURE_SENTENCES)
    return [s for s in sentences if s not in held_out], validation


def referent(sentence: str) -> tuple[str, str]:
    """The noun a pronoun sentence's pronoun refers to, and the other noun: the one of the last word's class.

    ``referent("the animal didn't cross the street because it was too wide")`` -> ``("street", "animal")``.
    """
    tokens = sentence.split()
    nouns = [w for w in tokens if w in NOUN_CLASS]
    if len(nouns) != 2 or tokens[-1] not in ADJECTIVE_CLASS or "because" not in tokens:
        raise ValueError(f"sentence: expected a pronoun sentence like {LECTURE_SENTENCES[0]!r}, got {sentence!r}")
    cls = ADJECTIVE_CLASS[tokens[-1]]
    found = [n for n in nouns if NOUN_CLASS[n] == cls]
    if len(found) != 1:
        raise ValueError(f"sentence: expected one noun of class {cls!r} (the adjective's), got {nouns}")
    return found[0], next(n for n in nouns if n != found[0])


def is_pronoun_sentence(sentence: str) -> bool:
    return " because " in sentence
