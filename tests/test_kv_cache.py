"""The key/value cache (chapter 12): generating with it gives the tokens generation without it gives, greedy and
sampled with the same generator, for every positional scheme; its logits equal the full forward's, position by
position; it holds ``(batch, n_kv_heads, seq, d_h)`` per layer."""

from __future__ import annotations

import pytest
import torch

import transformer as T

POSITIONAL = ["sinusoidal", "learned", "relative", "rope", "none"]


def model(positional="rope", seed=0, dtype=torch.float64, **kw):
    torch.manual_seed(seed)
    base = dict(vocab_size=23, d_model=32, n_heads=4, d_ff=48, n_layers=2, dropout=0.0, max_len=48,
                norm_first=True, positional=positional, pad_id=0)
    return T.DecoderOnly(T.TransformerConfig(**{**base, **kw})).to(dtype).eval()


PREFIX = torch.tensor([[5, 6, 7, 8], [0, 2, 3, 4], [9, 0, 11, 12]])  # <pad> (0) in the prefix of two rows


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("extra", [{}, {"n_kv_heads": 2, "norm": "rms", "ffn": "gated", "activation": "silu"},
                                   {"norm_first": False, "n_kv_heads": 1, "rope_pairs": "half"},
                                   {"fast": True, "n_kv_heads": 2}])
def test_cached_greedy_generation_gives_the_same_tokens(positional, extra):
    m = model(positional, **extra)
    expected = T.generate(m, PREFIX, 30)
    assert torch.equal(T.generate_cached(m, PREFIX, 30), expected)
    assert expected.shape == (3, 34)


@pytest.mark.parametrize("positional", POSITIONAL)
def test_cached_sampling_gives_the_same_tokens_with_the_same_generator(positional):
    m = model(positional, seed=1, n_kv_heads=2)
    pads = 0
    for kw in ({"temperature": 1.0}, {"temperature": 0.7, "top_k": 5}, {"temperature": 1.3, "top_p": 0.8},
               {"temperature": 5.0}):
        a = T.generate(m, PREFIX, 30, generator=torch.Generator().manual_seed(3), **kw)
        b = T.generate_cached(m, PREFIX, 30, generator=torch.Generator().manual_seed(3), **kw)
        assert torch.equal(a, b), kw
        pads += int((a[:, 4:] == 0).sum())
    assert pads > 0, "a sampled <pad>, hidden from the later steps, is among the cases"
    c = T.generate_cached(m, PREFIX, 30, temperature=5.0, generator=torch.Generator().manual_seed(4))
    assert not torch.equal(a, c)  # another generator, other tokens: the test can tell


def test_with_an_end_of_sequence_token_both_stop_and_pad_alike():
    m = model("learned", seed=2)
    greedy = T.generate(m, PREFIX, 30)
    eos = int(greedy[0, 6])  # a token the first row produces early
    a = T.generate(m, PREFIX, 30, eos_id=eos, temperature=1.0, generator=torch.Generator().manual_seed(5))
    b = T.generate_cached(m, PREFIX, 30, eos_id=eos, temperature=1.0, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    assert torch.equal(T.generate(m, PREFIX, 30, eos_id=eos), T.generate_cached(m, PREFIX, 30, eos_id=eos))


def test_cached_generation_runs_the_model_in_eval_mode_then_restores_its_mode():
    # Like greedy_decode and sample_decode: dropout off while decoding, the caller's mode afterwards
    m = model("learned", seed=3, dropout=0.5)  # built in eval mode: dropout is off
    expected = T.generate(m, PREFIX, 20)
    m.train()
    assert torch.equal(T.generate_cached(m, PREFIX, 20), expected)
    assert m.training
    dropped = T.generate(m, PREFIX, 20)  # in training mode dropout changes the tokens: the test can tell
    assert not torch.equal(dropped, expected)


@pytest.mark.parametrize("positional", POSITIONAL)
def test_cached_logits_equal_the_full_forward_position_by_position(positional):
    m = model(positional, seed=3, n_kv_heads=2)
    ids = torch.randint(0, 23, (2, 17), generator=torch.Generator().manual_seed(6))
    full = m(ids)
    cache = T.KVCache(2)
    pieces = [m(ids[:, :5], cache=cache), m(ids[:, 5:6], cache=cache), m(ids[:, 6:10], cache=cache)]
    pieces += [m(ids[:, t : t + 1], cache=cache) for t in range(10, 17)]
    assert (torch.cat(pieces, dim=1) - full).abs().max() <= 1e-12
    assert len(cache) == 17 and tuple(cache.real.shape) == (2, 17)
    assert [tuple(v.shape) for v in cache.values] == [(2, 2, 17, 8)] * 2
    assert cache.bytes_per_token() == 2 * 2 * 2 * 8 * 8  # key and value, 2 layers, 2 heads of 8 float64


def test_cached_logits_in_float32_agree_to_float32_rounding():
    m = model("rope", seed=4, dtype=torch.float32)
    ids = torch.randint(1, 23, (1, 20), generator=torch.Generator().manual_seed(7))
    cache = T.KVCache(2)
    stepped = torch.cat([m(ids[:, t : t + 1], cache=cache) for t in range(20)], dim=1)
    assert (stepped - m(ids)).abs().max() <= 1e-4


def test_the_cache_refuses_another_batch():
    m = model()
    cache = T.KVCache(2)
    m(PREFIX, cache=cache)
    with pytest.raises(ValueError, match=r"ids: expected the cache's batch of 3 sequences, got shape \(2, 1\)"):
        m(PREFIX[:2, :1], cache=cache)
    with pytest.raises(ValueError, match="cache: expected None for cross-attention"):
        T.MultiHeadAttention(8, 2)(torch.ones(1, 2, 8), torch.ones(1, 3, 8), cache=cache.layers[0])
