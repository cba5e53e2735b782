"""What the heads of the tiny model do, measured on sentences (chapters 5 and 7).

Every function reads the attention weights with forward hooks
(:func:`transformer.hooks.attention_weights`): the model runs as it is.

- :func:`stacked_attention`: the weights of every layer, ``(layers, batch, heads, seq, seq)``;
- :func:`previous_token_scores`: how much each head puts on the word just before;
- :func:`pronoun_weights`: how much each head puts, from the pronoun, on its referent and on the other noun;
- :func:`adjective_weights`: how much each head puts, from the pronoun, on the adjective at the end;
- :func:`find_heads`: the best head for each, as recorded in ``tiny_lm.json``.
"""

from __future__ import annotations

import torch

from ..hooks import attention_weights
from . import encode, grammar


def stacked_attention(model, ids: torch.Tensor) -> torch.Tensor:
    """``ids (batch, seq)`` -> the self-attention weights of every layer, ``(layers, batch, heads, seq, seq)``."""
    weights = attention_weights(model, ids)  # {"encoder.layers.0.self_attn": (batch, heads, seq, seq), ...}
    return torch.stack(list(weights.values()))  # (layers, batch, heads, seq, seq)


def previous_token_scores(model, ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Mean weight of query ``t`` on key ``t - 1``, over the real tokens ``t >= 1``: ``(layers, heads)``."""
    w = stacked_attention(model, ids)  # (layers, batch, heads, seq, seq)
    on_previous = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (layers, batch, heads, seq - 1): w[t, t - 1]
    real = (ids[:, 1:] != pad_id)[None, :, None, :]  # (1, batch, 1, seq - 1)
    return (on_previous * real).sum(dim=(1, 3)) / real.sum(dim=(1, 3))  # (layers, heads)


def pronoun_positions(tokenizer, sentences: list[str]) -> torch.Tensor:
    """Token positions ``(n, 3)`` of the pronoun, its referent and the other noun in each pronoun sentence."""
    rows = []
    for s in sentences:
        found = grammar.referent(s)
        words = [tokenizer.vocab.itos[i] for i in tokenizer.encode(s)]
        pronoun = next(i for i, w in enumerate(words) if w in ("it", "they"))
        rows.append([pronoun, words.index(found[0]), words.index(found[1])])
    return torch.tensor(rows)


def pronoun_weights(model, tokenizer, sentences: list[str]) -> torch.Tensor:
    """From the pronoun of each sentence: the weight on its referent and on the other noun, ``(layers, heads, n, 2)``.

    ``result[l, h, k, 0] > result[l, h, k, 1]``: head ``h`` of layer ``l`` finds the referent in sentence ``k``.
    """
    ids = encode(tokenizer, sentences)  # (n, seq)
    where = pronoun_positions(tokenizer, sentences)  # (n, 3)
    w = stacked_attention(model, ids)  # (layers, n, heads, seq, seq)
    n = torch.arange(len(sentences))
    rows = w.permute(1, 3, 4, 0, 2)[n, where[:, 0]]  # (n, T_k, layers, heads): the pronoun's row
    picked = torch.stack([rows[n, where[:, 1]], rows[n, where[:, 2]]], dim=-1)  # (n, layers, heads, 2)
    return picked.permute(1, 2, 0, 3)  # (layers, heads, n, 2)


def adjective_weights(model, tokenizer, sentences: list[str]) -> torch.Tensor:
    """From the pronoun of each sentence: the weight on the last word (the adjective), ``(layers, heads, n)``."""
    ids = encode(tokenizer, sentences)  # (n, seq)
    pronoun = pronoun_positions(tokenizer, sentences)[:, 0]  # (n,)
    last = (ids != tokenizer.vocab.pad_id).sum(dim=1) - 2  # (n,): the word before <eos>
    w = stacked_attention(model, ids)  # (layers, n, heads, seq, seq)
    n = torch.arange(len(sentences))
    return w.permute(1, 3, 4, 0, 2)[n, pronoun, last].permute(1, 2, 0)  # (n, layers, heads) -> (layers, heads, n)


def find_heads(model, tokenizer, pronoun_sentences: list[str], sentences: list[str]) -> dict:
    """The best head of each kind, with its layer, index and score, and the scores of all heads:

    - ``previous_token``: highest :func:`previous_token_scores` on ``sentences``;
    - ``pronoun``: most often more weight on the referent than on the other noun, on ``pronoun_sentences``;
    - ``pronoun_to_adjective``: most weight from the pronoun on the adjective at the end.
    """
    prev = previous_token_scores(model, encode(tokenizer, sentences), tokenizer.vocab.pad_id)  # (layers, heads)
    right = pronoun_weights(model, tokenizer, pronoun_sentences)  # (layers, heads, n, 2)
    accuracy = (right[..., 0] > right[..., 1]).float().mean(dim=-1)  # (layers, heads)
    to_adjective = adjective_weights(model, tokenizer, pronoun_sentences).mean(dim=-1)  # (layers, heads)
    found = {}
    for name, score, what in (("previous_token", prev, "mean_weight"), ("pronoun", accuracy, "accuracy"),
                              ("pronoun_to_adjective", to_adjective, "mean_weight")):
        layer, head = divmod(int(score.argmax()), score.shape[1])
        found[name] = {"layer": layer, "head": head, what: round(float(score[layer, head]), 4),
                       "all": [[round(float(v), 4) for v in row] for row in score]}
    return found
