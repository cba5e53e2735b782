"""Hugging Face's Mistral (a window shorter than the sequence), Mixtral, Qwen3-MoE, DeepSeek-V3 (latent attention,
dense then MoE layers, shared experts, its router) and Llama with RoPE scaled by ``llama3`` and ``yarn``, as
configurations of ours (chapter 14). Random small configs (nothing downloaded), float64, eval mode.

Hugging Face's code runs in float64 throughout (:class:`hf_float64.KeepFloat64`): its float32 casts would otherwise
limit the agreement to float32 rounding, which one test checks on the unmodified models (1e-5; measured about
1e-7). Logits agree to 1e-10 of the largest logit (measured: at most 1.0e-15, DeepSeek-V3); cached decoding (a
rolling cache for the windowed layers, the absorbed projections for latent attention) equals the full forward to
1e-10 too, and greedy generation picks Hugging Face's tokens. A deliberately wrong variant of each must miss by
more than 1e-3, so the tolerance can fail."""

from __future__ import annotations

import contextlib
import random

import pytest
import torch

import transformer as T
from hf_float64 import KeepFloat64, randomize
from transformer.hf import from_hf
from transformer.sliding_window import RollingLayerCache, rolling_cache

tf = pytest.importorskip("transformers")
tf.logging.set_verbosity_error()
TOL = 1e-10


def common(seed: int) -> dict:
    rng = random.Random(300 + seed)
    heads = rng.choice([2, 4])
    d_h = rng.choice([4, 8])
    return dict(vocab_size=rng.randint(20, 50), hidden_size=heads * d_h, num_attention_heads=heads,
                num_key_value_heads=rng.choice([1, heads]), head_dim=d_h, num_hidden_layers=rng.randint(2, 3),
                intermediate_size=rng.choice([12, 24]), max_position_embeddings=32, rms_norm_eps=1e-5,
                tie_word_embeddings=seed % 2 == 1, pad_token_id=None, bos_token_id=None, eos_token_id=None)


