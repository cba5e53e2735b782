"""Hugging Face's Llama as a configuration of ours (chapter 12): RMSNorm, SwiGLU, RoPE on half-split pairs,
pre-norm, no biases, grouped-query attention. Random small configs (random weights, nothing downloaded), float64,
eval mode.

Hugging Face computes two things in float32 whatever the model's dtype: ``LlamaRMSNorm`` casts its input to
float32, and ``LlamaRotaryEmbedding`` computes its angles (and ``inv_freq``) in float32. Its float64 logits are
therefore only float32-accurate. The exact test gives those two modules their float64 forms (the same formulas,
written out below) and asks for 1e-10; the test of the unmodified model asks for float32 rounding, 1e-5 relative
to the largest logit. A deliberately wrong mapping must miss by more than 1e-3, so the tolerances can fail.
"""

from __future__ import annotations

import random
import types

import pytest
import torch

import transformer as T
from transformer.hf import from_hf, llama_config

tf = pytest.importorskip("transformers")
tf.logging.set_verbosity_error()


def llama_settings(seed: int) -> dict:
    rng = random.Random(200 + seed)
    heads = rng.choice([2, 4, 8])
    kv = rng.choice([d for d in (1, 2, 4, 8) if heads % d == 0])
    return dict(vocab_size=rng.randint(20, 60), hidden_size=heads * rng.choice([4, 8]), num_attention_heads=heads,
                num_key_value_heads=kv, num_hidden_layers=rng.randint(1, 3), intermediate_size=rng.choice([16, 40]),
                max_position_embeddings=rng.randint(16, 24), rms_norm_eps=rng.choice([1e-6, 1e-3]),
                rope_parameters={"rope_type": "default", "rope_theta": rng.choice([10000.0, 500.0, 5e5])},
                tie_word_embeddings=seed % 3 == 1, pad_token_id=None, bos_token_id=None, eos_token_id=None)


