"""RoPE's scaled frequencies (chapter 14) equal Hugging Face's own rope-init functions
(``transformers.modeling_rope_utils``) on several configs: to 1e-12 when those run in float64
(:class:`tests.hf_float64.KeepFloat64`), and to float32 rounding (2e-6 relative) as they are."""

from __future__ import annotations

import math

import pytest
import torch

import transformer as T
from hf_float64 import KeepFloat64
from transformer.rope_scaling import rope_frequencies

tf = pytest.importorskip("transformers")
rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
tf.logging.set_verbosity_error()

SETTINGS = [
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "linear", "factor": 2.5},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
    {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64, "beta_fast": 16, "beta_slow": 2},
    {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 1.0,
     "mscale_all_dim": 0.707, "truncate": False},
    {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0},
    {"rope_type": "llama3", "factor": 4.0, "original_max_position_embeddings": 64, "low_freq_factor": 2.0,
     "high_freq_factor": 8.0},
]
HEADS = [(16, 500000.0), (64, 10000.0), (128, 500000.0)]


def hugging_face(settings, d, theta, seq_len=None):
    kind = settings["rope_type"]
    config = tf.LlamaConfig(hidden_size=4 * d, num_attention_heads=4, head_dim=d, max_position_embeddings=
                            2 * settings.get("original_max_position_embeddings", 32),
                            rope_parameters={**settings, "rope_theta": theta})
    return rope_utils.ROPE_INIT_FUNCTIONS[kind](config, torch.device("cpu"), seq_len=seq_len)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s["rope_type"])
@pytest.mark.parametrize("d, theta", HEADS)
def test_frequencies_equal_hugging_face(settings, d, theta):
    ours, factor = rope_frequencies(d, theta, settings)
    with KeepFloat64():
        exact, exact_factor = hugging_face(settings, d, theta)
    theirs, their_factor = hugging_face(settings, d, theta)
    assert exact.dtype == torch.float64 and theirs.dtype == torch.float32
    assert (ours - exact).abs().max() <= 1e-12 * exact.abs().max()
    assert ((ours - theirs.double()).abs() / theirs.double()).max() <= 2e-6
    assert math.isclose(factor, float(exact_factor), rel_tol=1e-12) and math.isclose(factor, their_factor)


@pytest.mark.parametrize("seq_len", [64, 100, 500])
def test_dynamic_ntk_equals_hugging_face_for_each_length(seq_len):
    settings = {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 64}
    ours, _ = rope_frequencies(32, 10000.0, settings, seq_len=seq_len)
    config = tf.LlamaConfig(hidden_size=128, num_attention_heads=4, head_dim=32, max_position_embeddings=64,
                            rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})
    with KeepFloat64():
        theirs, _ = rope_utils.ROPE_INIT_FUNCTIONS["dynamic"](config, torch.device("cpu"), seq_len=seq_len)
    assert (ours - theirs).abs().max() <= 1e-12
    plain, _ = rope_frequencies(32, 10000.0)
    assert torch.equal(ours, plain) == (seq_len <= 64)  # up to the training length: plain RoPE


def test_by_hand():
    """d = 4, base 100: omega = (1, 0.1). Linear x4: (0.25, 0.025). Llama 3 (factor 4, L = 40, low 1, high 4): the
    wavelengths 2 pi and 20 pi; 2 pi < 40 / 4 is kept; 20 pi = 62.8 > 40 is divided: (1, 0.025)."""
    assert torch.allclose(rope_frequencies(4, 100.0)[0], torch.tensor([1.0, 0.1], dtype=torch.float64))
    linear = rope_frequencies(4, 100.0, {"rope_type": "linear", "factor": 4.0})[0]
    assert torch.allclose(linear, torch.tensor([0.25, 0.025], dtype=torch.float64))
    llama3 = {"rope_type": "llama3", "factor": 4.0, "original_max_position_embeddings": 40, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0}
    assert torch.allclose(rope_frequencies(4, 100.0, llama3)[0], torch.tensor([1.0, 0.025], dtype=torch.float64))
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 40}
    assert rope_frequencies(4, 100.0, yarn)[1] == pytest.approx(0.1 * math.log(4.0) + 1)


def test_a_wrong_ramp_misses():
    """YaRN's ramp reversed (interpolating the fast pairs, keeping the slow ones) is far from Hugging Face's."""
    settings = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64}
    with KeepFloat64():
        theirs, _ = hugging_face(settings, 64, 10000.0)
    omega = rope_frequencies(64, 10000.0)[0]
    ours = rope_frequencies(64, 10000.0, settings)[0]
    ramp = (omega - ours) / (omega - omega / 8)  # 0: kept, 1: divided by the factor
    reversed_ramp = omega / 8 * (1 - ramp) + omega * ramp
    assert ((reversed_ramp - theirs).abs() / theirs).max() > 0.5


def test_the_config_scales_every_layer_rope():
    settings = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}
    cfg = T.TransformerConfig(vocab_size=10, d_model=16, n_heads=2, d_ff=8, n_layers=2, max_len=20, norm_first=True,
                              positional="rope", rope_scaling=settings)
    omega, factor = rope_frequencies(8, 10000.0, settings)
    for block in T.DecoderOnly(cfg).causal_stack.layers:
        rope = block.self_attn.rope
        assert torch.allclose(rope.cos[5], (5 * omega).cos() * factor, atol=1e-15)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"scaling\['rope_type'\]: expected one of"):
        rope_frequencies(8, 100.0, {"rope_type": "longrope"})
    with pytest.raises(ValueError, match="scaling: expected the settings .*'original_max_position_embeddings'"):
        rope_frequencies(8, 100.0, {"rope_type": "yarn", "factor": 2.0})
    with pytest.raises(ValueError, match=r"rope_scaling\['rope_type'\]: expected one of"):
        T.TransformerConfig(positional="rope", rope_scaling={"rope_type": "dynamic", "factor": 2.0})
