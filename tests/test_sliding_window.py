"""Sliding-window attention (chapter 14): the banded mask by hand and equal to Hugging Face's mask functions, a
rolling cache whose decoding equals the full forward and whose memory stays flat past the window (measured), and
local and global layers interleaved."""

from __future__ import annotations

import pytest
import torch

import transformer as T
from transformer.masks import sliding_window_mask
from transformer.sliding_window import RollingLayerCache, rolling_cache

masking = pytest.importorskip("transformers.masking_utils")


def test_the_band_by_hand():
    """W = 3: position 4 sees 2, 3, 4 (three keys, itself included), never 1."""
    expected = torch.tensor([[1, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0],
                             [1, 1, 1, 0, 0],
                             [0, 1, 1, 1, 0],
                             [0, 0, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(sliding_window_mask(5, 3), expected)
    assert torch.equal(sliding_window_mask(2, 3, past=3), expected[3:])  # the last two queries, after a cache of 3


@pytest.mark.parametrize("window", [1, 2, 4, 9])
def test_the_band_equals_hugging_face(window):
    rule = masking.sliding_window_causal_mask_function(window)
    q, k = torch.arange(9)[:, None], torch.arange(9)[None, :]
    theirs = rule(0, 0, q, k)  # (9, 9): Hugging Face's kv_idx > q_idx - W and kv_idx <= q_idx
    assert torch.equal(sliding_window_mask(9, window), theirs)
    wrong = (k <= q) & (k >= q - window)  # W + 1 keys: the off-by-one
    assert not torch.equal(wrong, theirs) or window >= 9


def config(windows, n_layers=3):
    return T.TransformerConfig(vocab_size=30, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, n_layers=n_layers,
                               max_len=64, dropout=0.0, norm_first=True, norm="rms", ffn="gated", activation="silu",
                               positional="rope", linear_bias=False, pad_id=None, sliding_window=windows)


def decode(model, ids, cache, prefix=3):
    with torch.no_grad():
        steps = [model(ids[:, :prefix], cache=cache)]
        sizes = []
        for t in range(prefix, ids.shape[1]):
            steps.append(model(ids[:, t:t + 1], cache=cache))
            sizes.append(cache.nbytes())
    return torch.cat(steps, dim=1), sizes


@pytest.mark.parametrize("windows", [3, (4, None, 2), (None, 5, None)])
def test_rolling_decoding_equals_the_full_forward_with_the_band(windows):
    torch.manual_seed(0)
    model = T.DecoderOnly(config(windows)).double().eval()
    ids = torch.randint(0, 30, (2, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids)
    steps, _ = decode(model, ids, rolling_cache(model))
    assert (steps - full).abs().max() <= 1e-12
    by_hand = model.causal_stack.layers[0].self_attn.window
    if by_hand is not None:  # the full forward is the band: without it, the same model differs
        for block in model.causal_stack.layers:
            block.self_attn.window = None
        with torch.no_grad():
            assert (model(ids) - full).abs().max() > 1e-3


def test_the_rolling_cache_stays_flat_past_the_window():
    torch.manual_seed(0)
    model = T.DecoderOnly(config(4)).double().eval()
    ids = torch.randint(0, 30, (1, 50), generator=torch.Generator().manual_seed(2))
    _, rolling = decode(model, ids, rolling_cache(model))
    _, full = decode(model, ids, T.KVCache(3))
    per_position = 2 * 3 * 2 * 4 * 8  # keys and values, 3 layers, 2 kv heads, d_h 4, float64
    assert rolling[-1] == rolling[5] == 3 * per_position  # the last W - 1 = 3 positions, from step 1 on
    assert full[-1] == 50 * per_position  # the full cache grows with the sequence
    cache = rolling_cache(model)
    assert all(isinstance(layer, RollingLayerCache) for layer in cache.layers)


def test_local_and_global_layers_interleave():
    model = T.DecoderOnly(config((4, None, 4)))
    assert [b.self_attn.window for b in model.causal_stack.layers] == [4, None, 4]
    cache = rolling_cache(model)
    assert [type(layer).__name__ for layer in cache.layers] == ["RollingLayerCache", "LayerCache", "RollingLayerCache"]


def test_bad_windows_are_refused():
    with pytest.raises(ValueError, match="sliding_window: expected an int, None or a tuple of n_layers=3"):
        config((4, None))
    with pytest.raises(ValueError, match="sliding_window"):
        config(0)
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(3, 0)
