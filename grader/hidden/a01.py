"""Hidden tests of assignment 01, tokenization (references: byte-pair counting and merging written out here; the
``tokenizers`` library's byte-level BPE for exercise 5).

Exercise 1 is worked by hand on the exercise's own vocabulary: its questions are fixed, not drawn from the seed.
Every other input comes from the run's seed. Exercises 2 and 3 must leave their input as it was, as their texts say:
a second call on the very same dict is scored (a function that changed its input answers it wrongly), and so is the
input after the call, which only the kernel sees.
"""

from __future__ import annotations

import torch

from checks.answers import count_differences, counts_form
from grader.hidden import Case, Forbid, Request, calls, generator, reads, rng
from grader.hidden.a01_bytes import APART, abc_text, byte_problem, learned_merges, random_text
from grader.hidden.a01_words import SPECIALS, text_exact, vocabulary_judge
from grader.hidden.judge import as_int, called_again, describe, each_call, entry, fields, kept_inputs

ASSIGNMENT = "01_tokenization"
FIXED = {"ex1_tokens_by_hand"}  # ids and text worked by hand on the exercise's vocabulary
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_count_pairs": Forbid("count_pairs", ("transformer.count_pairs",)),
    "ex3_merge_pair": Forbid("merge_pair", ("transformer.merge_pair",)),
    "ex4_word_tokenizer": Forbid("WordLevelTokenizer", ("transformer",)),
    "ex5_byte_tokens": Forbid("byte_tokens", ("transformer.byte_bpe", "tokenizers")),
}


def _ids(got, want: list[int], name: str, kinds=(list, tuple)) -> str | None:
    """``got`` must be a list (or tuple, where ``kinds`` allows it) of int ids equal to ``want``."""
    if not isinstance(got, kinds):
        return f"{name}: expected a list of int ids, got {describe(got)}"
    if any(as_int(i) is None for i in got):
        bad = next(i for i in got if as_int(i) is None)
        return f"{name}: expected a list of int ids, but it holds {describe(bad)}"
    got = [as_int(i) for i in got]
    if len(got) != len(want):
        return f"{name}: expected {len(want)} ids, got another number of them"
    if got != want:
        return f"{name}: ids are wrong (exact)"
    return None


def _by_hand_ids(got, want: list[int], name: str) -> str | None:
    """Ids written by hand: a list or tuple of ints, or a 1-D integer tensor."""
    if isinstance(got, torch.Tensor) and got.dim() == 1 and not got.dtype.is_floating_point and got.dtype != torch.bool:
        got = got.tolist()
    return _ids(got, want, name)


def _text(got, want: str, name: str) -> str | None:
    if not isinstance(got, str):
        return f"{name}: expected a str, got {describe(got)}"
    if " ".join(got.split()) != want:
        return f"{name} is wrong"
    return None


def ex1_tokens_by_hand(seed: int):
    itos = ["<pad>", "<sos>", "<eos>", "<unk>", "a", "an", "apple", "ate", "I", "pear", "you"]
    stoi = {t: i for i, t in enumerate(itos)}
    apple = [stoi[t] for t in "<sos> I ate an apple <eos>".split()]
    banana = [1] + [stoi.get(w, 3) for w in "you ate a banana".split()] + [2]
    text = " ".join(itos[i] for i in [1, 10, 7, 4, 9, 2, 0, 0] if i > 3)
    yield Case("answers['ids_apple'], the ids of the tokens <sos> I ate an apple <eos> (exact)", reads("answers"),
               entry("ids_apple", lambda got: _by_hand_ids(got, apple, "ids_apple")))
    yield Case("answers['ids_banana'], what encode gives for 'you ate a banana' (exact)", reads("answers"),
               entry("ids_banana", lambda got: _by_hand_ids(got, banana, "ids_banana")))
    yield Case("answers['text'], what decode gives for the ids of the exercise (exact, single spaces)",
               reads("answers"), entry("text", lambda got: _text(got, text, "text")))


def _tuple_keys(got, what: str, size: int | None = None) -> str | None:
    """``got`` must be a dict whose keys are tuples of str (of ``size`` symbols if given) and whose values are counts:
    the visible check's reading (:func:`~checks.answers.counts_form`), in fixed words."""
    found = counts_form(got, size)
    if found is None:
        return None
    kind, key = found
    if kind == "dict":
        return f"expected a dict from {what} to counts, got {describe(got)}"
    if kind == "key":
        return f"a key is {describe(key)}; the keys are {what}, as tuples of symbols (str)"
    if kind == "size":
        return f"a key does not hold {size} symbols; the keys are {what}, tuples (a, b)"
    return f"a value is {describe(got[key])}; expected a count (an int)"


def _same_counts(got: dict, want: dict, item: str) -> str | None:
    """How ``got`` differs from ``want`` (the counts of ``item`` s, by
    :func:`~checks.answers.count_differences`), in fixed words: which kinds of difference, never how many
    (the reply chooses that)."""
    wrong, extra, missing = count_differences(got, want)
    problems = []
    if wrong:
        problems.append(f"some {item}s have the wrong count")
    if missing:
        problems.append(f"some {item}s that should be there are missing")
    if extra:
        problems.append(f"some {item}s should not be there")
    return "; ".join(problems) or None


