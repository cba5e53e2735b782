"""Checks for the exercises of chapter 1: tokenization."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from transformer.byte_bpe import ByteBPETokenizer
from transformer.tokenization import SPECIAL_TOKENS, Vocabulary, WordTokenizer, count_pairs, merge_pair

from .answers import count_differences, counts_form, dict_problems, plain_counts, require_keys, show
from .core import Mistake, as_int, call, compare, fail, outputs, report, require_unchanged, values_of
from .mistakes.a01 import BYTE_TOKENS_MISTAKES, COUNT_PAIRS_MISTAKES, MERGE_PAIR_MISTAKES, WORD_TOKENIZER_MISTAKES

__all__ = ["check_tokens_by_hand", "check_count_pairs", "check_merge_pair", "check_word_tokenizer",
           "check_byte_tokens", "BY_HAND_VOCAB"]

# Exercise 1: the vocabulary the ids are read from (id = position in the list).
BY_HAND_VOCAB = ("<pad>", "<sos>", "<eos>", "<unk>", "a", "an", "apple", "ate", "I", "pear", "you")
BY_HAND_SENTENCES = {"ids_apple": "<sos> I ate an apple <eos>", "ids_banana": "you ate a banana"}
BY_HAND_IDS = (1, 10, 7, 4, 9, 2, 0, 0)
BY_HAND_KEYS = ("ids_apple", "ids_banana", "text")


def _by_hand_expected() -> dict:
    vocab = Vocabulary(BY_HAND_VOCAB[4:])  # the specials take ids 0-3, the rest follow in order
    tok = WordTokenizer(vocab)
    return {"ids_apple": tok.encode(BY_HAND_SENTENCES["ids_apple"], add_special=False),
            "ids_banana": tok.encode(BY_HAND_SENTENCES["ids_banana"]),
            "text": tok.decode(BY_HAND_IDS)}


def _by_hand_mistakes() -> list[Mistake]:
    expected = _by_hand_expected()
    stoi = {tok: i for i, tok in enumerate(BY_HAND_VOCAB)}
    apple = [stoi[w] for w in "I ate an apple".split()]
    banana = [stoi.get(w, stoi["<unk>"]) for w in "you ate a banana".split()]
    specials = "a sentence starts with <sos> and ends with <eos>: they are tokens too, each with its id."
    from_one = "ids count from 0: <pad> has id 0."
    return [
        Mistake("no specials", specials, apple, "ids_apple"),
        Mistake("counted from 1", from_one, [i + 1 for i in expected["ids_apple"]], "ids_apple"),
        Mistake("order of the sentence", "read the ids off the vocabulary given above, not off the order of the words "
                "in the sentence.", [1, 4, 5, 6, 7, 2], "ids_apple"),
        Mistake("sos and eos swapped", "<sos> (start of sequence) has id 1 and <eos> (end of sequence) id 2.",
                [2, *apple, 1], "ids_apple"),
        Mistake("no specials", specials, banana, "ids_banana"),
        Mistake("unknown word dropped", "an unknown word still takes its place in the sentence: it becomes <unk>.",
                [1, *banana[:-1], 2], "ids_banana"),
        Mistake("unknown word as pad", "<unk> stands for an unknown word; <pad> (id 0) only fills up short sentences.",
                [1, *banana[:-1], 0, 2], "ids_banana"),
        Mistake("counted from 1", from_one, [i + 1 for i in expected["ids_banana"]], "ids_banana"),
    ]


BY_HAND_MISTAKES = _by_hand_mistakes()


def check_tokens_by_hand(answers) -> None:
    """Ids of "<sos> I ate an apple <eos>" and of "you ate a banana" (with specials), and one decoded text."""
    __tracebackhide__ = True
    name = "tokens by hand"
    require_keys(name, answers, BY_HAND_KEYS)
    expected = _by_hand_expected()
    problems = []
    for key in ("ids_apple", "ids_banana"):
        want = torch.tensor(expected[key], dtype=torch.float64)
        hints = {text: torch.tensor(ids, dtype=torch.float64) for text, ids in values_of(BY_HAND_MISTAKES, key).items()}
        problems += compare(answers[key], want, ("token",), atol=0.0, rtol=0.0, mistakes=hints, what=key)
    text = answers["text"]
    if not isinstance(text, str):
        problems.append(f"text: expected a str, got {type(text).__name__}")
    elif " ".join(text.split()) != expected["text"]:
        problems.append("text is wrong")
        if any(s in text for s in SPECIAL_TOKENS):
            problems.append("Hint: decoding drops the special tokens <pad>, <sos>, <eos> and <unk>.")
        elif len(text.split()) == 1 and len(text) > 1 and " " not in text:
            problems.append("Hint: join the words with single spaces.")
    report(name, problems)


# ---------------------------------------------------------------- counting pairs

PAIRS_CASES = (("five words", {("l", "o", "w"): 5, ("lo", "w", "e", "r"): 2, ("b", "a", "n", "a", "n", "a"): 3,
                               ("n", "e", "w"): 1, ("a",): 4}), ("no pairs", {("a",): 3, ("lo",): 1}), ("empty", {}))


def check_count_pairs(fn: Callable) -> None:
    """``fn(words)`` for ``words = {(symbol, ...): frequency}`` must count each adjacent pair, weighted by frequency."""
    __tracebackhide__ = True
    for case, words in PAIRS_CASES:
        given = copy.deepcopy(words)
        got = call(fn, (given,), f"count_pairs ({case})")
        require_unchanged(f"count_pairs ({case})", {"words": (given, words)}, ["only read it"])
        got, problems = plain_counts(f"count_pairs ({case})", got)
        if problems:
            report(f"count_pairs ({case})", problems)
        expected = dict(count_pairs(words))
        problems = dict_problems(got, expected, "pair")
        if problems:
            for hint, wrong in outputs(COUNT_PAIRS_MISTAKES, words).items():
                if got == wrong:
                    problems.append(f"Hint: {hint}")
                    break
            report(f"count_pairs ({case})", problems)
    report("count_pairs", [])


# ---------------------------------------------------------------- one merge step

def _merge_cases():
    return [
        ("merge ('l', 'o')", ("l", "o"),
         {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("s", "l", "o", "w"): 1, ("n", "e", "w"): 3}),
        ("merge ('a', 'n') in banana", ("a", "n"), {("b", "a", "n", "a", "n", "a"): 3, ("a", "n"): 1, ("a",): 2}),
        ("merge ('o', 'w') next to the symbol 'lo'", ("o", "w"), {("lo", "w"): 4, ("b", "o", "w"): 2}),
        ("merge ('a', 'a') in a a a", ("a", "a"), {("a", "a", "a"): 1, ("a", "a", "a", "a"): 2}),
        ("two words become one", ("a", "b"), {("a", "b"): 2, ("ab",): 3}),
    ]


def check_merge_pair(fn: Callable) -> None:
    """``fn(pair, words)`` must return a new dict with every occurrence of ``pair`` replaced by one symbol."""
    __tracebackhide__ = True
    for case, pair, words in _merge_cases():
        given = copy.deepcopy(words)
        got = call(fn, (pair, given), f"merge_pair ({case})")
        require_unchanged(f"merge_pair ({case})", {"words": (given, words)}, ["build and return a new dict"])
        name = f"merge_pair ({case})"
        form = counts_form(got)
        if form and form[0] == "dict":
            fail(f"✗ {name}", [f"expected a dict from words (tuples of symbols) to frequencies, "
                               f"got {type(got).__name__}"])
        if form and form[0] == "key":
            lines = [f"every key must be a word as a tuple of symbols (str); got the key {show(form[1])}"]
            if isinstance(form[1], str):
                lines.append("Hint: keep the words as tuples of symbols, e.g. ('lo', 'w'), not strings.")
            fail(f"✗ {name}", lines)
        if form:
            fail(f"✗ {name}", [f"every frequency must be a whole number, got {show(got[form[1]])} for {form[1]}"])
        expected = merge_pair(pair, words)
        freq, extra, missing = count_differences(got, expected)
        if not (freq or extra or missing):
            continue
        problems = []
        wrong_words = [w for w in words if next(iter(merge_pair(pair, {w: 1}))) not in got]
        if wrong_words:
            problems.append(f"{len(wrong_words)} of {len(words)} word(s) are not merged correctly, "
                            f"e.g. {wrong_words[0]}")
        if extra and not wrong_words:
            problems.append(f"{len(extra)} entry(ies) that should not be there, e.g. {show(extra[0])}")
        if freq:
            problems.append(f"{len(freq)} word(s) with a wrong frequency, e.g. {freq[0]}")
        if not problems:
            problems.append("the result differs from the correct merge")
        for hint, wrong in outputs(MERGE_PAIR_MISTAKES, pair, words).items():
            if got == wrong:
                problems.append(f"Hint: {hint}")
                break
        report(name, problems)
    report("merge_pair", [])


# ---------------------------------------------------------------- a word-level tokenizer

TOKENIZER_TEXTS = ("I ate an apple", "you ate a pear", "I ate a pear and an apple")
_TOKENIZER = "WordLevelTokenizer"


def _check_vocabulary(tok, ours: WordTokenizer, texts: list[str]) -> None:
    """``itos``: the specials, then each word once, in order of first appearance; ``stoi`` its inverse."""
    __tracebackhide__ = True
    itos = tok.itos
    if not isinstance(itos, list) or not all(isinstance(t, str) for t in itos):
        fail(f"✗ {_TOKENIZER}.itos", [f"expected a list of str (token of each id), got {show(itos)}"])
    if itos != ours.vocab.itos:
        problems = []
        if len(itos) != len(ours.vocab.itos):
            problems.append(f"itos: expected {len(ours.vocab.itos)} tokens, got {len(itos)}")
        first = next((i for i, (a, b) in enumerate(zip(itos, ours.vocab.itos)) if a != b), None)
        if first is not None:
            problems.append(f"itos: the first wrong token is at id {first}")
        words = [w for t in texts for w in t.split()]
        if itos[:4] != list(SPECIAL_TOKENS):
            if list(SPECIAL_TOKENS) == itos[-4:]:
                problems.append("Hint: the special tokens come first, with ids 0 to 3: <pad>, <sos>, <eos>, <unk>.")
            else:
                problems.append("Hint: the vocabulary starts with the four special tokens <pad>, <sos>, <eos>, <unk>, "
                                "in this order.")
        elif len(itos) > len(ours.vocab.itos) and len(set(itos)) < len(itos):
            problems.append("Hint: each word enters the vocabulary once, the first time it appears.")
        elif sorted(itos[4:]) == sorted(ours.vocab.itos[4:]) and itos[4:] == sorted(set(words), key=str):
            problems.append("Hint: words take ids in the order of their first appearance, not sorted.")
        report(f"{_TOKENIZER}.itos", problems)
    if tok.stoi != ours.vocab.stoi:
        report(f"{_TOKENIZER}.stoi", ["stoi must map each token to its id: stoi[itos[i]] == i for every id i"])


def _check_encode(tok, ours: WordTokenizer, texts: list[str]) -> None:
    """``encode``: ``<sos>``, one id per word (``<unk>`` for a word never seen), ``<eos>``."""
    __tracebackhide__ = True
    for text in ("I ate an apple", "an apple and a pear", "you ate a banana", "a banana and an orange", ""):
        try:
            got = tok.encode(text)
        except KeyError as exc:
            fail(f"✗ {_TOKENIZER}.encode({text!r}) raised KeyError: {exc}",
                 ["Hint: a word that is not in the vocabulary must become <unk> (id 3); try stoi.get(word, 3)."])
        except Exception as exc:  # noqa: BLE001 - any error in student code is feedback
            fail(f"✗ {_TOKENIZER}.encode({text!r}) raised {type(exc).__name__}: {exc}",
                 ["fix the error above, then run this cell again"])
        expected = ours.encode(text)
        if isinstance(got, list) and [as_int(i) for i in got] == expected:
            continue
        if not isinstance(got, list) or not all(as_int(i) is not None for i in got):
            kind = type(got).__name__ if not isinstance(got, list) else "a list with non-int items"
            report(f"{_TOKENIZER}.encode({text!r})", [f"expected a list of int ids, got {kind}"])
        wrong_ids = outputs(WORD_TOKENIZER_MISTAKES, texts, text, run=lambda cls, *a: cls(a[0]).encode(a[1]))
        problems = compare(got, torch.tensor(expected, dtype=torch.float64), ("token",), atol=0.0, rtol=0.0,
                           what=f"encode({text!r})",
                           mistakes={h: torch.tensor(m, dtype=torch.float64) for h, m in wrong_ids.items() if m})
        report(f"{_TOKENIZER}.encode({text!r})", problems or ["the ids differ from the expected ones"])


def _check_decode(tok, ours: WordTokenizer) -> None:
    """``decode``: the words of the ids, joined by single spaces, without the special tokens."""
    __tracebackhide__ = True
    for ids in ([1, 4, 5, 6, 7, 2], [1, 8, 5, 9, 10, 2, 0, 0], [1, 4, 5, 3, 3, 2], [0, 0]):
        got = call(tok.decode, (list(ids),), f"{_TOKENIZER}.decode({ids})")
        expected = ours.decode(ids)
        if got == expected:
            continue
        if not isinstance(got, str):
            report(f"{_TOKENIZER}.decode({ids})", [f"expected a str, got {type(got).__name__}"])
        problems = ["the decoded text is wrong"]
        if any(s in got for s in SPECIAL_TOKENS):
            problems.append("Hint: decode skips the four special tokens, <unk> included.")
        elif got.replace(" ", "") == expected.replace(" ", ""):
            problems.append("Hint: join the tokens with single spaces: ' '.join(words).")
        report(f"{_TOKENIZER}.decode({ids})", problems)


def check_word_tokenizer(cls) -> None:
    """``cls(texts)`` with ``itos``, ``stoi``, ``encode(text)`` and ``decode(ids)`` must match ``WordTokenizer.fit``."""
    __tracebackhide__ = True
    texts = list(TOKENIZER_TEXTS)
    ours = WordTokenizer.fit(texts)
    tok = call(cls, (list(texts),), f"{_TOKENIZER}(texts)")
    for attr in ("itos", "stoi"):
        if not hasattr(tok, attr):
            fail(f"✗ {_TOKENIZER}", [f"missing the attribute {attr}: set self.{attr} in __init__"])
    _check_vocabulary(tok, ours, texts)
    _check_encode(tok, ours, texts)
    _check_decode(tok, ours)
    report(_TOKENIZER, [])


# ---------------------------------------------------------------- byte-level BPE

BYTE_TEXTS = ("I ate 2 apples, didn't I?  Yes: café 日本 🦜\n", "the banana theme:  then bananas\n\n")
BYTE_MERGES = (("h", "e"), ("a", "n"), ("Ġ", "Ġ"), ("t", "h"), ("Ġ", "b"), ("Ċ", "Ċ"), ("Ġ", "t"), ("th", "e"),
               ("Ġb", "an"))  # as if learned: each symbol a byte or made by an earlier merge


def check_byte_tokens(fn: Callable) -> None:
    """``fn(text, merges)`` must give the tokens of :meth:`~transformer.byte_bpe.ByteBPETokenizer.tokenize`."""
    __tracebackhide__ = True
    learned = ByteBPETokenizer.train(BYTE_TEXTS * 3, 256 + 30).merges
    cases = [("no merges", BYTE_TEXTS[0], []), ("the example's 9 merges", BYTE_TEXTS[1], list(BYTE_MERGES)),
             ("30 merges learned on these two texts", "".join(BYTE_TEXTS), learned)]
    for case, text, merges in cases:
        name = f"byte_tokens({text!r}) with {case}"
        got = call(fn, (text, list(merges)), name)
        want = ByteBPETokenizer(merges).tokenize(text)
        if not isinstance(got, list) or not all(isinstance(t, str) for t in got):
            fail(f"✗ {name}", [f"expected a list of str (the tokens), got {show(got)}"])
        if got == want:
            continue
        if "".join(got) != "".join(want):
            problems = ["the tokens do not spell the text: joined, they must give its UTF-8 bytes, one printable "
                        "character per byte (GPT-2's map)"]
        else:
            at = next(i for i, (a, b) in enumerate(zip(got + [""], want + [""])) if a != b)
            problems = [f"the tokens spell the text, but they are merged wrongly from token {at} on"]
        problems += [f"Hint: {hint}" for hint, wrong in outputs(BYTE_TOKENS_MISTAKES, text, merges).items()
                     if wrong == got][:1]
        report(name, problems)
    report("byte_tokens", [])


MISTAKES = {
    "check_tokens_by_hand": BY_HAND_MISTAKES,
    "check_count_pairs": COUNT_PAIRS_MISTAKES,
    "check_merge_pair": MERGE_PAIR_MISTAKES,
    "check_word_tokenizer": WORD_TOKENIZER_MISTAKES,
    "check_byte_tokens": BYTE_TOKENS_MISTAKES,
}
