"""Probes of assignment 01, tokenization (kernel side: standard library only)."""

from __future__ import annotations


def call_each(user, name, arglists):
    """``name(*args)`` for every ``args`` of ``arglists``: the results and the arguments after each call."""
    fn = user[name]
    replies = []
    for args in arglists:
        args = list(args)
        out = fn(*args)
        replies.append({"out": out, "args": args})
    return replies


def tokenizer(user, texts, text=None, ids=None):
    """WordLevelTokenizer(texts): its itos and stoi, or ``encode(text)``, ``decode(ids)`` and
    ``decode(ids + [0, 0])`` (two <pad> at the end)."""
    tok = user["WordLevelTokenizer"](list(texts))
    if text is None:
        return {"itos": list(tok.itos) if hasattr(tok, "itos") else None,
                "stoi": dict(tok.stoi) if hasattr(tok, "stoi") else None}
    return {"encode": tok.encode(text), "decode": tok.decode(list(ids)), "padded": tok.decode(list(ids) + [0, 0])}
