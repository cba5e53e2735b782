"""Probes of assignment 01, tokenization (kernel side: standard library only)."""

from __future__ import annotations

import copy


def call_each(user, name, arglists):
    """``name(*args)`` for every ``args`` of ``arglists``: the results and the arguments after each call."""
    fn = user[name]
    replies = []
    for args in arglists:
        args = list(args)
        out = fn(*args)
        replies.append({"out": out, "args": args})
    return replies


def call_again(user, name, words, pairs=None):
    """The function called on one and the same dict ``words`` several times, as a caller would: ``name(words)``
    twice, or ``name(pair, words)`` for every ``pair`` of ``pairs``; each result copied as soon as it is returned
    (a later call may change a dict it returned)."""
    fn = user[name]
    calls = [[words]] * 2 if pairs is None else [[tuple(pair), words] for pair in pairs]
    return [copy.deepcopy(fn(*args)) for args in calls]


def tokenizer(user, texts, text=None, ids=None):
    """WordLevelTokenizer(texts): its itos and stoi, or ``encode(text)``, ``decode(ids)`` and
    ``decode(ids + [0, 0])`` (two <pad> at the end)."""
    tok = user["WordLevelTokenizer"](list(texts))
    if text is None:
        return {"itos": list(tok.itos) if hasattr(tok, "itos") else None,
                "stoi": dict(tok.stoi) if hasattr(tok, "stoi") else None}
    return {"encode": tok.encode(text), "decode": tok.decode(list(ids)), "padded": tok.decode(list(ids) + [0, 0])}