def _pair_counts(words: dict) -> dict:
    out = {}
    for word, freq in words.items():
        for i in range(len(word) - 1):
            out[(word[i], word[i + 1])] = out.get((word[i], word[i + 1]), 0) + freq
    return out


def _random_words(g, symbols, count_range, length_range) -> dict:
    words = {}
    for _ in range(int(torch.randint(*count_range, (1,), generator=g))):
        length = int(torch.randint(*length_range, (1,), generator=g))
        word = tuple(symbols[int(i)] for i in torch.randint(0, len(symbols), (length,), generator=g))
        words[word] = words.get(word, 0) + int(torch.randint(1, 10, (1,), generator=g))
    return words


def _each_request(name, arglists):
    return Request("a01.call_each", {"name": name, "arglists": [list(a) for a in arglists]})


def _count_problem(got, words) -> str | None:
    return _tuple_keys(got, "pairs of neighbouring symbols", 2) or _same_counts(got, _pair_counts(words), "pair")


def ex2_count_pairs(seed: int):
    g = generator(seed, "ex2_count_pairs")
    symbols = ["a", "b", "c", "ab", "bc", "abc"]
    arglists = [[_random_words(g, symbols, (1, 8), (1, 7))] for _ in range(6)]
    yield Case("count_pairs on 6 random vocabularies of the symbols a, b, c, ab, bc, abc (words of 1 to 6 symbols, "
               "exact counts)", _each_request("count_pairs", arglists),
               each_call(arglists, _count_problem, what="vocabularies"))
    again = _random_words(g, symbols, (3, 8), (2, 7))
    yield Case("count_pairs called twice on one and the same dict, as a caller may: both answers right (exact counts; "
               "a function that changes its input answers the second call wrongly)",
               Request("a01.call_again", {"name": "count_pairs", "words": again}),
               called_again(2, lambda got, _i: _count_problem(got, again)))
    yield Case("count_pairs leaves its input unchanged", _each_request("count_pairs", arglists),
               kept_inputs(arglists, ["words"], "vocabularies"))


def _merged(pair, words: dict) -> dict:
    """One BPE merge, written out: left to right, every occurrence, frequencies of equal words added."""
    out = {}
    for word, freq in words.items():
        symbols, skip = [], False
        for i, s in enumerate(word):
            if skip:
                skip = False
            elif i + 1 < len(word) and (s, word[i + 1]) == tuple(pair):
                symbols.append(s + word[i + 1])
                skip = True
            else:
                symbols.append(s)
        out[tuple(symbols)] = out.get(tuple(symbols), 0) + freq
    return out


def _merge_problem(got, pair, words) -> str | None:
    return _tuple_keys(got, "words") or _same_counts(got, _merged(pair, words), "word")


def _relabelled(g, pair, words):
    """``pair`` and ``words`` with every letter replaced by another drawn from ``g`` (one letter for one letter):
    the same question in other symbols, since a merge glues symbols letter by letter."""
    letters = sorted({c for w in words for s in w for c in s})
    drawn = [chr(ord("a") + int(i)) for i in torch.randperm(26, generator=g)[: len(letters)]]
    table = str.maketrans(dict(zip(letters, drawn, strict=True)))
    return (tuple(s.translate(table) for s in pair),
            {tuple(s.translate(table) for s in w): f for w, f in words.items()})


def ex3_merge_pair(seed: int):
    g = generator(seed, "ex3_merge_pair")
    example = ("the example of the exercise (a pair that occurs twice in one word)",
               ("a", "n"), {("b", "a", "n", "a", "n", "a"): 3, ("n", "a", "n"): 2})
    shapes = [("a pair of two equal symbols, in runs of three and five", ("a", "a"),
               {("a", "a", "a"): 1, ("a", "a", "a", "a", "a"): 4}),
              ("a merge that makes a word that is already there", ("x", "y"),
               {("x", "y"): 2, ("xy",): 5, ("x", "y", "xy"): 1}),
              ("symbols that only match in part", ("e", "r"), {("n", "e", "w", "er"): 2, ("ne", "r"): 1})]
    shapes = [(what, *_relabelled(g, pair, words)) for what, pair, words in shapes]
    arglists = []
    for what, pair, words in [example, *shapes]:
        arglists.append([pair, words])
        yield Case(f"merge_pair on {what} (exact)", calls("merge_pair", pair, words),
                   lambda reply, pair=pair, words=words: _merge_problem(fields(reply, "out", "args")[0], pair, words))
    symbols = ["a", "b", "ab"]
    drawn = []
    for _ in range(30):
        words = _random_words(g, symbols, (1, 6), (2, 8))
        head = next(iter(words))
        at = int(torch.randint(0, len(head) - 1, (1,), generator=g))
        drawn.append([(head[at], head[at + 1]), words])   # a pair that occurs
    yield Case("merge_pair on 30 random vocabularies of the symbols a, b, ab, with a pair that occurs (exact)",
               _each_request("merge_pair", drawn), each_call(drawn, _merge_problem, what="vocabularies"))
    arglists += drawn
    words = _random_words(g, symbols, (3, 8), (2, 8))
    words[("a", "b", "a")] = words.get(("a", "b", "a"), 0) + 1   # a merge of (a, b) changes what (b, a) finds
    pairs = [("a", "b"), ("b", "a"), ("ab", "a"), ("a", "a")]
    yield Case("merge_pair called on one and the same dict of random words with the pairs (a, b), (b, a), (ab, a), "
               "(a, a) in turn, as a caller may: each answer the merge of the words it was given (exact; a function "
               "that changes its input answers the later calls wrongly)",
               Request("a01.call_again", {"name": "merge_pair", "words": words, "pairs": [list(p) for p in pairs]}),
               called_again(len(pairs), lambda got, i: _merge_problem(got, pairs[i], words)))
    yield Case("merge_pair leaves its inputs unchanged", _each_request("merge_pair", arglists),
               kept_inputs(arglists, ["pair", "words"], "vocabularies"))


