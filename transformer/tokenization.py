"""Tokenization: text -> tokens -> ids, and back (chapter 1).

Two tokenizers are taught: a word-level one with a vocabulary and special tokens, and byte-pair encoding
(BPE) trained from scratch; :mod:`transformer.byte_bpe` runs the same BPE steps on bytes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

import torch

from ._validate import require_choice, require_index, require_int, require_positive_int, require_token_ids

PAD, SOS, EOS, UNK = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, SOS, EOS, UNK)
TIE_BREAKS = ("alphabetical", "vocab_order")

_WORD = re.compile(r"<[a-z]+>|\w+|[^\w\s]")


def split_words(text: str) -> list[str]:
    """Split on white space and punctuation: ``"I ate an apple."`` -> ``["I", "ate", "an", "apple", "."]``.

    Special tokens written in the text, such as ``<eos>``, stay whole.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    return _WORD.findall(text)


class Vocabulary:
    """A two-way map between tokens and ids. Special tokens take the first ids."""

    def __init__(self, tokens: Iterable[str], specials: Sequence[str] = SPECIAL_TOKENS):
        self.itos: list[str] = []
        self.stoi: dict[str, int] = {}
        for tok in [*specials, *tokens]:
            if tok not in self.stoi:
                self.stoi[tok] = len(self.itos)
                self.itos.append(tok)
        self.specials = tuple(specials)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, specials={self.specials})"

    def id_of(self, token: str) -> int:
        """The id of ``token``; an unknown token maps to ``<unk>`` or raises if there is none."""
        if token in self.stoi:
            return self.stoi[token]
        if UNK in self.stoi:
            return self.stoi[UNK]
        raise ValueError(
            f"token: expected a token in the vocabulary (size {len(self)}) or a vocabulary "
            f"with {UNK!r}, got unknown token {token!r}"
        )

    def token_of(self, i: int) -> str:
        """The token of id ``i``: an int, a NumPy integer or a one-element integer tensor (an item of a tensor of
        ids), never a bool."""
        i = require_index("id", i, 0, len(self) - 1)
        return self.itos[i]

    @property
    def pad_id(self) -> int | None:
        return self.stoi.get(PAD)

    @property
    def sos_id(self) -> int | None:
        return self.stoi.get(SOS)

    @property
    def eos_id(self) -> int | None:
        return self.stoi.get(EOS)

    @property
    def unk_id(self) -> int | None:
        return self.stoi.get(UNK)


