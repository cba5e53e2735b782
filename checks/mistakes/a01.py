"""The known mistakes of the exercises of chapter 1, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a01` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

from transformer.byte_bpe import BYTE_TO_CHAR, PIECE
from transformer.tokenization import WordTokenizer, apply_merges

from ..core import Mistake


def _count_pairs_unweighted(words):
    counts = {}
    for symbols in words:
        for p in zip(symbols, symbols[1:]):
            counts[p] = counts.get(p, 0) + 1
    return counts


def _count_pairs_once_per_word(words):
    counts = {}
    for symbols, freq in words.items():
        for p in set(zip(symbols, symbols[1:])):
            counts[p] = counts.get(p, 0) + freq
    return counts


def _count_character_pairs(words):
    counts = {}
    for symbols, freq in words.items():
        s = "".join(symbols)
        for p in zip(s, s[1:]):
            counts[p] = counts.get(p, 0) + freq
    return counts


COUNT_PAIRS_MISTAKES = [
    Mistake("unweighted", "weight every pair by the frequency of its word: a pair in a word seen 5 times counts 5.",
            _count_pairs_unweighted),
    Mistake("once per word", "a pair that occurs twice in one word counts twice (look at 'banana').",
            _count_pairs_once_per_word),
    Mistake("characters", "pairs are pairs of symbols, not of characters: after a merge a symbol like 'lo' is one "
            "unit.", _count_character_pairs),
]


def _merge_word(symbols, pair, joined, first_only=False, right_to_left=False):
    s = list(symbols[::-1] if right_to_left else symbols)
    a, b = pair[::-1] if right_to_left else pair
    out, i, done = [], 0, False
    while i < len(s):
        if not (first_only and done) and i + 1 < len(s) and s[i] == a and s[i + 1] == b:
            out.append(joined)
            i, done = i + 2, True
        else:
            out.append(s[i])
            i += 1
    return tuple(out[::-1] if right_to_left else out)


def _merged(words, merge_word, add: bool = True):
    out = {}
    for symbols, freq in words.items():
        key = merge_word(symbols)
        out[key] = out.get(key, 0) + freq if add else freq
    return out


def _replaced_in_the_joined_string(symbols, pair):
    a, b = pair
    return tuple(" ".join(symbols).replace(f"{a} {b}", a + b).split(" "))


MERGE_PAIR_MISTAKES = [
    Mistake("first only", "merge every occurrence of the pair in a word, not only the first.",
            lambda pair, words: _merged(words, lambda s: _merge_word(s, pair, "".join(pair), first_only=True))),
    Mistake("right to left", "merge from left to right: in a a a the first two symbols join.",
            lambda pair, words: _merged(words, lambda s: _merge_word(s, pair, "".join(pair), right_to_left=True))),
    Mistake("string replacement", "only whole symbols match: 'lo' followed by 'w' is not the pair ('o', 'w') "
            "(string replacement on the joined symbols does this).",
            lambda pair, words: _merged(words, lambda s: _replaced_in_the_joined_string(s, pair))),
    Mistake("frequencies not added", "two words that end up with the same symbols must add their frequencies.",
            lambda pair, words: _merged(words, lambda s: _merge_word(s, pair, "".join(pair)), add=False)),
    Mistake("joined with a space", "the new symbol is the two symbols glued together, a + b, without a space.",
            lambda pair, words: _merged(words, lambda s: _merge_word(s, pair, " ".join(pair)))),
    Mistake("nothing merged", "nothing was merged: replace each occurrence of the pair by one symbol a + b.",
            lambda pair, words: dict(words)),
]


class _Tokenizer:
    """The exercise's tokenizer, ``cls(texts)`` with ``itos``, ``stoi``, ``encode`` and ``decode``, done right."""

    def __init__(self, texts):
        self.tokenizer = WordTokenizer.fit(texts)
        self.itos, self.stoi = self.tokenizer.vocab.itos, self.tokenizer.vocab.stoi

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)


