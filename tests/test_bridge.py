"""transformer.bridge.to_transformer_lens: TransformerLens's own model (``boot_native``, nothing downloaded) from ours,
on every architecture the package builds, against our forward pass, in float64.

TransformerLens computes its RMSNorm and its RoPE tables in float32 whatever the dtype. The exact comparisons give
those two steps their float64 form (``in_float64``, tests/transformer_lens_float64.py) and ask for 1e-10; the
unmodified model is asked for what its float32 steps allow, and a test shows that they are what limits it. Each
mapping the converter makes (the permuted RoPE features, the scaled embeddings, the gate of SwiGLU) is shown to be
needed: without it the logits miss by more than 1e-3.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import sys

import pytest
import torch

from layout.paths import PACKAGE
from transformer import EncoderDecoder, TransformerConfig, induction, interp
from transformer.bridge import to_transformer_lens, transformer_lens_name
from transformer.model import DecoderOnly, EncoderOnly
from transformer.vision import VisionTransformer
from transformer_lens_float64 import in_float64

pytest.importorskip("transformer_lens")

SIZES = dict(vocab_size=23, d_model=24, n_heads=4, d_ff=40, n_layers=2, max_len=16, dropout=0.0, norm_first=True,
             pad_id=None)
LLAMA = dict(norm="rms", ffn="gated", activation="silu", positional="rope", rope_pairs="half", linear_bias=False,
             n_kv_heads=2, scale_embeddings=False)  # chapter 12's choices
ARCHITECTURES = {
    "LayerNorm, learned positions": dict(positional="learned", scale_embeddings=False, tie_weights=False),
    "2017 embeddings: sinusoidal, scaled, tied": dict(),
    "no positions, exact GELU, no biases": dict(positional="none", activation="gelu", linear_bias=False),
    "tanh GELU, a bias on the logits": dict(positional="learned", activation="gelu_tanh", head_bias=True),
    "RoPE on interleaved pairs": dict(positional="rope"),
    "RoPE on half-split pairs, grouped-query": dict(positional="rope", rope_pairs="half", n_kv_heads=2),
    "multi-query": dict(positional="learned", n_kv_heads=1),
    "RMSNorm, attention only": dict(norm="rms", ffn="none"),
    "SwiGLU with LayerNorm": dict(positional="learned", ffn="gated", activation="silu", linear_bias=False),
    "Llama-style (chapter 12)": LLAMA,
    "the fast paths": dict(positional="rope", rope_pairs="half", fast=True),
}
IDS = torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(7))  # (batch, seq)


def ours(kind=DecoderOnly, seed=0, **fields):
    """A float64 model in eval mode with non-trivial norms and biases, so that a misplaced one shows."""
    torch.manual_seed(seed)
    model = kind(TransformerConfig(**{**SIZES, **fields})).double().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("gamma", "beta", "bias")):
                p.add_(0.3 * torch.randn_like(p))
    return model


def gap(model, bridge, ids=IDS, **kw) -> float:
    """The largest difference of the logits, relative to the largest logit."""
    with torch.no_grad():
        expected = model(ids)
        return ((bridge(ids, **kw) - expected).abs().max() / expected.abs().max()).item()


@pytest.mark.parametrize("kind", [DecoderOnly, EncoderOnly], ids=["decoder", "encoder"])
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_every_architecture_gives_our_logits_and_activations(name, kind):
    model = ours(kind, **ARCHITECTURES[name])
    bridge = in_float64(to_transformer_lens(model))
    logits, cache = interp.run_with_cache(model, IDS)
    with torch.no_grad():
        their_logits, theirs = bridge.run_with_cache(IDS)
    assert torch.allclose(logits, their_logits, atol=1e-10, rtol=1e-10)
    for activation in cache:  # embed, resid_pre, pattern, z, attn.out, ffn.out, resid_post, final
        assert torch.allclose(cache[activation], theirs[transformer_lens_name(activation)], atol=1e-10,
                              rtol=1e-10), activation
    assert logits.abs().max() > 0.5


@pytest.mark.parametrize("name, tolerance", [("LayerNorm, learned positions", 1e-10),
                                             ("RoPE on interleaved pairs", 1e-7), ("Llama-style (chapter 12)", 1e-6)])
def test_unmodified_transformer_lens_is_limited_by_its_float32_steps_only(name, tolerance):
    """LayerNorm and added positions: no float32 step, 1e-10. RoPE: float32 tables; RMSNorm: float32 normalisation.
    There the float64 forms of those steps (the test above) close the gap, so they are what limits it."""
    model = ours(DecoderOnly, **ARCHITECTURES[name])
    unmodified = gap(model, to_transformer_lens(model))
    assert unmodified <= tolerance
    if tolerance > 1e-10:
        assert unmodified > 1e-13 and gap(model, in_float64(to_transformer_lens(model))) <= 1e-14


def test_chapter_12_tiny_llama_and_its_padding():
    """Chapter 12's configuration as it is: tied output layer and pad_id=0, which ours hides from attention.
    TransformerLens agrees on ids without it, or when told of it (a mask, and positions counted through it)."""
    cfg = TransformerConfig(vocab_size=54, d_model=32, n_heads=4, n_kv_heads=2, d_ff=64, n_layers=2, dropout=0.0,
                            max_len=16, norm_first=True, norm="rms", ffn="gated", activation="silu", positional="rope",
                            rope_pairs="half", linear_bias=False, scale_embeddings=False)
    torch.manual_seed(0)
    model = DecoderOnly(cfg).double().eval()
    bridge = in_float64(to_transformer_lens(model))
    ids = torch.randint(1, 54, (2, 12), generator=torch.Generator().manual_seed(1))  # (batch, seq), no <pad>
    assert gap(model, bridge, ids) <= 1e-10
    ids[0, 5], ids[1, 9:] = 0, 0  # <pad> inside one sentence, at the end of the other
    told = dict(attention_mask=(ids != 0).long(), position_ids=torch.arange(12)[None])
    assert gap(model, bridge, ids, **told) <= 1e-10
    assert gap(model, bridge, ids) > 1e-3


def test_chapter_13_models():
    """The trained tiny language model (an encoder) and the induction model; with a relative position bias, which
    TransformerLens's model does not have, the induction model is refused."""
    from transformer.pretrained import encode, tiny_lm

    model, tokenizer = tiny_lm()
    model = model.double()
    ids = encode(tokenizer, ["the animal didn't cross the streets because <mask> was too tired"])  # (1, 15)
    assert (ids != model.cfg.pad_id).all()
    assert gap(model, to_transformer_lens(model), ids) <= 1e-10
    model = induction.induction_model(vocab_size=10, half=6)
    repeated = induction.repeated_tokens(2, 6, 10, torch.Generator().manual_seed(0))  # (2, 13)
    assert gap(model, to_transformer_lens(model), repeated) <= 1e-10
    with pytest.raises(ValueError, match=r"model.cfg.positional: expected one of .* got 'relative'"):
        to_transformer_lens(induction.induction_model(vocab_size=10, half=6, positional="relative"))