def _sentence_judge(ids, text):
    def judge(reply):
        encoded, decoded, padded = fields(reply, "encode", "decode", "padded")
        return (_ids(encoded, ids, "encode", list) or text_exact(decoded, text, "decode")
                or text_exact(padded, text, "decode with two <pad> at the end"))
    return judge


def ex4_word_tokenizer(seed: int):
    g = generator(seed, "ex4_word_tokenizer")
    pool = ["I", "you", "we", "ate", "cooked", "an", "a", "the", "apple", "pear", "soup", "cake", "fresh", "and",
            "then"]

    def sentence(n, words=pool):
        return " ".join(words[int(i)] for i in torch.randint(0, len(words), (n,), generator=g))

    texts = [sentence(int(torch.randint(1, 7, (1,), generator=g))) for _ in range(6)]
    itos = list(SPECIALS)
    for t in texts:
        for w in t.split():
            if w not in itos:
                itos.append(w)
    yield Case("WordLevelTokenizer on 6 random sentences: its itos and stoi",
               Request("a01.tokenizer", {"texts": texts}), vocabulary_judge(itos))
    mixed = sentence(3, itos[4:]).split() + ["banana", "cheese"]
    mixed = " ".join(mixed[int(i)] for i in torch.randperm(5, generator=g))
    for words, t in [("a random sentence of 5 words of the texts", sentence(5, itos[4:])),
                     ("a random sentence of 1 word", sentence(1)),
                     ("a sentence with two words that are not in the vocabulary", mixed), ("the empty sentence", "")]:
        ids = [1] + [itos.index(w) if w in itos else 3 for w in t.split()] + [2]
        text = " ".join(w for w in t.split() if w in itos[4:])
        yield Case(f"WordLevelTokenizer on the same sentences: encode of {words}, and decode of its ids "
                   "(with and without <pad> at the end)",
                   Request("a01.tokenizer", {"texts": texts, "text": t, "ids": ids}), _sentence_judge(ids, text))


# ---------------------------------------------------------------- exercise 5: byte-level BPE

def ex5_byte_tokens(seed: int):
    r = rng(seed, "ex5_byte_tokens")
    plain = [[random_text(r), []] for _ in range(4)]
    yield Case("byte_tokens without merges on 4 random texts of words (with accents, Greek, Cyrillic, Chinese), "
               "numbers, signs, emoji and white space: one token per byte (exact)",
               _each_request("byte_tokens", plain), each_call(plain, byte_problem, what="texts"))
    latin = [chr(c) for c in range(256) if chr(c) not in APART]
    r.shuffle(latin)
    every = [["".join(latin), []]]
    yield Case("byte_tokens without merges on the characters U+0000 to U+00FF in a random order (but four "
               "separators and six numbers that GPT-2's pattern cuts otherwise): one token per byte (exact)",
               _each_request("byte_tokens", every), each_call(every, byte_problem, what="texts"))
    corpus = [random_text(r) for _ in range(12)]
    merges = learned_merges(corpus, 60)
    learned = [[text, merges] for text in corpus[:3] + [random_text(r) for _ in range(5)]]
    yield Case("byte_tokens with the first 60 merges that tokenizers' BpeTrainer learns on 12 random texts, on 3 of "
               "them and on 5 other random texts (exact)",
               _each_request("byte_tokens", learned), each_call(learned, byte_problem, what="texts"))
    merges = learned_merges([abc_text(r) for _ in range(10)], 30)
    abc = [[abc_text(r), merges] for _ in range(8)]
    yield Case("byte_tokens with the first 30 merges that tokenizers' BpeTrainer learns on 10 random texts of words "
               "of the letters a, b, c between runs of one to three spaces, on 8 other such texts (exact)",
               _each_request("byte_tokens", abc), each_call(abc, byte_problem, what="texts"))
