"""Byte-level BPE (chapter 1) against the `tokenizers` library, GPT-2's published byte map and pattern.

The corpora are generated here, from word lists with accents, emoji, CJK, Greek, Cyrillic, digits,
contractions and control characters; the chapter uses none of them.
"""

from __future__ import annotations

import json
import random

import pytest

from transformer.byte_bpe import (
    GPT2_PATTERN,
    ByteBPETokenizer,
    bytes_to_unicode,
    pre_tokenize,
    to_byte_chars,
)

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import decoders, models, pre_tokenizers, trainers  # noqa: E402

WORDS = ["café", "naïve", "über", "Straße", "日本語", "東京", "의", "😀", "🚀✨", "👩‍👩‍👧", "apple", "ate", "I",
         "don't", "it's", "we'll", "12", "3.5", "2024", "hello", "world", "Ελλάδα", "мир", "x_y", "e\u0301",
         "¿qué?", "!!", "(a)", "\t", "  ", "\x00", "\x07", "\x1b[0m", "\r\n", "\u00a0", "naïveté"]


def generated(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    ends = ["", ".", "\n", "  ", "!\n"]
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) + rng.choice(ends) for _ in range(n)]


def hf_byte_bpe(texts: list[str], vocab_size: int):
    """`tokenizers`' byte-level BPE with the settings of ours: no specials, no minimum frequency, the 256 bytes."""
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return tok, merges, model["vocab"]


def test_the_byte_map_is_gpt2s():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    # GPT-2's encoder.py: printable Latin-1 bytes map to themselves, the others to chr(256 + n) in byte order
    assert table[ord("A")] == "A" and table["é".encode()[0]] == "Ã"
    assert table[0] == chr(256) and table[32] == "Ġ" and table[10] == "Ċ" and table[173] == "Ń"
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pieces_equal_gpt2s_pattern_on_generated_text(seed):
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    for text in generated(seed, 60) + ["I ate 2 apples!", "It's 3.5 km, isn't it?", "a\tb\n\n c  d "]:
        ours = pre_tokenize(text)
        assert "".join(ours) == text
        assert [to_byte_chars(p) for p in ours] == [p for p, _ in byte_level.pre_tokenize_str(text)], text


@pytest.mark.parametrize("text, gpt2_pieces", [("x½", ["x", "½"]), ("a²b", ["a", "²", "b"]),
                                               ("a\x1c\x1cb", ["a", "\x1c\x1c", "b"])])
def test_where_the_re_pattern_differs_from_gpt2s(text, gpt2_pieces):
    # the two differences the module states: non-decimal numbers are letters for `re`, U+001C..U+001F white space
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    assert [p for p, _ in byte_level.pre_tokenize_str(text)] == [to_byte_chars(p) for p in gpt2_pieces]
    assert pre_tokenize(text) != gpt2_pieces
    regex = pytest.importorskip("regex")
    assert regex.findall(GPT2_PATTERN, text) == gpt2_pieces


@pytest.mark.parametrize("seed, vocab_size", [(3, 300), (4, 420), (5, 2000)])
def test_merges_and_ids_equal_tokenizers(seed, vocab_size):
    texts = generated(seed, 400)
    ours = ByteBPETokenizer.train(texts, vocab_size)
    hf, merges, vocab = hf_byte_bpe(texts, vocab_size)
    assert len(ours.merges) > 40
    assert ours.merges == merges
    assert ours.vocab == vocab
    for text in generated(seed + 100, 80):
        assert ours.encode(text) == hf.encode(text).ids, text


def test_ties_go_to_the_smaller_ids_like_tokenizers():
    # "ab" and "cd" both occur twice and "ab" is learned first; then ("ab", "c") and ("c", "d") tie at one:
    # by characters "ab" < "c", by ids c (99) comes before the merged "ab" (256), so the library picks ("c", "d")
    texts = ["ab", "ab", "cd", "cd", "abc"]
    ours = ByteBPETokenizer.train(texts, 258)
    assert ours.merges == hf_byte_bpe(texts, 258)[1] == [("a", "b"), ("c", "d")]


def test_any_utf8_text_round_trips_without_unk():
    tok = ByteBPETokenizer.train(generated(6, 200), 400)
    hf = hf_byte_bpe(generated(6, 200), 400)[0]
    unseen = ["Ωmega ∮ ⅋ 🦜🦜", "中文，日本語。한국어!", "\x00\x01\x7f\x80 tab\tend", "e\u0301 \u202e rtl", "𝔘𝔫𝔦"]
    for text in unseen + generated(7, 30):
        ids = tok.encode(text)
        assert all(0 <= i < len(tok.vocab) for i in ids)
        assert tok.decode(ids) == text and hf.decode(ids) == text


def test_decode_of_a_cut_character_gives_the_replacement_character():
    tok = ByteBPETokenizer([])
    ids = tok.encode("é")
    assert len(ids) == 2 and tok.decode(ids[:1]) == "\ufffd"
    assert tok.decode(ids[:1]) == hf_byte_bpe(["x"], 256)[0].decode(ids[:1])


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="texts"):
        ByteBPETokenizer.train("one string", 300)
    with pytest.raises(ValueError, match="vocab_size"):
        ByteBPETokenizer.train(["a b"], 100)
    with pytest.raises(TypeError, match="text"):
        ByteBPETokenizer([]).encode(b"bytes")
    with pytest.raises((TypeError, ValueError), match="ids"):
        ByteBPETokenizer([]).decode([256])