# ----------------------------------------------------------------------------- each mapping is needed


def _halves_taken_as_pairs(model):
    model.cfg = dataclasses.replace(model.cfg, rope_pairs="interleaved")  # the layers still rotate halves


def _embeddings_taken_as_unscaled(model):
    model.embed.tokens.scale = False


def _gate_and_linear_branch_swapped(model):
    for block in model.causal_stack.layers:
        block.ff.linear1, block.ff.linear3 = block.ff.linear3, block.ff.linear1


@pytest.mark.parametrize("architecture, wrong", [
    ("RoPE on half-split pairs, grouped-query", _halves_taken_as_pairs),
    ("2017 embeddings: sinusoidal, scaled, tied", _embeddings_taken_as_unscaled),
    ("Llama-style (chapter 12)", _gate_and_linear_branch_swapped)])
def test_a_mapping_left_out_misses_by_far_more_than_the_tolerance(architecture, wrong):
    model = ours(DecoderOnly, **ARCHITECTURES[architecture])
    converted_wrong = copy.deepcopy(model)
    wrong(converted_wrong)
    assert gap(model, in_float64(to_transformer_lens(converted_wrong))) > 1e-3
    assert gap(model, in_float64(to_transformer_lens(model))) <= 1e-10


# ----------------------------------------------------------------------------- what TransformerLens cannot express