class WordTokenizer:
    """Word-level tokenizer: ``encode("I ate an apple") -> [1, 4, 5, 6, 7, 2]`` (with ``<sos>``/``<eos>``)."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    def __repr__(self) -> str:
        return f"WordTokenizer(vocab_size={len(self.vocab)})"

    @classmethod
    def fit(cls, texts: Iterable[str], specials: Sequence[str] = SPECIAL_TOKENS,
            min_count: int = 1) -> "WordTokenizer":
        """Build the vocabulary from ``texts``: specials first, then words by first appearance."""
        _require_texts(texts)
        counts: Counter[str] = Counter()
        order: dict[str, None] = {}
        for text in texts:
            for w in split_words(text):
                counts[w] += 1
                order.setdefault(w, None)
        return cls(Vocabulary([w for w in order if counts[w] >= min_count], specials))

    def tokenize(self, text: str) -> list[str]:
        return split_words(text)

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        ids = [self.vocab.id_of(w) for w in self.tokenize(text)]
        if add_special:
            self._require_frame()
            ids = [self.vocab.sos_id, *ids, self.vocab.eos_id]
        return ids

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        toks = [self.vocab.token_of(i) for i in ids]
        if skip_special:
            toks = [t for t in toks if t not in self.vocab.specials]
        return " ".join(toks)

    def _require_frame(self) -> None:
        """``add_special=True`` needs ``<sos>`` and ``<eos>`` in the vocabulary."""
        for name, tok in ((SOS, self.vocab.sos_id), (EOS, self.vocab.eos_id)):
            if tok is None:
                raise ValueError(f"add_special: expected a vocabulary with {name}, got none; pass add_special=False")


def one_hot(ids, vocab_size: int) -> torch.Tensor:
    """One-hot rows: ``ids`` of shape ``(...,)`` -> ``(..., vocab_size)`` float (chapter 1)."""
    ids = torch.as_tensor(ids)
    if not ids.is_floating_point() and not ids.is_complex() and ids.dtype != torch.bool:
        ids = ids.long()  # any integer type holds ids here (a NumPy uint8 array, a list of ints)
    _require_one_hot(ids, vocab_size)
    return torch.nn.functional.one_hot(ids, vocab_size).float()


# ---------------------------------------------------------------- BPE


def count_pairs(words: dict[tuple[str, ...], int]) -> Counter[tuple[str, str]]:
    """How often each adjacent pair of symbols occurs, weighted by word frequency."""
    _check_words(words)
    return _count_pairs(words)


def _count_pairs(words: dict[tuple[str, ...], int]) -> Counter[tuple[str, str]]:
    """:func:`count_pairs` on ``words`` already checked."""
    pairs: Counter[tuple[str, str]] = Counter()
    for symbols, freq in words.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq
    return pairs


def merge_pair(pair: tuple[str, str], words: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    """Replace every occurrence of ``pair`` by one joined symbol (one BPE merge step)."""
    _check_pair(pair)
    _check_words(words)
    return _merge_pair(pair, words)


def _merge_pair(pair: tuple[str, str], words: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    """:func:`merge_pair` on arguments already checked."""
    a, b = pair
    merged: dict[tuple[str, ...], int] = {}
    for symbols, freq in words.items():
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + freq
    return merged


def merge_steps(words: dict[tuple[str, ...], int], order: dict[str, int], tie_break: str) -> Iterator:
    """The merges of BPE training on ``words``, one per step, until no pair is left: each step merges the most
    frequent adjacent pair; ties go to the alphabetically first pair (``"alphabetical"``) or to the pair whose
    symbols have the smaller ids in ``order`` (``"vocab_order"``). ``order`` (symbol -> id) gains each merged
    symbol before the step is yielded. Shared by :class:`BPETokenizer` and the byte-level tokenizer."""
    while pairs := _count_pairs(words):
        best = min(pairs, key=(lambda p: (-pairs[p], p)) if tie_break == "alphabetical" else
                   (lambda p: (-pairs[p], order[p[0]], order[p[1]])))
        order.setdefault(best[0] + best[1], len(order))
        words = _merge_pair(best, words)
        yield best


def apply_merges(word: str | list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """``word``'s characters (or a list of symbols, copied) with the learned merges applied (``ranks``: pair -> its
    step): the earliest-learned pair first, the leftmost among equals, until none is left."""
    symbols = list(word)
    while len(symbols) > 1:
        rank, i = min((ranks.get(p, len(ranks)), i) for i, p in enumerate(zip(symbols, symbols[1:])))
        if rank == len(ranks):
            break
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


class BPETokenizer:
    """Byte-pair encoding learned from a corpus: ``merges`` in the order they were learned.

    Ties. When several pairs are equally frequent, ``train`` needs a rule. The default,
    ``tie_break="alphabetical"``, takes the alphabetically first pair (the rule chapter 1
    works by hand). Hugging Face ``tokenizers``' ``BpeTrainer`` keeps its candidates in a
    heap ordered by count, then by the smaller pair of *ids*, ``(id(a), id(b))``: the
    characters get their ids in code-point order and every merged symbol the next id as it
    is made. ``tie_break="vocab_order"`` is that rule, and reproduces the merges of
    ``tokenizers`` (checked against it in ``tests/test_bpe.py``). The two rules agree while
    ties involve only characters, and part at the first tie with a merged symbol: ``"co"``
    sorts before ``"o"``, but was made after it.
    """

    def __init__(self, merges: Sequence[tuple[str, str]], alphabet: Iterable[str]):
        self.merges = list(merges)
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self.alphabet = sorted(set(alphabet))
        self.vocab = Vocabulary(self.alphabet + [a + b for a, b in self.merges])

    def __repr__(self) -> str:
        return f"BPETokenizer(merges={len(self.merges)}, vocab_size={len(self.vocab)})"

    def truncated(self, n_merges: int) -> "BPETokenizer":
        """The tokenizer with only the first ``n_merges`` merges.

        Training is greedy, so this is what training with ``n_merges`` merges would
        have learned; its ids are the first ids of this tokenizer's vocabulary.
        """
        require_int("n_merges", n_merges, 0, len(self.merges))
        return BPETokenizer(self.merges[:n_merges], self.alphabet)

    @classmethod
    def train(cls, texts: Iterable[str], n_merges: int, tie_break: str = "alphabetical") -> "BPETokenizer":
        """Learn ``n_merges`` merges from the words of ``texts`` (split on white space), by :func:`merge_steps`;
        with ``tie_break="vocab_order"`` the symbols' ids are the characters in code-point order, then the merged
        symbols as they are made: the rule of the ``tokenizers`` library (see the class docstring)."""
        _require_training(texts, n_merges, tie_break)
        counts = Counter(w for text in texts for w in text.split())
        words = {tuple(w): c for w, c in counts.items()}
        alphabet = {ch for w in words for ch in w}
        order = {ch: i for i, ch in enumerate(sorted(alphabet))}  # the rank of each symbol in the vocabulary
        merges = list(islice(merge_steps(words, order, tie_break), n_merges))
        return cls(merges, alphabet)

    def tokenize_word(self, word: str) -> list[str]:
        """Split ``word`` into characters, then apply the learned merges, earliest merge first."""
        return apply_merges(word, self.ranks)

    def tokenize(self, text: str) -> list[str]:
        return [s for w in text.split() for s in self.tokenize_word(w)]

    def encode(self, text: str) -> list[int]:
        return [self.vocab.id_of(s) for s in self.tokenize(text)]


# ----------------------------------------------------------------------------- argument checks


def _require_texts(texts) -> None:
    # A bare string would be read one character at a time, as if every character were a text.
    if isinstance(texts, str):
        raise TypeError("texts: expected an iterable of strings, such as a list of sentences, "
                        "got a single str; wrap it in a list")


def _require_training(texts, n_merges, tie_break) -> None:
    _require_texts(texts)
    require_int("n_merges", n_merges, low=0)
    require_choice("tie_break", tie_break, TIE_BREAKS)


def _require_one_hot(ids: torch.Tensor, vocab_size: int) -> None:
    require_positive_int("vocab_size", vocab_size)
    require_token_ids("ids", ids, vocab_size)


def _check_words(words) -> None:
    """``words`` maps tuples of symbols to counts: ``{('l', 'o', 'w'): 5}``."""
    if not isinstance(words, dict):
        raise TypeError(f"words: expected a dict from symbol tuples to counts, got {type(words).__name__}")
    for symbols, count in words.items():
        if not isinstance(symbols, tuple):
            raise TypeError(f"words: expected keys that are tuples of symbols like ('l', 'o', 'w'), got {symbols!r}")
        require_int("words", count, low=0, expected=f"an int >= 0 as the count of {symbols!r}")


def _check_pair(pair) -> None:
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
        raise TypeError(f"pair: expected a tuple of two symbols like ('l', 'o'), got {pair!r}")
