"""Measuring a translator the way the field does (chapter 10).

- :func:`systematic_splits`: train, validation and test sets, plus two tests of
  *systematic* generalisation: adjective-noun combinations never seen together
  in training (every word of them is seen), and a noun never seen at all.
- :func:`corpus_scores`: corpus BLEU (Papineni et al., 2002) and chrF (Popović,
  2015), computed by ``sacrebleu`` (Post, 2018), with the signature that says
  exactly how they were computed.
- :func:`error_categories` and :func:`error_table`: which part of the German
  sentence a translation got wrong (subject, auxiliary, article, adjective,
  noun, participle, or its length).
- :class:`ValidationLoss`: a callback for :func:`~transformer.train.fit` that
  measures the loss on held-out pairs while the model trains.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import torch

from ._validate import require_number, require_positive_int
from .data import ADJECTIVES, EXAMPLE_SENTENCE, OBJECT_NOUNS, PRONOUNS, all_pairs
from .modes import eval_mode
from .train import translation_loss

# Adjective-noun pairs held out of training together; each word still appears in training with others.
UNSEEN_COMBINATIONS = (("old", "cat"), ("big", "bread"), ("good", "soup"), ("small", "dog"))
UNSEEN_NOUN = "egg"  # held out of training altogether: the word-level vocabulary will not know it
AUXILIARIES = {aux for _, _, aux in PRONOUNS}
ROLES = ("subject", "auxiliary", "article", "adjective", "noun", "participle", "length")


def _words(sentence: str) -> list[str]:
    return sentence.lower().split()


def systematic_splits(pairs: Sequence[tuple[str, str]] | None = None, seed: int = 0, fraction: float = 0.05,
                      unseen_combinations: Sequence[tuple[str, str]] = UNSEEN_COMBINATIONS,
                      unseen_noun: str = UNSEEN_NOUN) -> dict[str, list[tuple[str, str]]]:
    """``{"train", "validation", "test", "unseen_combination", "unseen_noun"}``: lists of (English, German).

    Sentences with ``unseen_noun``, or with an adjective directly before a noun as in
    ``unseen_combinations``, go to their own test sets; of the rest, a seeded shuffle gives
    ``fraction`` to validation, ``fraction`` to test (the running example "I ate an apple" among
    them), and the others to training.
    """
    _require_held_out(fraction, unseen_combinations, unseen_noun)
    pairs = list(all_pairs() if pairs is None else pairs)
    combos = {f"{a} {n}" for a, n in unseen_combinations}
    splits: dict[str, list[tuple[str, str]]] = {"unseen_noun": [], "unseen_combination": []}
    rest = []
    for en, de in pairs:
        words = _words(en)
        if unseen_noun in words:
            splits["unseen_noun"].append((en, de))
        elif any(" ".join(words[i:i + 2]) in combos for i in range(len(words) - 1)):
            splits["unseen_combination"].append((en, de))
        else:
            rest.append((en, de))
    random.Random(seed).shuffle(rest)
    n = round(fraction * len(pairs))
    example = [p for p in rest if p[0] == EXAMPLE_SENTENCE[0]]
    rest = [p for p in rest if p[0] != EXAMPLE_SENTENCE[0]]
    splits["validation"], splits["test"] = rest[:n], example + rest[n:2 * n - len(example)]
    splits["train"] = rest[2 * n - len(example):]
    return {name: splits[name] for name in ("train", "validation", "test", "unseen_combination", "unseen_noun")}


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus BLEU and chrF (0-100) of ``hypotheses`` against one reference each, with their signatures.

    Computed by ``sacrebleu`` with its defaults (BLEU: 4-grams, ``13a`` tokenisation,
    exponential smoothing; chrF: character 6-grams, beta 2).
    """
    import sacrebleu

    _require_one_per_reference(hypotheses, references)
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    refs = [list(references)]
    return {"BLEU": bleu.corpus_score(list(hypotheses), refs).score, "chrF": chrf.corpus_score(list(hypotheses),
            refs).score, "BLEU signature": str(bleu.get_signature()), "chrF signature": str(chrf.get_signature())}


def roles(german: str) -> list[str]:
    """The part each word of a German sentence of the grammar plays: subject, auxiliary, article, [adjective],
    noun, participle (``"Der Mann hat einen alten Hund gesehen"`` -> 2 subject words, then one of each)."""
    words = german.split()
    aux = next((i for i, w in enumerate(words) if i > 0 and w in AUXILIARIES), None)
    if aux is None or len(words) - aux not in (4, 5):
        raise ValueError(f"german: expected a sentence of the grammar (subject, auxiliary, object, participle), "
                         f"got {german!r}")
    middle = ["article", "adjective", "noun"] if len(words) - aux == 5 else ["article", "noun"]
    return ["subject"] * aux + ["auxiliary", *middle, "participle"]


def error_categories(hypothesis: str, reference: str) -> set[str]:
    """The parts of ``reference`` that ``hypothesis`` got wrong; ``{"length"}`` if it has a different number
    of words; the empty set if it is exact."""
    hyp, ref = hypothesis.split(), reference.split()
    if len(hyp) != len(ref):
        return {"length"}
    return {role for role, h, r in zip(roles(reference), hyp, ref) if h != r}


def error_table(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, int]:
    """How many translations are exact, and how many got each part wrong (a translation may count in several)."""
    counts = Counter({"exact": 0, **dict.fromkeys(ROLES, 0)})
    for hyp, ref in zip(hypotheses, references, strict=True):
        wrong = error_categories(hyp, ref)
        counts.update(wrong or {"exact"})
    return dict(counts)


class ValidationLoss:
    """``fit(..., callback=ValidationLoss(model, batch))``: every ``every`` steps, the cross-entropy of
    ``model`` on one fixed held-out ``batch = (src, tgt)``, in eval mode and without gradients (no
    label smoothing unless asked, so it is the plain cross-entropy per target token).

    ``steps`` and ``losses`` hold the measurements; the model's mode is restored after each one.
    """

    def __init__(self, model, batch: tuple[torch.Tensor, torch.Tensor], every: int = 25, pad_id: int = 0,
                 label_smoothing: float = 0.0):
        require_positive_int("every", every)
        self.model, self.batch, self.every = model, batch, every
        self.pad_id, self.label_smoothing = pad_id, label_smoothing
        self.steps: list[int] = []
        self.losses: list[float] = []

    def __call__(self, step: int, loss: float) -> None:
        if step % self.every:
            return
        with eval_mode(self.model):
            value = translation_loss(self.model, self.batch, self.pad_id, self.label_smoothing).item()
        self.steps.append(step)
        self.losses.append(value)


# ----------------------------------------------------------------------------- argument checks


def _require_held_out(fraction, unseen_combinations, unseen_noun) -> None:
    """:func:`systematic_splits`' held-out sets: a fraction below one half, words of the grammar."""
    require_number("fraction", fraction, 0, 0.5, open_low=True, open_high=True, expected="a fraction in (0, 0.5)")
    known = {n.english for n in OBJECT_NOUNS}
    adjectives = {a for a, _ in ADJECTIVES}
    for adjective, noun in unseen_combinations:
        if adjective not in adjectives or noun not in known:
            raise ValueError(f"unseen_combinations: expected (adjective, noun) of the grammar, got {(adjective, noun)}")
    if unseen_noun not in known:
        raise ValueError(f"unseen_noun: expected one of {sorted(known)}, got {unseen_noun!r}")


def _require_one_per_reference(hypotheses, references) -> None:
    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"hypotheses: expected one per reference ({len(references)}, at least 1), "
                         f"got {len(hypotheses)}")
