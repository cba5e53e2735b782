"""Tokenization (chapter 1): the word tokenizer, one-hot embeddings, and BPE by hand and against `tokenizers`."""

import json
from collections import Counter

import numpy as np
import pytest
import torch

from transformer import SPECIAL_TOKENS, BPETokenizer, TokenEmbedding, Vocabulary, WordTokenizer, one_hot, split_words
from transformer.tokenization import count_pairs, merge_pair

# ----------------------------------------------------------- word level


def test_word_tokenizer_on_the_lecture_sentence():
    tok = WordTokenizer.fit(["I ate an apple"])
    v = tok.vocab
    assert [v.id_of(s) for s in ("<pad>", "<sos>", "<eos>", "<unk>")] == [0, 1, 2, 3]
    assert (v.pad_id, v.sos_id, v.eos_id, v.unk_id) == (0, 1, 2, 3)
    assert [v.id_of(w) for w in ("I", "ate", "an", "apple")] == [4, 5, 6, 7]
    assert len(v) == 8
    ids = tok.encode("I ate an apple")
    assert ids == [1, 4, 5, 6, 7, 2]  # <sos> I ate an apple <eos>
    assert tok.encode("I ate an apple", add_special=False) == [4, 5, 6, 7]
    assert tok.decode(ids) == "I ate an apple"
    assert tok.decode(ids, skip_special=False) == "<sos> I ate an apple <eos>"


def test_unknown_word_maps_to_unk():
    tok = WordTokenizer.fit(["I ate an apple"])
    assert tok.encode("I ate a pear", add_special=False) == [4, 5, 3, 3]
    assert tok.decode(tok.encode("I ate a pear"), skip_special=False) == "<sos> I ate <unk> <unk> <eos>"


def test_split_words_punctuation_and_specials():
    assert split_words("I ate an apple.") == ["I", "ate", "an", "apple", "."]
    assert split_words("<sos> Hi, you! <eos>") == ["<sos>", "Hi", ",", "you", "!", "<eos>"]


def test_vocabulary_order_and_duplicates():
    v = Vocabulary(["b", "a", "b", "c"])
    assert v.itos == [*SPECIAL_TOKENS, "b", "a", "c"]
    assert v.token_of(torch.tensor(5)) == "a"
    # an id as a tensor of ids or a NumPy array holds it: a 0-d or one-element integer tensor, a NumPy integer
    ids = (torch.tensor([4]), np.int64(6), torch.tensor(5, dtype=torch.int32))
    assert [v.token_of(i) for i in ids] == ["b", "c", "a"]
    assert "c" in v and "d" not in v


def test_min_count_drops_rare_words():
    tok = WordTokenizer.fit(["a a b", "a c c"], min_count=2)
    assert tok.vocab.itos[4:] == ["a", "c"]
    assert tok.encode("b", add_special=False) == [3]


# ----------------------------------------------------------- one-hot and embedding


def test_one_hot_by_hand():
    assert one_hot([2, 0], 3).tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]


def test_embedding_is_one_hot_times_e():
    emb = TokenEmbedding(10, 6, scale=False)
    ids = torch.tensor([[1, 4, 5, 6, 7, 2], [9, 0, 0, 3, 3, 8]])
    E = emb.weight.detach()
    oh = one_hot(ids, 10)
    assert oh.shape == (2, 6, 10)
    torch.testing.assert_close(oh @ E, E[ids], atol=0, rtol=0)
    torch.testing.assert_close(emb(ids), oh @ E, atol=1e-6, rtol=0)


def test_embedding_scale_sqrt_d_model():
    emb = TokenEmbedding(10, 16, scale=True)
    ids = torch.tensor([[3, 1]])
    torch.testing.assert_close(emb(ids), emb.weight.detach()[ids] * 4.0, atol=1e-6, rtol=0)


# ----------------------------------------------------------- BPE by hand

CORPUS = "low low low lower lowest newer newer"


def test_count_pairs_by_hand():
    words = {tuple("low"): 3, tuple("lower"): 1, tuple("lowest"): 1, tuple("newer"): 2}
    pairs = count_pairs(words)
    # l-o and o-w: in low (3), lower (1), lowest (1)
    # w-e: lower (1), lowest (1), newer (2);  e-r: lower (1), newer (2)
    # n-e, e-w: newer (2);  e-s, s-t: lowest (1)
    assert pairs == Counter({("l", "o"): 5, ("o", "w"): 5, ("w", "e"): 4, ("e", "r"): 3, ("n", "e"): 2,
                             ("e", "w"): 2, ("e", "s"): 1, ("s", "t"): 1})


