"""Ours equals Hugging Face: GPT-2 and BERT by configuration, RoPE as Llama rotates.

Hugging Face models are built from small random configs (random weights, nothing downloaded), in float64
and eval mode; `transformer.hf.from_hf` converts them and the outputs must agree to 1e-10 (1e-5 in float32).
A deliberately wrong mapping must miss by more than 1e-3, so the tolerance can fail.
"""

from __future__ import annotations

import ast
import random

import pytest
import torch

from layout.paths import PACKAGE
from transformer import RotaryEmbedding
from transformer.hf import bert_config, from_hf, gpt2_config

tf = pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

tf.logging.set_verbosity_error()  # small random vocabularies make it warn about GPT-2's bos/eos ids


def gpt2_settings(seed: int) -> dict:
    rng = random.Random(seed)
    heads = rng.choice([1, 2, 3])
    return dict(vocab_size=rng.randint(20, 60), n_positions=rng.randint(12, 20), n_embd=heads * rng.choice([4, 6, 8]),
                n_layer=rng.randint(1, 3), n_head=heads, n_inner=rng.choice([None, 40]),
                activation_function=["gelu_new", "gelu_pytorch_tanh", "gelu", "relu"][seed % 4],
                layer_norm_epsilon=rng.choice([1e-5, 1e-3]), tie_word_embeddings=seed % 4 != 2,
                bos_token_id=0, eos_token_id=0)


def bert_settings(seed: int) -> dict:
    rng = random.Random(100 + seed)
    heads = rng.choice([1, 2, 4])
    return dict(vocab_size=rng.randint(20, 60), hidden_size=heads * rng.choice([4, 8]), num_attention_heads=heads,
                num_hidden_layers=rng.randint(1, 3), intermediate_size=rng.choice([16, 40]),
                max_position_embeddings=rng.randint(12, 20), type_vocab_size=rng.randint(1, 3),
                hidden_act=["gelu", "gelu_new", "relu", "gelu"][seed % 4],
                layer_norm_eps=rng.choice([1e-12, 1e-3]), tie_word_embeddings=seed % 4 != 1)


def hf_model(cls, settings: dict, dtype=torch.float64, seed: int = 0):
    """A Hugging Face model with every parameter drawn from N(0, 0.3^2): its own init (std 0.02, zero biases,
    unit LayerNorm gains) would let a mapping that mixes up biases or gains, or a tiny logit, pass unnoticed."""
    config = (tf.GPT2Config if cls.startswith("GPT2") else tf.BertConfig)(**settings)
    model = getattr(tf, cls)(config).to(dtype).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():  # tied parameters are one Parameter, drawn once
            p.copy_(torch.randn(p.shape, generator=g, dtype=dtype) * 0.3)
    return model