def llama(settings: dict, cls: str = "LlamaForCausalLM", seed: int = 0):
    """Every parameter drawn from N(0, 0.3^2): Llama's own init (unit norm gains) would hide a swapped gain."""
    config = tf.LlamaConfig(**settings, head_dim=settings["hidden_size"] // settings["num_attention_heads"])
    model = getattr(tf, cls)(config).to(torch.float64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return model


def in_float64(model):
    """Hugging Face's RMSNorm and rotary angles, computed in the model's float64 instead of float32."""
    def rms_norm(self, x):  # LlamaRMSNorm.forward without its .to(torch.float32)
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    c = model.config
    d = c.hidden_size // c.num_attention_heads
    inv_freq = 1.0 / c.rope_parameters["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)

    def rotary(self, x, position_ids):  # LlamaRotaryEmbedding.forward without its .float()
        freqs = position_ids[..., None].to(torch.float64) * inv_freq  # (batch, seq, d / 2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (batch, seq, d): each angle once per half
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    for module in model.modules():
        if isinstance(module, tf.models.llama.modeling_llama.LlamaRMSNorm):
            module.forward = types.MethodType(rms_norm, module)
    rotary_emb = model.model.rotary_emb if hasattr(model, "model") else model.rotary_emb
    rotary_emb.forward = types.MethodType(rotary, rotary_emb)
    return model


def ids_for(settings, seed, batch=2):
    seq = settings["max_position_embeddings"] - 2
    return torch.randint(0, settings["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("seed", range(6))
def test_logits_equal_llama_for_causal_lm_in_float64(seed):
    settings = llama_settings(seed)
    theirs = in_float64(llama(settings, seed=seed))
    ours = from_hf(theirs)
    assert ours.cfg.kv_heads == settings["num_key_value_heads"] and ours.head.tied == (seed % 3 == 1)
    ids = ids_for(settings, seed)
    with torch.no_grad():
        expected = theirs(ids).logits
        assert (ours(ids) - expected).abs().max() <= 1e-10
        assert expected.abs().max() > 0.5


@pytest.mark.parametrize("seed", range(3))
def test_logits_equal_the_unmodified_model_to_float32_rounding(seed):
    """Unmodified, Hugging Face normalises and rotates in float32: agreement to 1e-5 of the largest logit."""
    settings = llama_settings(seed)
    theirs = llama(settings, seed=seed)
    ids = ids_for(settings, seed + 10)
    with torch.no_grad():
        expected = theirs(ids).logits
        assert (from_hf(theirs)(ids) - expected).abs().max() <= 1e-5 * expected.abs().max()


def test_llama_model_hidden_states_equal_last_hidden_state():
    settings = llama_settings(1)
    theirs = in_float64(llama(settings, "LlamaModel", seed=1))
    ids = ids_for(settings, 3)
    with torch.no_grad():
        assert (from_hf(theirs).hidden(ids) - theirs(ids).last_hidden_state).abs().max() <= 1e-10


@pytest.mark.parametrize("wrong", ["rope_pairs", "gate_and_up"])
def test_a_wrong_mapping_misses(wrong):
    settings = llama_settings(2)
    theirs = in_float64(llama(settings, seed=2))
    ours = from_hf(theirs)
    if wrong == "rope_pairs":  # the paper's interleaved pairs instead of Llama's halves
        for block in ours.causal_stack.layers:
            block.self_attn.rope.pairs = "interleaved"
    else:
        for block in ours.causal_stack.layers:
            block.ff.linear1, block.ff.linear3 = block.ff.linear3, block.ff.linear1
    ids = ids_for(settings, 4)
    with torch.no_grad():
        assert (ours(ids) - theirs(ids).logits).abs().max() > 1e-3


def test_swiglu_equals_llama_mlp():
    settings = llama_settings(0)
    mlp = llama(settings, seed=5).model.layers[0].mlp
    ours = T.GatedFeedForward(settings["hidden_size"], settings["intermediate_size"]).double()
    for mine, theirs in ((ours.linear1, mlp.gate_proj), (ours.linear3, mlp.up_proj), (ours.linear2, mlp.down_proj)):
        mine.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 5, settings["hidden_size"], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    by_hand = mlp.down_proj.weight @ (torch.nn.functional.silu(mlp.gate_proj.weight @ x[0, 0]) * (
        mlp.up_proj.weight @ x[0, 0]))  # W2 (silu(W1 x) * W3 x), no biases
    with torch.no_grad():
        assert (ours(x) - mlp(x)).abs().max() <= 1e-12
        assert (ours(x)[0, 0] - by_hand).abs().max() <= 1e-12


@pytest.mark.parametrize("seed", [0, 4])
def test_cached_greedy_generation_equals_hugging_face_generate(seed):
    settings = llama_settings(seed)
    theirs = in_float64(llama(settings, seed=seed))
    prefix = ids_for(settings, seed + 20)[:, :4]
    n_new = settings["max_position_embeddings"] - 4
    with torch.no_grad():
        expected = theirs.generate(prefix, max_new_tokens=n_new, do_sample=False, pad_token_id=0)
    assert expected.shape == (2, 4 + n_new)
    assert torch.equal(T.generate_cached(from_hf(theirs), prefix, n_new), expected)


def test_configs_we_cannot_express_are_refused():
    settings = llama_settings(0)
    with pytest.raises(ValueError, match=r"config.rope_parameters\['rope_type'\]: expected 'default'.*got 'dynamic'"):
        llama_config(tf.LlamaConfig(**{**settings, "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4,
                                                                       "factor": 2.0}}))
    with pytest.raises(ValueError, match="config.head_dim: expected"):
        llama_config(tf.LlamaConfig(**settings, head_dim=4 * settings["hidden_size"]))
    with pytest.raises(ValueError, match="config.mlp_bias: expected False"):
        llama_config(tf.LlamaConfig(**settings, mlp_bias=True))
    with_biases = llama({**settings, "attention_bias": True, "mlp_bias": True}, seed=7)
    ids = ids_for(settings, 8)
    with torch.no_grad():  # both biases on: linear_bias=True, and still the same logits
        assert (from_hf(in_float64(with_biases))(ids) - with_biases(ids).logits).abs().max() <= 1e-10
