"""The reference of exercise 5 of assignment 01, byte-level BPE: random texts to tokenize, and the tokens of
``tokenizers``' byte-level BPE on them; its hidden test, ``ex5_byte_tokens``, is in ``a01.py``."""

from __future__ import annotations

import json

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from grader.hidden.judge import describe

WORDS = ("the", "then", "theme", "banana", "bananas", "apple", "ate", "I", "café", "naïve", "Straße", "über", "déjà",
         "Ελλάδα", "μήλο", "мир", "日本", "苹果", "我吃了", "Ünïcödé")
SIGNS = ("!", "?", ".", ",", ":", ";", "...", "(", ")", "-", '"', "'s", "'t", "'ll", "#", "€", "£", "@", "🦜", "🍎",
         "👍🏽", "_")
SPACES = (" ", " ", " ", " ", "", "  ", "\n", "\t", " \n", "   ", "\n\n")
# Characters on which GPT-2's pattern (the regex module's \p{L}, \p{N}) and the exercise's PIECE (Python's re) cut
# differently (transformer/byte_bpe.py): four separators and six numbers that are not digits. No text holds them.
APART = {*map(chr, range(0x1C, 0x20)), "²", "³", "¹", "¼", "½", "¾"}


def random_text(r) -> str:
    """Words (accents, Greek, Cyrillic, Chinese), numbers, signs and emoji, with white space between some."""
    parts = []
    for _ in range(r.randint(3, 12)):
        kind = r.random()
        if kind < 0.55:
            word = r.choice(WORDS)
            parts.append(word.capitalize() if r.random() < 0.2 else word)
        elif kind < 0.7:
            parts.append(str(r.randint(0, 10 ** r.randint(1, 5))))
        else:
            parts.append(r.choice(SIGNS))
        parts.append(r.choice(SPACES))
    return "".join(parts)


def abc_text(r) -> str:
    """Words of the letters a, b, c (whose merges overlap a lot), between runs of one to three spaces."""
    return "".join(r.choice((" ", "  ", "   ")) + "".join(r.choices("abc", k=r.randint(2, 7)))
                   for _ in range(r.randint(4, 8)))


def byte_level(tok: Tokenizer) -> Tokenizer:
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tok


def learned_merges(texts: list[str], n: int) -> list[tuple[str, str]]:
    """The first ``n`` merges ``tokenizers``' BpeTrainer learns on ``texts``, starting from the 256 bytes."""
    tok = byte_level(Tokenizer(models.BPE()))
    trainer = trainers.BpeTrainer(vocab_size=256 + n, min_frequency=0, special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def byte_bpe_tokens(text: str, merges) -> list[str]:
    """The tokens of ``text`` by ``tokenizers``' byte-level BPE with ``merges``."""
    vocab = {char: i for i, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return byte_level(Tokenizer(models.BPE(vocab=vocab, merges=list(merges)))).encode(text).tokens


def byte_problem(got, text, merges) -> str | None:
    if not isinstance(got, list):
        return f"expected a list of tokens (str), got {describe(got)}"
    if not all(isinstance(t, str) for t in got):
        return f"a token is {describe(next(t for t in got if not isinstance(t, str)))}; expected a str"
    want = byte_bpe_tokens(text, merges)
    if got == want:
        return None
    if "".join(got) != "".join(want):
        return "the tokens do not spell the UTF-8 bytes of the text, one printable character per byte (GPT-2's map)"
    return "the tokens spell the bytes of the text, but they are merged wrongly"