def random_ids(vocab: int, batch: int, seq: int, seed: int, low: int = 0) -> torch.Tensor:
    return torch.randint(low, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def close(ours: torch.Tensor, theirs: torch.Tensor, tol: float) -> float:
    diff = (ours - theirs).abs().max().item()
    assert diff < tol, f"max |ours - Hugging Face| = {diff:.3g}, expected < {tol:g}"
    return diff


# ----------------------------------------------------------------------------- GPT-2


@pytest.mark.parametrize("seed", range(4))
def test_gpt2_logits_and_hidden_states_equal_hugging_face(seed):
    settings = gpt2_settings(seed)
    ids = random_ids(settings["vocab_size"], 2, settings["n_positions"] - seed, seed)
    lm, bare = hf_model("GPT2LMHeadModel", settings, seed=seed), hf_model("GPT2Model", settings, seed=seed)
    ours_lm, ours_bare = from_hf(lm), from_hf(bare)
    assert ours_lm.cfg.pad_id is None  # GPT-2 has no <pad>: no padding mask
    with torch.no_grad():
        close(ours_lm(ids), lm(ids).logits, 1e-10)
        close(ours_bare.hidden(ids), bare(ids).last_hidden_state, 1e-10)  # after ln_f


def test_gpt2_with_padding_equals_hugging_face_given_the_attention_mask():
    settings = {**gpt2_settings(1), "pad_token_id": 1}
    ids = random_ids(settings["vocab_size"], 3, 9, seed=5, low=2)
    ids[0, 6:], ids[1, 2:] = 1, 1  # right padding: every query still sees position 0
    lm = hf_model("GPT2LMHeadModel", settings)
    ours = from_hf(lm)
    assert ours.cfg.pad_id == 1
    with torch.no_grad():
        theirs = lm(ids, attention_mask=(ids != 1).long()).logits
        close(ours(ids), theirs, 1e-10)
        assert (lm(ids).logits - theirs).abs().max() > 1e-3  # the padding mask matters here


def test_gpt2_config_is_expressed_by_fields():
    cfg = gpt2_config(tf.GPT2Config(n_embd=12, n_head=3, n_layer=2, n_positions=16, vocab_size=30))
    assert (cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, cfg.max_len) == (12, 3, 2, 48, 16)
    assert (cfg.activation, cfg.positional, cfg.norm_first, cfg.use_final_norm) == ("gelu_tanh", "learned", True, True)
    assert not cfg.scale_embeddings and cfg.tie_weights and cfg.pad_id is None


# ----------------------------------------------------------------------------- BERT


def padded_bert_inputs(settings: dict, seed: int):
    ids = random_ids(settings["vocab_size"], 3, settings["max_position_embeddings"] - 2, seed, low=1)
    ids[0, -4:], ids[2, 3:] = 0, 0  # <pad> = 0, BERT's pad_token_id
    types = random_ids(settings["type_vocab_size"], 3, ids.shape[1], seed + 1)
    return ids, types, (ids != 0).long()


@pytest.mark.parametrize("seed", range(4))
def test_bert_hidden_states_and_mlm_logits_equal_hugging_face(seed):
    settings = bert_settings(seed)
    ids, types, attention_mask = padded_bert_inputs(settings, seed)
    bare, mlm = hf_model("BertModel", settings, seed=seed), hf_model("BertForMaskedLM", settings, seed=seed)
    ours_bare, ours_mlm = from_hf(bare), from_hf(mlm)
    with torch.no_grad():
        theirs = bare(ids, attention_mask=attention_mask, token_type_ids=types).last_hidden_state
        close(ours_bare.encode(ids, types), theirs, 1e-10)
        close(ours_mlm(ids, types), mlm(ids, attention_mask=attention_mask, token_type_ids=types).logits, 1e-10)
        # no token types given means type 0 everywhere, in both
        close(ours_bare.encode(ids), bare(ids, attention_mask=attention_mask).last_hidden_state, 1e-10)


def test_bert_config_is_expressed_by_fields():
    cfg = bert_config(tf.BertConfig(**bert_settings(0)))
    assert (cfg.norm_first, cfg.use_final_norm, cfg.positional, cfg.pad_id) == (False, False, "learned", 0)
    assert cfg.embedding_norm and cfg.head_transform and cfg.head_bias and not cfg.scale_embeddings
    settings = bert_settings(0)
    assert (cfg.type_vocab_size, cfg.norm_eps) == (settings["type_vocab_size"], settings["layer_norm_eps"])


# ----------------------------------------------------------------------------- float32, mode, laziness


def test_float32_models_agree_to_1e_5():
    gpt2 = hf_model("GPT2LMHeadModel", gpt2_settings(0), torch.float32)
    ids = random_ids(gpt2.config.vocab_size, 2, 10, seed=0)
    bert = hf_model("BertForMaskedLM", bert_settings(1), torch.float32)
    b_ids, types, attention_mask = padded_bert_inputs(bert_settings(1), seed=1)
    ours_gpt2, ours_bert = from_hf(gpt2), from_hf(bert)
    assert ours_gpt2.embed.tokens.weight.dtype == torch.float32
    with torch.no_grad():
        close(ours_gpt2(ids), gpt2(ids).logits, 1e-5)
        close(ours_bert(b_ids, types), bert(b_ids, attention_mask=attention_mask, token_type_ids=types).logits, 1e-5)


def test_the_converted_model_keeps_the_mode_and_dtype():
    model = hf_model("GPT2Model", gpt2_settings(2)).train()
    ours = from_hf(model)
    assert ours.training and ours.causal_stack.layers[0].ff.linear1.weight.dtype == torch.float64


def test_the_package_imports_transformers_only_inside_functions():
    """`import transformer` works without `transformers`: no module of the package imports it at the top level."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only, not function bodies
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "transformers" for n in names), f"{path.name} imports transformers"


# ----------------------------------------------------------------------------- the tolerance can fail


def test_a_wrong_activation_misses_by_far_more_than_the_tolerance():
    settings = {**gpt2_settings(0), "activation_function": "gelu_new"}
    lm = hf_model("GPT2LMHeadModel", settings)
    ours = from_hf(lm)
    ids = random_ids(settings["vocab_size"], 2, 10, seed=0)
    for block in ours.causal_stack.layers:
        block.ff.activation = "relu"  # the mapping gelu_new -> relu would be wrong
    with torch.no_grad():
        assert (ours(ids) - lm(ids).logits).abs().max() > 1e-3


def test_a_forgotten_transpose_misses_by_far_more_than_the_tolerance():
    lm = hf_model("GPT2LMHeadModel", gpt2_settings(1))
    ours = from_hf(lm)
    d = lm.config.n_embd
    with torch.no_grad():
        w_q = lm.transformer.h[0].attn.c_attn.weight[:, :d]  # (in, out): Conv1D's layout, copied as if (out, in)
        ours.causal_stack.layers[0].self_attn.w_q.weight.copy_(w_q)
        ids = random_ids(lm.config.vocab_size, 2, 10, seed=1)
        assert (ours(ids) - lm(ids).logits).abs().max() > 1e-3


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("cls, settings, words", [
    ("GPT2Config", dict(scale_attn_by_inverse_layer_idx=True),
     ("config.scale_attn_by_inverse_layer_idx:", "expected False", "got True")),
    ("GPT2Config", dict(scale_attn_weights=False), ("config.scale_attn_weights:", "expected True", "got False")),
    ("GPT2Config", dict(activation_function="quick_gelu"),
     ("config.activation_function:", "'gelu_new'", "got 'quick_gelu'")),
    ("BertConfig", dict(is_decoder=True), ("config.is_decoder:", "expected False", "got True")),
    ("BertConfig", dict(hidden_act="tanh"), ("config.hidden_act:", "got 'tanh'")),
])
def test_configs_we_cannot_express_are_refused(cls, settings, words):
    base = dict(n_embd=8, n_head=2, n_layer=1, n_positions=8, vocab_size=20) if cls == "GPT2Config" else \
        dict(hidden_size=8, num_attention_heads=2, num_hidden_layers=1, intermediate_size=16, vocab_size=20)
    convert = gpt2_config if cls == "GPT2Config" else bert_config
    with pytest.raises(ValueError) as err:
        convert(getattr(tf, cls)(**base, **settings))
    for w in words:
        assert w in str(err.value), str(err.value)


# ----------------------------------------------------------------------------- RoPE: Llama's rotate_half


def llama_rope(d_h: int, max_len: int, theta: float) -> LlamaRotaryEmbedding:
    config = tf.LlamaConfig(hidden_size=2 * d_h, num_attention_heads=2, max_position_embeddings=max_len,
                            rope_parameters={"rope_type": "default", "rope_theta": theta})
    return LlamaRotaryEmbedding(config)


ROPE_CASES = [(4, 8, 10000.0), (8, 16, 10000.0), (16, 24, 500.0), (32, 12, 1e6)]  # (d_h, seq, theta)


@pytest.mark.parametrize("d_h, seq, theta", ROPE_CASES)
def test_rope_half_rotates_as_llama_exactly(d_h, seq, theta):
    """The pairing: Llama's own `apply_rotary_pos_emb` with our angles equals ours, to 1e-10 in float64."""
    g = torch.Generator().manual_seed(d_h)
    q, k = (torch.randn(2, 3, seq, d_h, dtype=torch.float64, generator=g) for _ in range(2))
    ours = RotaryEmbedding(d_h, seq, base=theta, pairs="half")
    cos = torch.cat([ours.cos, ours.cos], dim=-1)[None]  # (1, seq, d_h): Llama repeats each angle per half
    sin = torch.cat([ours.sin, ours.sin], dim=-1)[None]  # (1, seq, d_h)
    q_llama, k_llama = apply_rotary_pos_emb(q, k, cos, sin)
    close(ours(q), q_llama, 1e-10)
    close(ours(k), k_llama, 1e-10)
    assert (RotaryEmbedding(d_h, seq, base=theta)(q) - q_llama).abs().max() > 1e-3  # interleaved pairs differ


@pytest.mark.parametrize("d_h, seq, theta", ROPE_CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_rope_half_equals_llama_rotary_embedding(d_h, seq, theta, dtype):
    """End to end with `LlamaRotaryEmbedding`, which computes its angles in float32 whatever the model's dtype:
    ours (float64 angles) agree to float32 rounding of the angles, ``|dq| <= |q| * seq * 2**-20``."""
    g = torch.Generator().manual_seed(seq)
    q, k = (torch.randn(2, 3, seq, d_h, dtype=dtype, generator=g) for _ in range(2))
    positions = torch.arange(seq)[None].expand(2, seq)  # (batch, seq)
    cos, sin = llama_rope(d_h, seq, theta)(q, positions)
    q_llama, k_llama = apply_rotary_pos_emb(q, k, cos, sin)
    ours = RotaryEmbedding(d_h, seq, base=theta, pairs="half")
    bound = max(q.abs().max(), k.abs().max()).item() * seq * 2**-20
    assert bound < 1e-3
    close(ours(q), q_llama, bound)
    close(ours(k), k_llama, bound)
    assert (RotaryEmbedding(d_h, seq, base=theta)(q) - q_llama).abs().max() > 1e-3
