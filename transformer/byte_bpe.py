"""Byte-level BPE (chapter 1): GPT-2's byte alphabet and pre-tokenizer, and BPE learned on bytes.

Chapter 1's :class:`~transformer.tokenization.BPETokenizer` starts from the characters of its corpus, so a
character it never saw has no token. Byte-level BPE starts from the 256 possible bytes instead: any text, in
any script, is a sequence of UTF-8 bytes, so every text can be encoded and nothing needs ``<unk>``. Three steps,
as in GPT-2 (Radford et al. 2019) and in the ``tokenizers`` library's ``ByteLevel`` pieces:

1. :func:`pre_tokenize` cuts the text into pieces with GPT-2's pattern (letters, digits, other symbols, each
   with the space before it; white space; English contractions), so that no merge crosses them;
2. each piece becomes its UTF-8 bytes, each byte written as one printable character (:func:`bytes_to_unicode`:
   byte 32, the space, is ``"Ġ"``);
3. BPE learns merges on those strings (:meth:`ByteBPETokenizer.train`) and applies them
   (:meth:`ByteBPETokenizer.encode`); :meth:`ByteBPETokenizer.decode` maps the characters back to bytes.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ._validate import require_positive_int
from .tokenization import apply_merges, merge_steps

# GPT-2's pattern (openai/gpt-2, src/encoder.py), written for the third-party ``regex`` module:
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# The same with the standard library's ``re``, which has no \p{L} (letter) or \p{N} (number):
# a letter is a word character that is not a digit or "_", a number is a decimal digit \d.
PIECE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
# Where the two differ (tests/test_byte_bpe.py): numbers that are not decimal digits (², ½, Ⅻ) are \p{N} for GPT-2
# but letters here ("x½" is one piece here, two there); the separators U+001C to U+001F are white space for
# ``re`` (as for str.isspace) but not for GPT-2's pattern. Elsewhere, for the texts tested, the pieces are equal.
N_BYTES = 256


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte (0..255) to one printable character, as a dict ``{byte: char}``.

    The 188 bytes that are printable Latin-1 characters (``!`` to ``~``, ``¡`` to ``¬``, ``®`` to ``ÿ``) stand
    for themselves; the other 68 (controls, the space, the soft hyphen) get ``chr(256)``, ``chr(257)``, ... in
    byte order, so that the space, byte 32, is ``"Ġ"`` (``chr(288)``).
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for byte in range(N_BYTES):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(N_BYTES + extra)
            extra += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {char: byte for byte, char in BYTE_TO_CHAR.items()}


def pre_tokenize(text: str) -> list[str]:
    """The pieces of ``text`` (a str) by GPT-2's pattern, a list of str that joins back to ``text``:
    ``"I ate 2 apples!"`` -> ``["I", " ate", " 2", " apples", "!"]``."""
    _require_text(text)
    return PIECE.findall(text)


def to_byte_chars(piece: str) -> str:
    """``piece`` as its UTF-8 bytes, one printable character per byte: ``" é"`` -> ``"ĠÃ©"`` (3 bytes)."""
    return "".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))


class ByteBPETokenizer:
    """Byte-level BPE: ``merges`` in the order they were learned, on top of the 256 byte characters.

    Ids: the 256 byte characters first, in code-point order of the characters (the order ``tokenizers`` gives
    its alphabet), then each merged token as it was made. Training breaks ties in frequency like
    ``tokenizers``' ``BpeTrainer``: the pair with the smaller ids, ``(id(a), id(b))``, first (chapter 1's
    ``tie_break="vocab_order"``); tests/test_byte_bpe.py checks merges and ids against the library.
    """

    def __init__(self, merges: Sequence[tuple[str, str]]):
        self.merges = [tuple(pair) for pair in merges]
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.vocab = {char: i for i, char in enumerate(sorted(BYTE_TO_CHAR.values()))}
        for a, b in self.merges:
            self.vocab.setdefault(a + b, len(self.vocab))  # a token made twice keeps its first id
        self.tokens = {i: token for token, i in self.vocab.items()}

    def __repr__(self) -> str:
        return f"ByteBPETokenizer(merges={len(self.merges)}, vocab_size={len(self.vocab)})"

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> "ByteBPETokenizer":
        """Learn merges from ``texts`` (an iterable of str) until the vocabulary holds ``vocab_size`` tokens
        (256 bytes included) or no pair is left.

        Each step merges the most frequent adjacent pair within the pieces of :func:`pre_tokenize`; ties go to
        the pair whose tokens have the smaller ids (see the class docstring).
        """
        texts = _require_training(texts, vocab_size)
        counts = Counter(to_byte_chars(p) for text in texts for p in _pre_tokenize(text))
        words = {tuple(w): c for w, c in counts.items()}
        order = {char: i for i, char in enumerate(sorted(BYTE_TO_CHAR.values()))}  # the id of every token
        merges: list[tuple[str, str]] = []
        steps = merge_steps(words, order, "vocab_order")  # adds each merged token to order as it is made
        while len(order) < vocab_size and (best := next(steps, None)) is not None:
            merges.append(best)
        return cls(merges)

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` (a str), as byte-character strings: ``"I ate"`` -> ``["I", "Ġate"]`` once
        ``"Ġate"`` has been learned."""
        _require_text(text)
        return [t for piece in _pre_tokenize(text) for t in apply_merges(to_byte_chars(piece), self.ranks)]

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (a str), a list of int in ``[0, vocab_size)``; any text, no ``<unk>``."""
        return [self.vocab[t] for t in self.tokenize(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids`` (ints in ``[0, vocab_size)``): tokens joined, characters mapped back to bytes,
        bytes read as UTF-8 (a sequence cut inside a character gets U+FFFD, as ``tokenizers`` does)."""
        ids = _require_ids(ids, len(self.vocab))
        data = bytes(CHAR_TO_BYTE[c] for i in ids for c in self.tokens[i])
        return data.decode("utf-8", errors="replace")

def _pre_tokenize(text: str) -> list[str]:
    """:func:`pre_tokenize` without the check."""
    return PIECE.findall(text)


# ----------------------------------------------------------------------------- argument checks


def _require_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")


def _require_ids(ids, vocab_size: int) -> list[int]:
    """``ids`` as a list of ints, each in ``[0, vocab_size)`` (one check of the whole argument)."""
    ids = list(ids)
    for i in ids:
        if isinstance(i, bool) or not hasattr(i, "__index__"):
            raise TypeError(f"ids: expected token ids (ints), got a {type(i).__name__}")
        if not 0 <= operator.index(i) < vocab_size:
            raise ValueError(f"ids: expected token ids in [0, {vocab_size}), got {operator.index(i)}")
    return [operator.index(i) for i in ids]


def _require_training(texts, vocab_size) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts: expected an iterable of strings, such as a list of sentences, "
                        "got a single str; wrap it in a list")
    require_positive_int("vocab_size", vocab_size)
    if vocab_size < N_BYTES:
        raise ValueError(f"vocab_size: expected at least {N_BYTES} (the byte alphabet), got {vocab_size}")
    texts = list(texts)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"texts: expected strings, got a {type(text).__name__}")
    return texts