def test_merge_pair_by_hand():
    words = {tuple("low"): 3, tuple("lower"): 1, tuple("newer"): 2}
    assert merge_pair(("l", "o"), words) == {("lo", "w"): 3, ("lo", "w", "e", "r"): 1, tuple("newer"): 2}
    assert merge_pair(("e", "r"), words) == {tuple("low"): 3, ("l", "o", "w", "er"): 1, ("n", "e", "w", "er"): 2}
    # two words that become the same symbols are added together
    assert merge_pair(("a", "b"), {("a", "b"): 2, ("ab",): 3}) == {("ab",): 5}
    # left to right, no overlaps: a a a -> aa a
    assert merge_pair(("a", "a"), {tuple("aaa"): 1}) == {("aa", "a"): 1}


def test_bpe_train_by_hand():
    # Step 1: l-o and o-w tie at 5; the alphabetically first pair wins: (l, o).
    #   lo w (3), lo w e r (1), lo w e s t (1), n e w e r (2)
    # Step 2: (lo, w) = 5 beats (w, e) = 4.
    #   low (3), low e r (1), low e s t (1), n e w e r (2)
    # Step 3: (e, r) = 1 + 2 = 3 is now the most frequent.
    #   low (3), low er (1), low e s t (1), n e w er (2)
    # Step 4: (n, e), (e, w), (w, er) tie at 2: alphabetically (e, w) is first.
    #   ..., n ew er (2)
    # Step 5: (n, ew) and (ew, er) tie at 2: ("ew", "er") < ("n", "ew").
    tok = BPETokenizer.train([CORPUS], 5)
    assert tok.merges == [("l", "o"), ("lo", "w"), ("e", "r"), ("e", "w"), ("ew", "er")]
    assert tok.alphabet == ["e", "l", "n", "o", "r", "s", "t", "w"]
    assert tok.tokenize("lowest newer") == ["low", "e", "s", "t", "n", "ewer"]
    assert tok.tokenize("slow") == ["s", "low"]
    # vocabulary: specials, the alphabet, then one token per merge
    assert tok.vocab.itos[4:] == ["e", "l", "n", "o", "r", "s", "t", "w", "lo", "low", "er", "ew", "ewer"]
    assert tok.encode("lower") == [tok.vocab.id_of("low"), tok.vocab.id_of("er")]
    assert tok.encode("lox") == [tok.vocab.id_of("lo"), tok.vocab.unk_id]


def test_bpe_stops_when_nothing_is_left_to_merge():
    tok = BPETokenizer.train(["ab ab"], 10)
    assert tok.merges == [("a", "b")]
    assert BPETokenizer.train(["ab"], 0).merges == []


# ----------------------------------------------------------- BPE against the `tokenizers` library

# `tokenizers` breaks ties between equally frequent pairs by the ids of the symbols (characters in
# code-point order, merged symbols in the order they were created); we break them alphabetically.
# Those agree on single characters but not on merged symbols (on CORPUS above it learns (n, ew)
# where we learn (ew, er)), so this corpus is chosen so that no step has a tie:
# counts of the winning pair vs the runner-up, step by step: 28/21, 21/19, 19/17, 11/9, 9/8, 8/7.
NO_TIE_COUNTS = {"the": 12, "then": 9, "this": 7, "cat": 11, "car": 8, "hat": 6}
NO_TIE_CORPUS = [" ".join(w for w, n in NO_TIE_COUNTS.items() for _ in range(n))]


def _hf_bpe(corpus, n_merges):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    alphabet = sorted(set("".join(corpus).replace(" ", "")))
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # like our str.split()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + n_merges, min_frequency=0,
                                  special_tokens=[], show_progress=False)
    hf.train_from_iterator(corpus, trainer)
    merges = json.loads(hf.to_str())["model"]["merges"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    return hf, merges


def test_bpe_merges_match_tokenizers_library():
    hf, hf_merges = _hf_bpe(NO_TIE_CORPUS, 6)
    ours = BPETokenizer.train(NO_TIE_CORPUS, 6)
    assert ours.merges == hf_merges
    # and by hand: th (28), the (21), ca (19), cat (11), then (9), car (8)
    assert ours.merges == [("t", "h"), ("th", "e"), ("c", "a"), ("ca", "t"), ("the", "n"), ("ca", "r")]
    for text in ("that cat then", "the car this hat", "then there"):
        assert ours.tokenize(text) == hf.encode(text).tokens


def test_first_merges_match_tokenizers_before_the_first_tie_between_merged_symbols():
    # On CORPUS the first four merges agree (the only earlier tie is between single characters).
    _, hf_merges = _hf_bpe([CORPUS], 4)
    assert BPETokenizer.train([CORPUS], 4).merges == hf_merges
