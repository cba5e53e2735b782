"""What a token costs in the cache (chapter 14), against the papers' figures and against caches measured after
decoding: Llama 2 7B's 0.5 MiB per token in 16-bit numbers (32 layers, 32 heads of 128); Mistral 7B's rolling
cache, 8 times smaller at 32k tokens (8 key/value heads, window 4096; Jiang et al. 2023); DeepSeek-V2's latent
cache of ``(d_c + d_h^R) l`` numbers, that of grouped-query attention with 2.25 groups (d_c 512, d_h^R 64,
d_h 128, 60 layers; DeepSeek-AI 2024, Table 1)."""

from __future__ import annotations

import pytest
import torch

import transformer as T
from transformer.latent_attention import LatentConfig
from transformer.sliding_window import rolling_cache

LLAMA2_7B = dict(vocab_size=32000, d_model=4096, n_heads=32, d_ff=11008, n_layers=32, max_len=4096)


def test_llama_2_7b_costs_half_a_mebibyte_per_token():
    cfg = T.TransformerConfig(**LLAMA2_7B)
    assert T.cache_bytes_per_token(cfg, torch.float16) == 2 * 32 * 32 * 128 * 2 == 524_288 == 2**19
    assert T.cache_bytes(cfg, 4096, torch.float16) == 4096 * 524_288  # no window: every position


def test_mistral_7b_rolling_cache_is_eight_times_smaller_at_32k():
    cfg = T.TransformerConfig(**{**LLAMA2_7B, "n_kv_heads": 8, "d_ff": 14336, "sliding_window": 4096})
    per_token = 2 * 32 * 8 * 128 * 2
    assert T.cache_bytes_per_token(cfg, torch.float16) == per_token == 131_072
    assert T.cache_bytes(cfg, 1000, torch.float16) == 1000 * per_token  # shorter than the window: all of it
    assert T.cache_bytes(cfg, 32768, torch.float16) == 4095 * per_token  # the last W - 1 positions
    assert round(32768 * per_token / T.cache_bytes(cfg, 32768, torch.float16)) == 8  # the paper's "8x"


def test_deepseek_v2_latent_cache_equals_gqa_with_two_and_a_quarter_groups():
    latent = LatentConfig(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                          q_lora_rank=1536)
    cfg = T.TransformerConfig(vocab_size=102400, d_model=5120, n_heads=128, d_ff=12288, n_layers=60, max_len=4096,
                              positional="rope", latent=latent)
    elements = (512 + 64) * 60  # (d_c + d_h^R) l
    assert T.cache_bytes_per_token(cfg, torch.float16) == 2 * elements
    assert elements == 2 * 2.25 * 128 * 60  # GQA's 2 n_g d_h l with n_g = 2.25


def small(**fields):
    return T.TransformerConfig(vocab_size=30, d_model=16, n_heads=4, d_ff=24, n_layers=3, max_len=64, dropout=0.0,
                               norm_first=True, norm="rms", ffn="gated", activation="silu", positional="rope",
                               linear_bias=False, pad_id=None, **fields)


@pytest.mark.parametrize("fields", [dict(n_kv_heads=2), dict(sliding_window=5), dict(sliding_window=(4, None, 7)),
                                    dict(latent=LatentConfig(6, 4, 2, 4))])
def test_the_formula_equals_the_cache_measured_after_decoding(fields):
    cfg = small(**fields)
    torch.manual_seed(0)
    model = T.DecoderOnly(cfg).double().eval()
    ids = torch.randint(0, 30, (1, 20), generator=torch.Generator().manual_seed(1))
    for length in (3, 20):
        cache = rolling_cache(model)
        with torch.no_grad():
            model(ids[:, :length], cache=cache)
        assert cache.nbytes() == T.cache_bytes(cfg, length, torch.float64)
    if "sliding_window" not in fields:
        assert cache.bytes_per_token() == T.cache_bytes_per_token(cfg, torch.float64)


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="context"):
        T.cache_bytes(small(), 0)
    with pytest.raises(TypeError, match="dtype: expected a floating-point torch.dtype"):
        T.cache_bytes(small(), 4, torch.int8)