def build(kind: str, seed: int, float64: bool = True):
    c = common(seed)
    theta = {"rope_theta": random.Random(seed).choice([100.0, 10000.0])}
    configs = {
        "mistral": lambda: tf.MistralConfig(**c, sliding_window=4 + seed, rope_parameters=theta),
        "mixtral": lambda: tf.MixtralConfig(**c, sliding_window=6, num_local_experts=4, num_experts_per_tok=2,
                                            rope_parameters=theta),
        "qwen3_moe": lambda: tf.Qwen3MoeConfig(**{**c, "num_hidden_layers": 3}, num_experts=6, num_experts_per_tok=2,
                                               moe_intermediate_size=10, norm_topk_prob=seed % 2 == 0,
                                               decoder_sparse_step=1 + seed % 2, mlp_only_layers=[0],
                                               rope_parameters=theta),
        "deepseek_v3": lambda: tf.DeepseekV3Config(**deepseek(seed), rope_parameters=theta if seed == 0 else {
            **theta, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8, "mscale": 1.0,
            "mscale_all_dim": 0.8}),
        "llama_llama3": lambda: tf.LlamaConfig(**c, rope_parameters={
            **theta, "rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
        "llama_yarn": lambda: tf.LlamaConfig(**c, rope_parameters={
            **theta, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}),
    }
    classes = {"mistral": tf.MistralForCausalLM, "mixtral": tf.MixtralForCausalLM,
               "qwen3_moe": tf.Qwen3MoeForCausalLM, "deepseek_v3": tf.DeepseekV3ForCausalLM,
               "llama_llama3": tf.LlamaForCausalLM,
               "llama_yarn": tf.LlamaForCausalLM}
    with KeepFloat64() if float64 else contextlib.nullcontext():  # RoPE's frequencies, computed when built
        config = configs[kind]()
        config._experts_implementation = "eager"  # the loop over experts (the grouped kernel takes no float64)
        model = classes[kind](config)
    model = randomize(model, seed)
    with torch.no_grad():
        for layer in model.model.layers:  # DeepSeek-V3's correction bias, zero when built: random, so that it counts
            if hasattr(getattr(layer.mlp, "gate", None), "e_score_correction_bias"):
                bias = layer.mlp.gate.e_score_correction_bias
                bias.copy_(torch.randn(bias.shape, generator=torch.Generator().manual_seed(seed), dtype=bias.dtype))
    return model


def deepseek(seed: int) -> dict:
    """Latent attention with (seed 1) or without (seed 0) the queries' latent, interleaved or half-split RoPE pairs,
    one dense layer then experts in 4 groups, 2 of which a token may use."""
    return dict(vocab_size=40, hidden_size=24, num_attention_heads=3, num_key_value_heads=3, num_hidden_layers=3,
                intermediate_size=20, moe_intermediate_size=8, n_routed_experts=8, n_shared_experts=1 + seed,
                num_experts_per_tok=3, n_group=4, topk_group=2, first_k_dense_replace=1, norm_topk_prob=seed == 0,
                routed_scaling_factor=2.5, q_lora_rank=None if seed == 0 else 12, kv_lora_rank=10,
                qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, max_position_embeddings=32,
                rope_interleave=seed == 0, tie_word_embeddings=False, pad_token_id=None, bos_token_id=None,
                eos_token_id=None)


def ids_for(model, seed: int, seq: int = 20):
    return torch.randint(0, model.config.vocab_size, (2, seq), generator=torch.Generator().manual_seed(seed))


def miss(ours, theirs, ids) -> float:
    with torch.no_grad(), KeepFloat64():
        expected = theirs(ids).logits
    with torch.no_grad():
        return float((ours(ids) - expected).abs().max() / expected.abs().max())


KINDS = ["mistral", "mixtral", "qwen3_moe", "deepseek_v3", "llama_llama3", "llama_yarn"]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", KINDS)
def test_logits_equal_hugging_face_in_float64(kind, seed):
    theirs = build(kind, seed)
    ours = from_hf(theirs)
    assert miss(ours, theirs, ids_for(theirs, seed)) <= TOL


@pytest.mark.parametrize("kind", KINDS)
def test_logits_equal_the_unmodified_model_to_float32_rounding(kind):
    """Unmodified, Hugging Face normalises, rotates and routes in float32: agreement to 1e-5 of the largest logit
    (measured: about 1e-7)."""
    theirs = build(kind, 0, float64=False)
    ids = ids_for(theirs, 3)
    with torch.no_grad():
        expected = theirs(ids).logits
        assert (from_hf(theirs)(ids) - expected).abs().max() <= 1e-5 * expected.abs().max()


@pytest.mark.parametrize("kind", KINDS)
def test_cached_decoding_equals_the_full_forward(kind):
    theirs = build(kind, 0)
    ours = from_hf(theirs)
    ids = ids_for(theirs, 5)
    cache = rolling_cache(ours)
    for block in ours.causal_stack.layers:  # latent attention decodes with the absorbed projections
        if isinstance(block.self_attn, T.LatentAttention):
            block.self_attn.absorb = True
    with torch.no_grad():
        full = ours(ids)
        steps = [ours(ids[:, :3], cache=cache)] + [ours(ids[:, t:t + 1], cache=cache) for t in range(3, ids.shape[1])]
    assert (torch.cat(steps, dim=1) - full).abs().max() <= TOL * full.abs().max()
    windowed = [layer for layer in cache.layers if isinstance(layer, RollingLayerCache)]
    assert len(windowed) == (len(cache.layers) if kind in ("mistral", "mixtral") else 0)
    assert all(layer.k.shape[-2] == layer.window - 1 for layer in windowed)  # never more than the window


def test_the_window_is_shorter_than_the_sequence_and_matters():
    """Mistral's window of 4 on 20 positions: the same model without the window misses."""
    theirs = build("mistral", 0)
    ours = from_hf(theirs)
    assert ours.cfg.sliding_window == 4
    for block in ours.causal_stack.layers:
        block.self_attn.window = None
    assert miss(ours, theirs, ids_for(theirs, 0)) > 1e-3


def test_off_by_one_in_the_window_misses():
    """A window that also sees ``t - W`` (W + 1 keys) is not Hugging Face's."""
    theirs = build("mistral", 1)
    ours = from_hf(theirs)
    for block in ours.causal_stack.layers:
        block.self_attn.window += 1
    assert miss(ours, theirs, ids_for(theirs, 1)) > 1e-3


def test_softmax_after_the_top_k_misses():
    """Qwen3-MoE without norm_topk_prob weighs by the softmax over all experts; a softmax over the kept k (what
    renormalising would give) is another model."""
    theirs = build("qwen3_moe", 1)
    assert theirs.config.norm_topk_prob is False
    ours = from_hf(theirs)
    for block in ours.causal_stack.layers:
        if hasattr(block.ff, "router"):
            block.ff.router.moe.renormalize = True
    assert miss(ours, theirs, ids_for(theirs, 1)) > 1e-3


def test_qwen3_without_its_query_and_key_norms_misses():
    theirs = build("qwen3_moe", 0)
    ours = from_hf(theirs)
    for block in ours.causal_stack.layers:
        block.self_attn.q_norm = block.self_attn.k_norm = None
    assert miss(ours, theirs, ids_for(theirs, 0)) > 1e-3


@pytest.mark.parametrize("kind", ["llama_llama3", "llama_yarn"])
def test_unscaled_rope_misses(kind):
    """The same Llama with plain RoPE (what chapter 12's conversion would build) is not the scaled model."""
    theirs = build(kind, 0)
    ours = from_hf(theirs)
    plain = from_hf(build("mistral", 0)).causal_stack.layers[0].self_attn.rope  # unscaled, of the same sizes
    for block in ours.causal_stack.layers:
        block.self_attn.rope.cos, block.self_attn.rope.sin = plain.cos, plain.sin
    assert miss(ours, theirs, ids_for(theirs, 0)) > 1e-3


def test_qwen3_sparse_and_dense_layers():
    theirs = build("qwen3_moe", 1)  # decoder_sparse_step 2, mlp_only_layers [0]: only layer 1 has experts
    ours = from_hf(theirs)
    assert [hasattr(b.ff, "router") for b in ours.causal_stack.layers] == [False, True, False]
    sparse = [type(layer.mlp).__name__.endswith("SparseMoeBlock") for layer in theirs.model.layers]
    assert sparse == [False, True, False]


@pytest.mark.parametrize("wrong", ["no_correction_bias", "softmax_scores", "rope_pairs", "no_groups"])
def test_a_wrong_deepseek_misses(wrong):
    theirs = build("deepseek_v3", 0)
    ours = from_hf(theirs)
    assert ours.cfg.latent.q_lora_rank is None and ours.cfg.rope_pairs == "interleaved"
    assert [hasattr(b.ff, "router") for b in ours.causal_stack.layers] == [False, True, True]
    for block in ours.causal_stack.layers:
        if wrong == "rope_pairs":
            block.self_attn.rope.pairs = "half"
        elif hasattr(block.ff, "router"):
            router = block.ff.router
            if wrong == "no_correction_bias":
                router.bias.zero_()
            elif wrong == "softmax_scores":
                router.moe.scoring = "softmax"
            else:
                router.moe.n_groups = 1
    assert miss(ours, theirs, ids_for(theirs, 2)) > 1e-3


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_generation_equals_hugging_face_generate(kind):
    """Our cached generation (chapter 12's generate_cached) picks the tokens Hugging Face's cached generate picks."""
    theirs = build(kind, 1)
    prefix = ids_for(theirs, 7)[:, :4]
    with torch.no_grad(), KeepFloat64():
        expected = theirs.generate(prefix, attention_mask=torch.ones_like(prefix), max_new_tokens=20,
                                   do_sample=False, pad_token_id=0)
    assert expected.shape == (2, 24)
    assert torch.equal(T.generate_cached(from_hf(theirs), prefix, 20), expected)


def test_configs_we_cannot_express_are_refused():
    """Heads wider than d_model / n_heads (Mistral's default head_dim, 128) and a RoPE whose table changes with the
    length (dynamic NTK) are refused, naming the field."""
    c = common(0)
    with pytest.raises(ValueError, match="config.head_dim: expected"):
        from_hf(tf.MistralForCausalLM(tf.MistralConfig(**{**c, "head_dim": 128})))
    with pytest.raises(ValueError, match=r"config.rope_parameters\['rope_type'\]: expected 'default'.*'dynamic'"):
        from_hf(tf.MistralForCausalLM(tf.MistralConfig(**c, rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                                             "rope_theta": 1e4})))
