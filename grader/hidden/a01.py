"""Hidden tests of assignment 01, tokenization (references: byte-pair counting and merging written out here; the
``tokenizers`` library's byte-level BPE for exercise 5).

Exercise 1 is worked by hand on the exercise's own vocabulary: its questions are fixed, not drawn from the seed.
Every other input comes from the run's seed. Exercises 2 and 3 must leave their input as it was, as their texts say:
a second call on the very same dict is scored (a function that changed its input answers it wrongly), and so is the
input after the call, which only the kernel sees.
"""

from __future__ import annotations

import json

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from checks.answers import count_differences, counts_form
from grader.hidden import Case, Forbid, Request, calls, generator, reads, rng
from grader.hidden.judge import as_int, called_again, describe, each_call, entry, fields, kept_inputs

ASSIGNMENT = "01_tokenization"
FIXED = {"ex1_tokens_by_hand"}  # ids and text worked by hand on the exercise's vocabulary
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_count_pairs": Forbid("count_pairs", ("transformer.count_pairs",)),
    "ex3_merge_pair": Forbid("merge_pair", ("transformer.merge_pair",)),
    "ex4_word_tokenizer": Forbid("WordLevelTokenizer", ("transformer",)),
    "ex5_byte_tokens": Forbid("byte_tokens", ("transformer.byte_bpe", "tokenizers")),
}
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]


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


def _vocabulary_judge(itos):
    stoi = {w: i for i, w in enumerate(itos)}

    def judge(reply):
        got, got_stoi = fields(reply, "itos", "stoi")
        if got is None:
            return "the tokenizer is missing the attribute itos"
        if not isinstance(got, list):
            return f"itos: expected a list of tokens, got {describe(got)}"
        if got[:4] != SPECIALS:
            return "itos must start with the four special tokens <pad>, <sos>, <eos>, <unk>, in that order"
        if len(got) != len(set(map(str, got))):
            return "itos holds a token more than once; every word comes once"
        if len(got) < len(itos):
            return "itos is missing words of the texts"
        if len(got) > len(itos):
            return "itos holds tokens that are not words of the texts"
        if got != itos:
            return "tokens of itos are in the wrong place: the words come in the order of their first appearance"
        if got_stoi is None:
            return "the tokenizer is missing the attribute stoi"
        if got_stoi != stoi:
            return "stoi must map every token of itos to its id, and nothing else"
        return None
    return judge


def _sentence_judge(ids, text):
    def judge(reply):
        encoded, decoded, padded = fields(reply, "encode", "decode", "padded")
        return (_ids(encoded, ids, "encode", list) or _text_exact(decoded, text, "decode")
                or _text_exact(padded, text, "decode with two <pad> at the end"))
    return judge


def _text_exact(got, want, name):
    if not isinstance(got, str):
        return f"{name}: expected a str, got {describe(got)}"
    if got != want:
        return f"{name} is wrong (the words of the vocabulary, joined by single spaces, without the special tokens)"
    return None


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
               Request("a01.tokenizer", {"texts": texts}), _vocabulary_judge(itos))
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

WORDS = ("the", "then", "theme", "banana", "bananas", "apple", "ate", "I", "café", "naïve", "Straße", "über", "déjà",
         "Ελλάδα", "μήλο", "мир", "日本", "苹果", "我吃了", "Ünïcödé")
SIGNS = ("!", "?", ".", ",", ":", ";", "...", "(", ")", "-", '"', "'s", "'t", "'ll", "#", "€", "£", "@", "🦜", "🍎",
         "👍🏽", "_")
SPACES = (" ", " ", " ", " ", "", "  ", "\n", "\t", " \n", "   ", "\n\n")
# Characters on which GPT-2's pattern (the regex module's \p{L}, \p{N}) and the exercise's PIECE (Python's re) cut
# differently (transformer/byte_bpe.py): four separators and six numbers that are not digits. No text holds them.
APART = {*map(chr, range(0x1C, 0x20)), "²", "³", "¹", "¼", "½", "¾"}


def _random_text(r) -> str:
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


def _abc_text(r) -> str:
    """Words of the letters a, b, c (whose merges overlap a lot), between runs of one to three spaces."""
    return "".join(r.choice((" ", "  ", "   ")) + "".join(r.choices("abc", k=r.randint(2, 7)))
                   for _ in range(r.randint(4, 8)))


def _byte_level(tok: Tokenizer) -> Tokenizer:
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tok


def _learned(texts: list[str], n: int) -> list[tuple[str, str]]:
    """The first ``n`` merges ``tokenizers``' BpeTrainer learns on ``texts``, starting from the 256 bytes."""
    tok = _byte_level(Tokenizer(models.BPE()))
    trainer = trainers.BpeTrainer(vocab_size=256 + n, min_frequency=0, special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def _byte_bpe_tokens(text: str, merges) -> list[str]:
    """The tokens of ``text`` by ``tokenizers``' byte-level BPE with ``merges``."""
    vocab = {char: i for i, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return _byte_level(Tokenizer(models.BPE(vocab=vocab, merges=list(merges)))).encode(text).tokens


def _byte_problem(got, text, merges) -> str | None:
    if not isinstance(got, list):
        return f"expected a list of tokens (str), got {describe(got)}"
    if not all(isinstance(t, str) for t in got):
        return f"a token is {describe(next(t for t in got if not isinstance(t, str)))}; expected a str"
    want = _byte_bpe_tokens(text, merges)
    if got == want:
        return None
    if "".join(got) != "".join(want):
        return "the tokens do not spell the UTF-8 bytes of the text, one printable character per byte (GPT-2's map)"
    return "the tokens spell the bytes of the text, but they are merged wrongly"


def ex5_byte_tokens(seed: int):
    r = rng(seed, "ex5_byte_tokens")
    plain = [[_random_text(r), []] for _ in range(4)]
    yield Case("byte_tokens without merges on 4 random texts of words (with accents, Greek, Cyrillic, Chinese), "
               "numbers, signs, emoji and white space: one token per byte (exact)",
               _each_request("byte_tokens", plain), each_call(plain, _byte_problem, what="texts"))
    latin = [chr(c) for c in range(256) if chr(c) not in APART]
    r.shuffle(latin)
    every = [["".join(latin), []]]
    yield Case("byte_tokens without merges on the characters U+0000 to U+00FF in a random order (but four "
               "separators and six numbers that GPT-2's pattern cuts otherwise): one token per byte (exact)",
               _each_request("byte_tokens", every), each_call(every, _byte_problem, what="texts"))
    corpus = [_random_text(r) for _ in range(12)]
    merges = _learned(corpus, 60)
    learned = [[text, merges] for text in corpus[:3] + [_random_text(r) for _ in range(5)]]
    yield Case("byte_tokens with the first 60 merges that tokenizers' BpeTrainer learns on 12 random texts, on 3 of "
               "them and on 5 other random texts (exact)",
               _each_request("byte_tokens", learned), each_call(learned, _byte_problem, what="texts"))
    merges = _learned([_abc_text(r) for _ in range(10)], 30)
    abc = [[_abc_text(r), merges] for _ in range(8)]
    yield Case("byte_tokens with the first 30 merges that tokenizers' BpeTrainer learns on 10 random texts of words "
               "of the letters a, b, c between runs of one to three spaces, on 8 other such texts (exact)",
               _each_request("byte_tokens", abc), each_call(abc, _byte_problem, what="texts"))