class _NoSpecials(_Tokenizer):
    def encode(self, text):
        return super().encode(text)[1:-1]


class _UnknownWordsDropped(_Tokenizer):
    def encode(self, text):
        ids = super().encode(text)
        return [ids[0], *[i for i, w in zip(ids[1:-1], text.split()) if w in self.stoi], ids[-1]]


class _UnknownWordsAsPad(_Tokenizer):
    def encode(self, text):
        return [self.stoi["<pad>"] if i == self.stoi["<unk>"] else i for i in super().encode(text)]


WORD_TOKENIZER_MISTAKES = [
    Mistake("no specials", "encode adds <sos> (id 1) at the start and <eos> (id 2) at the end.", _NoSpecials),
    Mistake("unknown words dropped", "an unknown word still takes its place: it becomes <unk> (id 3).",
            _UnknownWordsDropped),
    Mistake("unknown words as pad", "an unknown word becomes <unk> (id 3), not <pad> (id 0).", _UnknownWordsAsPad),
]


def _leftmost_known_first(symbols, ranks):
    while (i := next((i for i, p in enumerate(zip(symbols, symbols[1:])) if p in ranks), None)) is not None:
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


def _first_occurrence_of_each(symbols, ranks):
    for pair in ranks:  # in rank order, once each
        i = next((i for i, p in enumerate(zip(symbols, symbols[1:])) if p == pair), None)
        if i is not None:
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


def _utf8_chars(piece):
    return [BYTE_TO_CHAR[b] for b in piece.encode("utf-8")]


def _byte_tokens(chars=_utf8_chars, pieces=PIECE.findall, merge=apply_merges):
    """``byte_tokens(text, merges)`` with one step swapped for a wrong one."""
    def byte_tokens(text, merges):
        ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
        return [token for piece in pieces(text) for token in merge(list(chars(piece)), ranks)]
    return byte_tokens


BYTE_TOKENS_MISTAKES = [
    Mistake("no byte map", "write each piece as its UTF-8 bytes, one printable character per byte (GPT-2's map): "
            "the space becomes 'Ġ', 'é' the two characters 'Ã©'.", _byte_tokens(chars=list)),
    Mistake("characters, not bytes", "map the UTF-8 bytes of a piece, piece.encode('utf-8'), not its characters: "
            "'é' is two bytes, 'Ã©', and '日' three.", _byte_tokens(chars=lambda p: [BYTE_TO_CHAR.get(ord(c), c)
                                                                                      for c in p])),
    Mistake("bytes as Latin-1", "the 68 bytes that are not printable (the space, the newline, the controls, bytes 127 "
            "to 160 and 173) do not stand for themselves: they get chr(256), chr(257), ... in byte order, so the "
            "space is 'Ġ'.", _byte_tokens(chars=lambda p: p.encode("utf-8").decode("latin-1"))),
    Mistake("chr(256 + byte)", "the 68 bytes that are not printable get chr(256), chr(257), ... counted among "
            "themselves: byte 127 gets chr(289), not chr(256 + 127).",
            _byte_tokens(chars=lambda p: [BYTE_TO_CHAR[b] if ord(BYTE_TO_CHAR[b]) < 256 else chr(256 + b)
                                          for b in p.encode("utf-8")])),
    Mistake("merges across pieces", "cut the text into pieces with PIECE.findall(text) first: merges never cross "
            "from one piece to the next.", _byte_tokens(pieces=lambda text: [text])),
    Mistake("split on white space", "cut the text with PIECE.findall(text), not text.split(): a piece keeps the "
            "space before it (it becomes 'Ġ') and punctuation is a piece of its own.", _byte_tokens(pieces=str.split)),
    Mistake("order of appearance", "apply the merges by rank: of the pairs in a piece, merge the one learned first "
            "(the lowest index in merges), not the leftmost pair that has a merge.",
            _byte_tokens(merge=_leftmost_known_first)),
    Mistake("first occurrence only", "merge every occurrence of a pair in a piece, not only the first.",
            _byte_tokens(merge=_first_occurrence_of_each)),
]
