"""BPE of chapter 1 beyond tests/test_tokenization.py: the tie rule of `tokenizers`, truncation, guards.

The references are the `tokenizers` library (models.BPE + trainers.BpeTrainer with whitespace
pre-tokenization, which is how our training splits words) and merges worked out by hand.
"""

from __future__ import annotations

import json
import random

import pytest

from transformer.tokenization import BPETokenizer, WordTokenizer, count_pairs, merge_pair

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import models, pre_tokenizers, trainers  # noqa: E402


def hf_bpe(corpus: list[str], n_merges: int):
    """`tokenizers` trained with the settings that make it comparable: no specials, no minimum frequency,
    every character in the alphabet, and a vocabulary of exactly alphabet + n_merges tokens."""
    alphabet = sorted(set("".join(corpus).replace(" ", "")))
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + n_merges, min_frequency=0, special_tokens=[],
                                  show_progress=False)
    hf.train_from_iterator(corpus, trainer)
    merges = json.loads(hf.to_str())["model"]["merges"]
    return hf, [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


# The walk-through corpus of chapter 1: eight words, with ties.
COUNTS = {"eat": 4, "eats": 2, "eating": 3, "cook": 2, "cooks": 1, "cooking": 3, "bake": 2, "baking": 2}
CORPUS = [" ".join(w for w, c in COUNTS.items() for _ in range(c))]


def test_walk_through_by_hand():
    # a-t and e-a both occur 4 + 2 + 3 = 9 times; (a, t) is first alphabetically and by code point.
    pairs = count_pairs({tuple(w): c for w, c in COUNTS.items()})
    assert pairs[("a", "t")] == pairs[("e", "a")] == 9
    assert pairs[("i", "n")] == pairs[("n", "g")] == 3 + 3 + 2
    assert pairs[("o", "k")] == pairs[("c", "o")] == pairs[("o", "o")] == 2 + 1 + 3
    tok = BPETokenizer.train(CORPUS, 10)
    assert tok.merges[:5] == [("a", "t"), ("e", "at"), ("i", "n"), ("in", "g"), ("c", "o")]
    # merge 6: (co, o) and (o, k) tie at 6; alphabetically "co" < "o"
    assert tok.merges[5] == ("co", "o")


def test_alphabetical_ties_differ_from_tokenizers_at_the_first_tie_with_a_merged_symbol():
    _, theirs = hf_bpe(CORPUS, 10)
    ours = BPETokenizer.train(CORPUS, 10).merges
    assert ours[:5] == theirs[:5]
    # tokenizers gives 'o' (a character, an early id) priority over 'co' (a merged symbol, a late id)
    assert ours[5] == ("co", "o") and theirs[5] == ("o", "k")


def test_vocab_order_ties_reproduce_tokenizers_on_the_walk_through():
    hf, theirs = hf_bpe(CORPUS, 10)
    ours = BPETokenizer.train(CORPUS, 10, tie_break="vocab_order")
    assert ours.merges == theirs
    for text in ("eat eating", "cooking baking", "cook beat", "tea bakes"):
        assert ours.tokenize(text) == hf.encode(text).tokens


@pytest.mark.parametrize("seed", range(40))
def test_vocab_order_ties_reproduce_tokenizers_on_random_corpora(seed):
    rng = random.Random(seed)
    alphabet = rng.choice(["ab", "abc", "abcd", "aAbB", "xyz.", "abcdefgh"])
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(1, 30))]
    corpus = [" ".join(words)]
    n = rng.randint(1, 25)
    hf, theirs = hf_bpe(corpus, n)
    ours = BPETokenizer.train(corpus, n, tie_break="vocab_order")
    assert ours.merges == theirs
    seen = sorted(set("".join(words)))  # `tokenizers` drops characters it never saw; we keep them
    probe = " ".join(rng.choice(words) + rng.choice(seen) for _ in range(5))
    assert ours.tokenize(probe) == hf.encode(probe).tokens


def test_tie_rules_agree_without_ties():
    # winners beat the runner-up at every step: th 28/21, the 21/19, ca 19/17, cat 11/9, then 9/8, car 8/7
    counts = {"the": 12, "then": 9, "this": 7, "cat": 11, "car": 8, "hat": 6}
    corpus = [" ".join(w for w, n in counts.items() for _ in range(n))]
    a = BPETokenizer.train(corpus, 6).merges
    assert a == BPETokenizer.train(corpus, 6, tie_break="vocab_order").merges == hf_bpe(corpus, 6)[1]


def test_truncated_equals_training_fewer_merges():
    full = BPETokenizer.train(CORPUS, 10)
    for k in (0, 1, 4, 10):
        short = full.truncated(k)
        assert short.merges == BPETokenizer.train(CORPUS, k).merges
        assert short.vocab.itos == full.vocab.itos[:len(short.vocab)]  # ids do not move as merges are added
    assert full.truncated(0).tokenize("eat") == ["e", "a", "t"]
    assert full.truncated(2).tokenize("eat") == ["eat"]


def test_repr():
    assert repr(BPETokenizer.train(CORPUS, 3)) == "BPETokenizer(merges=3, vocab_size=18)"  # 4 + 11 letters + 3
    assert repr(WordTokenizer.fit(["I ate an apple"])) == "WordTokenizer(vocab_size=8)"


def test_merge_pair_keeps_whole_symbols():
    # 'lo' followed by 'w' is not the pair ('o', 'w')
    assert merge_pair(("o", "w"), {("lo", "w"): 4, ("b", "o", "w"): 2}) == {("lo", "w"): 4, ("b", "ow"): 2}
    assert merge_pair(("a", "n"), {tuple("banana"): 3}) == {("b", "an", "an", "a"): 3}


@pytest.mark.parametrize("call, error, words", [
    (lambda: BPETokenizer.train("eat eats", 2), TypeError, ("texts:", "a single str", "wrap it in a list")),
    (lambda: WordTokenizer.fit("I ate an apple"), TypeError, ("texts:", "a single str")),
    (lambda: BPETokenizer.train(CORPUS, 2, tie_break="random"), ValueError,
     ("tie_break:", "'alphabetical', 'vocab_order'", "'random'")),
    (lambda: BPETokenizer.train(CORPUS, 3).truncated(4), ValueError, ("n_merges:", "[0, 3]", "got 4")),
    (lambda: BPETokenizer.train(CORPUS, 3).truncated(-1), ValueError, ("n_merges:", "got -1")),
])
def test_invalid_calls_name_the_argument(call, error, words):
    with pytest.raises(error) as err:
        call()
    for w in words:
        assert w in str(err.value), str(err.value)


def test_tokenizers_breaks_ties_by_the_ids_of_the_symbols_not_by_their_spelling():
    # Merge 1 is (z, z) (5 times), merge 2 is (a, a) (4 times); then (zz, q) and (aa, q) tie at 3.
    # 'zz' was made first, so it has the smaller id: `tokenizers` merges (zz, q); alphabetically (aa, q) comes first.
    corpus = ["zzq zzq zzq zz zz aaq aaq aaq aa"]
    _, theirs = hf_bpe(corpus, 3)
    assert theirs == [("z", "z"), ("a", "a"), ("zz", "q")]
    assert BPETokenizer.train(corpus, 3, tie_break="vocab_order").merges == theirs
    assert BPETokenizer.train(corpus, 3).merges == [("z", "z"), ("a", "a"), ("aa", "q")]
