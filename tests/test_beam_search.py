"""Beam search: with a beam wide enough it is exhaustive search; with a beam of one it is greedy decoding."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from transformer import EncoderDecoder, TransformerConfig, generate, greedy_decode
from transformer.decoding import beam_decode, beam_search

V, EOS = 4, 3


def table_model(seed: int):
    """Next-token logits that depend on the last two tokens: a fixed random table, so search matters."""
    table = torch.randn(V, V, V, generator=torch.Generator().manual_seed(seed)) * 2

    def logits_fn(ids):  # (k, T) -> (k, T, V); only the last position is used
        prev = ids[:, -2] if ids.shape[1] > 1 else torch.zeros_like(ids[:, -1])
        last = table[prev, ids[:, -1]]                       # (k, V)
        return last[:, None, :].expand(-1, ids.shape[1], -1)
    return table, logits_fn


def exhaustive(table, prefix, max_new, alpha):
    """Every continuation, scored by hand: ends at <eos>, or has max_new tokens."""
    best = None
    for n in range(1, max_new + 1):
        for tail in itertools.product(range(V), repeat=n):
            if EOS in tail[:-1] or (n < max_new and tail[-1] != EOS):
                continue
            ids, logp = list(prefix), 0.0
            for tok in tail:
                prev = ids[-2] if len(ids) > 1 else 0
                logp += float(table[prev, ids[-1]].log_softmax(-1)[tok])
                ids.append(tok)
            score = logp / n ** alpha
            if best is None or score > best[1] + 1e-12:
                best = (ids, score)
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_wide_beam_is_exhaustive_search(seed, alpha):
    table, fn = table_model(seed)
    ids, score = beam_search(fn, [0], beam_size=V ** 4, max_new_tokens=4, eos_id=EOS, alpha=alpha)
    want_ids, want_score = exhaustive(table, [0], 4, alpha)
    assert ids == want_ids
    assert math.isclose(score, want_score, rel_tol=1e-5, abs_tol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_beam_of_one_is_greedy(seed):
    _, fn = table_model(seed)
    ids, _ = beam_search(fn, [0], beam_size=1, max_new_tokens=6, eos_id=EOS)
    greedy = generate(fn, torch.tensor([[0]]), 6, eos_id=EOS)[0].tolist()
    assert ids == greedy


def test_a_wider_beam_finds_a_better_or_equal_score_here():
    """Not a theorem for every model; on this table a beam of 3 beats greedy, as the chapter shows."""
    gains = []
    for seed in range(20):
        _, fn = table_model(seed)
        one = beam_search(fn, [0], 1, 5, EOS, alpha=1.0)[1]
        wide = beam_search(fn, [0], V ** 5, 5, EOS, alpha=1.0)[1]
        assert wide >= one - 1e-9                      # the exhaustive optimum is never worse
        gains.append(wide - one)
    assert max(gains) > 0.05                           # and search sometimes finds a better translation


def test_beam_decode_with_one_beam_matches_greedy_decode():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=12, src_vocab_size=10, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                            dropout=0.0, max_len=16)
    model = EncoderDecoder(cfg)
    src = torch.tensor([[4, 5, 6, 2]])
    greedy = greedy_decode(model, src, 8, 1, 2)[0].tolist()
    assert beam_decode(model, src, 1, 8, 1, 2) == greedy
    wide = beam_decode(model, src, 4, 8, 1, 2)
    assert wide[0] == 1 and len(wide) <= 9


@pytest.mark.parametrize("kwargs, message", [({"beam_size": 0}, "beam_size: expected a whole number >= 1, got 0"),
                                             ({"max_new_tokens": 0}, "max_new_tokens: expected a whole number >= 1"),
                                             ({"prefix": []}, "prefix: expected at least one token")])
def test_bad_arguments_are_named(kwargs, message):
    _, fn = table_model(0)
    args = {"logits_fn": fn, "prefix": [0], "beam_size": 2, "max_new_tokens": 3, "eos_id": EOS, **kwargs}
    with pytest.raises(ValueError, match=message):
        beam_search(**args)