@pytest.mark.parametrize("fields, message", [
    (dict(norm_first=False), "model.cfg.norm_first: expected True (TransformerLens's blocks are pre-norm), got False"),
    (dict(norm_first=False, type_vocab_size=2, embedding_norm=True, head_transform=True, head_bias=True,
          positional="learned"), "model.cfg.norm_first: expected True"),  # BERT's choices: refused at the first
    (dict(final_norm=False), "model.cfg.final_norm: expected None or True (TransformerLens's model ends with a norm), "
                             "got False"),
    (dict(positional="relative"), "model.cfg.positional: expected one of ['learned', 'none', 'rope', 'sinusoidal'] "
                                  "(TransformerLens adds positions to the embeddings or rotates queries and keys), "
                                  "got 'relative'"),
    (dict(type_vocab_size=2), "model.cfg.type_vocab_size: expected 0 (TransformerLens has no token types), got 2"),
    (dict(embedding_norm=True), "model.cfg.embedding_norm: expected False"),
    (dict(head_transform=True), "model.cfg.head_transform: expected False (TransformerLens's output head is one "
                                "linear layer), got True"),
    (dict(ffn="gated", activation="silu"), "model.cfg.linear_bias: expected False (TransformerLens's gated "
                                           "feed-forward has no biases), got True"),
])
def test_a_model_transformer_lens_cannot_express_is_refused(fields, message):
    with pytest.raises(ValueError) as error:
        to_transformer_lens(EncoderOnly(TransformerConfig(**{**SIZES, **fields})))
    assert message in str(error.value)


@pytest.mark.parametrize("model", [EncoderDecoder(TransformerConfig(**SIZES)), VisionTransformer(8, 4, 1, 3),
                                   torch.nn.Linear(2, 2)], ids=["EncoderDecoder", "VisionTransformer", "Linear"])
def test_a_model_that_is_not_decoder_or_encoder_only_is_refused(model):
    """The translator (cross-attention) and the Vision Transformer (patches, no vocabulary) have no TransformerLens
    form here."""
    with pytest.raises(TypeError, match=rf"model: expected a DecoderOnly or EncoderOnly model, got "
                                        rf"{type(model).__name__}"):
        to_transformer_lens(model)


def test_hook_names():
    expected = {"embed": "blocks.0.hook_resid_pre", "blocks.3.resid_pre": "blocks.3.hook_resid_pre",
                "blocks.0.attn.pattern": "blocks.0.attn.hook_pattern", "blocks.1.attn.z": "blocks.1.attn.hook_z",
                "blocks.1.attn.out": "blocks.1.hook_attn_out", "blocks.12.ffn.out": "blocks.12.hook_mlp_out",
                "blocks.0.resid_post": "blocks.0.hook_resid_post", "final": "ln_final.hook_out"}
    assert {name: transformer_lens_name(name) for name in expected} == expected
    for bad in ("blocks.x.attn.z", "blocks.1", "block.1.attn.z", "blocks.1.attn.q", "hook_embed"):
        with pytest.raises(ValueError, match=rf"name: expected an activation name of transformer.interp .*got '{bad}'"):
            transformer_lens_name(bad)


# ----------------------------------------------------------------------------- what is left as it was


def test_the_model_and_the_random_state_are_left_as_they_were():
    model = ours(DecoderOnly, **LLAMA).float().train()
    before = {name: t.clone() for name, t in model.state_dict().items()}
    rng = torch.get_rng_state()
    bridge = to_transformer_lens(model)
    assert torch.equal(torch.get_rng_state(), rng)
    assert model.training and not bridge.training
    assert all(torch.equal(before[name], t) for name, t in model.state_dict().items())
    assert bridge.unembed.weight.dtype == torch.float32


def test_the_package_imports_transformer_lens_only_inside_functions(monkeypatch):
    """`import transformer` works without TransformerLens; without it the converter says how to install it."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only, not function bodies
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "transformer_lens" for n in names), f"{path.name} imports it"
    monkeypatch.setitem(sys.modules, "transformer_lens", None)  # an import of it now fails
    with pytest.raises(ImportError, match=r"optional dependency `transformer_lens`: pip install -e \"\.\[lens\]\""):
        to_transformer_lens(ours(DecoderOnly))
