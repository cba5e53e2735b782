"""The judges of exercise 4 of assignment 01, the word-level tokenizer: its vocabulary and its decoded text; its
hidden test, ``ex4_word_tokenizer``, is in ``a01.py``."""

from __future__ import annotations

from grader.hidden.judge import describe, fields

SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]


def vocabulary_judge(itos):
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


def text_exact(got, want, name):
    if not isinstance(got, str):
        return f"{name}: expected a str, got {describe(got)}"
    if got != want:
        return f"{name} is wrong (the words of the vocabulary, joined by single spaces, without the special tokens)"
    return None
