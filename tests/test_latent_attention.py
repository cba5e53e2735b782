"""Multi-head latent attention (chapter 14): the absorbed projections give the naive form's numbers on the latent
cache, cached decoding equals the full forward, and the cache holds ``kv_lora_rank + qk_rope_head_dim`` numbers per
token and layer (measured), against ``2 n_heads d_h`` for multi-head attention. Equality with Hugging Face's
DeepSeek-V3 is in tests/test_hf_open_models.py."""

from __future__ import annotations

import pytest
import torch

import transformer as T
from transformer.latent_attention import LatentAttention, LatentConfig
from transformer.moe import MoEConfig


def config(q_lora_rank=None, pairs="interleaved", moe=None):
    latent = LatentConfig(kv_lora_rank=10, qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5,
                          q_lora_rank=q_lora_rank)
    return T.TransformerConfig(vocab_size=30, d_model=24, n_heads=3, d_ff=20, n_layers=2, max_len=40, dropout=0.0,
                               norm_first=True, norm="rms", ffn="gated", activation="silu", positional="rope",
                               rope_pairs=pairs, linear_bias=False, pad_id=None, latent=latent, moe=moe)


def model(cfg, seed=0):
    torch.manual_seed(seed)
    m = T.DecoderOnly(cfg).double().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype) * 0.3)
    return m


def set_absorb(m, absorb: bool):
    for block in m.causal_stack.layers:
        block.self_attn.absorb = absorb


def decode(m, ids, prefix=4):
    cache = T.KVCache(len(m.causal_stack.layers))
    with torch.no_grad():
        steps = [m(ids[:, :prefix], cache=cache)] + [m(ids[:, t:t + 1], cache=cache)
                                                     for t in range(prefix, ids.shape[1])]
    return torch.cat(steps, dim=1), cache


@pytest.mark.parametrize("q_lora_rank", [None, 8])
@pytest.mark.parametrize("pairs", ["interleaved", "half"])
def test_absorbed_equals_naive_and_cached_equals_full(q_lora_rank, pairs):
    m = model(config(q_lora_rank, pairs, MoEConfig(4, 2, scoring="sigmoid", n_shared=1)))
    assert isinstance(m.causal_stack.layers[0].self_attn, LatentAttention)
    ids = torch.randint(0, 30, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        naive = m(ids)
        set_absorb(m, True)
        absorbed = m(ids)
    cached, _ = decode(m, ids)
    set_absorb(m, False)
    cached_naive, _ = decode(m, ids)
    scale = naive.abs().max()
    for other in (absorbed, cached, cached_naive):
        assert (other - naive).abs().max() <= 1e-12 * scale


def test_the_latent_cache_is_small_and_measured():
    m = model(config())
    ids = torch.randint(0, 30, (2, 16), generator=torch.Generator().manual_seed(2))
    _, cache = decode(m, ids)
    per_token = (10 + 4) * 8 * 2  # (kv_lora_rank + qk_rope_head_dim) float64 numbers, in each of 2 layers
    assert cache.nbytes() == 2 * 16 * per_token and cache.bytes_per_token() == per_token
    multi_head = 2 * 3 * (6 + 4) * 8 * 2  # keys (qk 10) and values (at least as wide) of 3 heads, 2 layers
    assert cache.bytes_per_token() < multi_head / 4


def test_without_the_decoupled_rope_it_misses():
    """The positions travel only through the rotated part: with no rotation the model is another."""
    m = model(config())
    ids = torch.randint(0, 30, (1, 10), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        right = m(ids)
        for block in m.causal_stack.layers:
            block.self_attn.rope.cos.fill_(1.0)  # no rotation: the decoupled RoPE part ignored
            block.self_attn.rope.sin.zero_()
        assert (m(ids) - right).abs().max() > 1e-3


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="kv_lora_rank"):
        LatentConfig(0, 4, 4, 4)
    with pytest.raises(TypeError, match="latent: expected None or a LatentConfig"):
        T.TransformerConfig(latent={"kv_lora_rank": 4})
    m = model(config())
    with pytest.raises(ValueError, match="memory: expected None"):
        m.causal_stack.layers[0].self_attn(torch.zeros(1, 2, 24, dtype=torch.float64), torch.zeros(1, 2, 24))
