"""The package's cache, patching, head split and scores (transformer.interp, transformer.induction, transformer.lens)
against TransformerLens, built from our models by the package's converter (transformer.bridge, no download), in
float64.

``to_transformer_lens`` builds TransformerLens 4's own model (``TransformerBridge.boot_native``) and loads our weights
into it as they are, with none of the weight processing of TransformerLens's loaders (``fold_ln``,
``center_writing_weights``, ``center_unembed``, ``fold_value_biases``): those rewrite the weights so that the logits
stay the same but cached activations do not (folding the norms' ``gamma`` and ``beta`` into the next matrices changes
what the norms output; centring the writing weights changes the residual stream by its mean). Without them the two
models hold the same numbers, and every cached activation agrees to 1e-10. TransformerLens computes its RMSNorm and
its RoPE tables in float32 whatever the dtype; the Llama-style model (chapter 12: RMSNorm, SwiGLU, RoPE on half-split
pairs, grouped-query attention, no biases) is compared with those two steps in float64 (``in_float64``; their own
tolerance is tested in test_bridge.py). The models and inputs here are not the chapter's: random weights, other
sizes.
"""

from __future__ import annotations

import pytest
import torch

from transformer import TransformerConfig, interp, lens
from transformer import induction as ind
from transformer.bridge import to_transformer_lens, transformer_lens_name
from transformer.model import DecoderOnly, EncoderOnly
from transformer_lens_float64 import in_float64

tl = pytest.importorskip("transformer_lens")
pytest.importorskip("transformer_lens.model_bridge.sources.native")

TOL = dict(atol=1e-10, rtol=1e-10)
LEARNED = dict(positional="learned", scale_embeddings=False, tie_weights=False, activation="relu")
# chapter 12's Llama-style choices (with ffn="gated", SwiGLU), 4 query heads sharing 2 key/value heads
LLAMA = dict(norm="rms", activation="silu", positional="rope", rope_pairs="half", linear_bias=False,
             n_heads=4, n_kv_heads=2, scale_embeddings=False)


def _ours(kind=DecoderOnly, ffn="mlp", seed=3, **fields):
    cfg = TransformerConfig(**{**dict(vocab_size=23, d_model=24, n_heads=3, d_ff=40, n_layers=3, max_len=16), **LEARNED,
                               "ffn": ffn, **fields}, dropout=0.0, norm_first=True, pad_id=None)
    torch.manual_seed(seed)
    model = kind(cfg).double().eval()
    with torch.no_grad():  # non-trivial norms and biases, so that a misplaced one shows
        for name, p in model.named_parameters():
            if name.endswith(("gamma", "beta", "bias")):
                p.add_(0.3 * torch.randn_like(p))
    return model


def _lens(model):
    """TransformerLens's model of ``model`` (the package's converter), its float32 steps in float64."""
    return in_float64(to_transformer_lens(model))


@pytest.fixture(scope="module", params=[(DecoderOnly, "mlp", {}), (DecoderOnly, "none", {}), (EncoderOnly, "mlp", {}),
                                        (DecoderOnly, "gated", LLAMA)],
                ids=["decoder", "attention-only decoder", "encoder", "Llama-style decoder"])
def pair(request):
    kind, ffn, fields = request.param
    model = _ours(kind, ffn, seed=3 + request.param_index, **fields)
    ids = torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(7))  # (batch, seq)
    return model, _lens(model), ids


def test_every_cached_activation_equals_transformer_lens(pair):
    model, bridge, ids = pair
    logits, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        their_logits, theirs = bridge.run_with_cache(ids)
    assert torch.allclose(logits, their_logits, **TOL)
    positions = theirs["hook_pos_embed"] if "hook_pos_embed" in theirs else 0  # none with RoPE
    assert torch.allclose(cache["embed"], theirs["hook_embed"] + positions, **TOL)
    for name in cache:
        assert torch.allclose(cache[name], theirs[transformer_lens_name(name)], **TOL), name
    per_block = 6 if model.cfg.ffn != "none" else 5  # resid_pre, pattern, z, attn.out, (ffn.out,) resid_post
    assert len(cache) == 2 + per_block * model.cfg.n_layers  # and embed, final


def test_head_outputs_add_up_to_the_attention_output_and_equal_theirs(pair):
    model, bridge, ids = pair
    _, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        _, theirs = bridge.run_with_cache(ids)
    d_h = model.cfg.d_h
    for i in range(model.cfg.n_layers):
        heads = interp.head_outputs(model, cache, i)  # (batch, seq, heads, d_model)
        z, w_o = theirs[f"blocks.{i}.attn.hook_z"], bridge.blocks[i].attn.o.weight  # (b, s, h, d_h), (d_model, h d_h)
        by_hand = torch.stack([z[:, :, h] @ w_o[:, h * d_h:(h + 1) * d_h].T for h in range(model.cfg.n_heads)], dim=2)
        assert torch.allclose(heads, by_hand, **TOL)
        assert torch.allclose(heads.sum(dim=2) + bridge.blocks[i].attn.o.bias, theirs[f"blocks.{i}.hook_attn_out"],
                              **TOL)


def _their_patch(source, head=None, position=None):
    def hook(act, hook):
        act = act.clone()
        where = (slice(None), slice(None) if position is None else position, *(() if head is None else (head,)))
        act[where] = source[where]
        return act
    return hook


@pytest.mark.parametrize("name, head, position", [("blocks.1.attn.z", 2, None), ("blocks.0.attn.z", 0, 5),
                                                  ("blocks.2.resid_pre", None, 4), ("blocks.0.attn.out", None, None)])
def test_patching_a_clean_activation_gives_transformer_lens_logits(pair, name, head, position):
    model, bridge, ids = pair
    corrupted = ids.flip(dims=[1])
    _, clean = interp.run_with_cache(model, ids)
    patched, _ = interp.run_with_patches(model, corrupted, {name: interp.patched_from(clean[name], head, position)})
    with torch.no_grad():
        _, their_clean = bridge.run_with_cache(ids)
        hook_name = transformer_lens_name(name)
        theirs = bridge.run_with_hooks(corrupted, fwd_hooks=[(hook_name, _their_patch(their_clean[hook_name], head,
                                                                                    position))])
    assert torch.allclose(patched, theirs, **TOL)
    assert not torch.allclose(patched, interp.run_with_cache(model, corrupted)[0], atol=1e-6)  # the patch did something


def test_zero_and_mean_ablation_of_a_head_give_transformer_lens_logits(pair):
    model, bridge, ids = pair
    other = torch.randint(0, 23, (5, 11), generator=torch.Generator().manual_seed(8))
    _, reference = interp.run_with_cache(model, other)
    with torch.no_grad():
        _, their_ref = bridge.run_with_cache(other)
    mean = their_ref["blocks.1.attn.hook_z"].mean(dim=0)  # (seq, heads, d_h)

    def their_mean(act, hook):
        act = act.clone()
        act[:, :, 1] = mean[:, 1]
        return act

    def their_zero(act, hook):
        act = act.clone()
        act[:, :, 1] = 0
        return act

    for how, hook in (("zero", their_zero), ("mean", their_mean)):
        ours, _ = interp.run_with_patches(model, ids, {"blocks.1.attn.z": interp.ablated(
            how, head=1, reference=reference["blocks.1.attn.z"])})
        with torch.no_grad():
            theirs = bridge.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", hook)])
        assert torch.allclose(ours, theirs, **TOL), how


def test_logit_lens_and_attribution_agree_with_transformer_lens(pair):
    model, bridge, ids = pair
    _, cache = interp.run_with_cache(model, ids)
    n, d_h = model.cfg.n_layers, model.cfg.d_h
    with torch.no_grad():
        logits, theirs = bridge.run_with_cache(ids)
        stacked = torch.stack([theirs[f"blocks.{i}.hook_resid_pre"] for i in range(n)]
                              + [theirs[f"blocks.{n - 1}.hook_resid_post"]])  # (blocks + 1, batch, seq, d_model)
        their_lens = bridge.unembed(bridge.ln_final(stacked))
    assert torch.allclose(lens.logit_lens(model, cache), their_lens, **TOL)
    assert torch.allclose(lens.logit_lens(model, cache)[-1], logits, **TOL)
    parts = lens.logit_attribution(model, cache, position=6, answer=4, other=9)
    assert torch.allclose(sum(parts.values()), logits[:, 6, 4] - logits[:, 6, 9], **TOL)
    # one head by hand from TransformerLens's numbers: its output (centred by a LayerNorm, not by an RMSNorm) over
    # the stream's frozen scale (a LayerNorm's sqrt(var + eps), an RMSNorm's sqrt(mean square + eps))
    z = theirs["blocks.1.attn.hook_z"][:, 6, 2]  # (batch, d_h): head 2 at position 6
    w_o = bridge.blocks[1].attn.o.weight[:, 2 * d_h:3 * d_h]  # (d_model, d_h): head 2's columns
    x = z @ w_o.T  # (batch, d_model)
    if model.cfg.norm == "layer":
        x = x - x.mean(-1, keepdim=True)
    scale = theirs["ln_final.hook_scale"][:, 6]  # (batch, 1)
    direction = bridge.unembed.weight[4] - bridge.unembed.weight[9]  # (d_model,)
    assert torch.allclose(parts["blocks.1.head.2"], (bridge.ln_final.weight * x / scale) @ direction, **TOL)
    # what the norm and the head add whatever the stream: a LayerNorm's beta and the head's bias (none here)
    constant = bridge.ln_final.bias @ direction if model.cfg.norm == "layer" else 0.0
    assert torch.allclose(parts["final.bias"], constant + bridge.unembed.bias[4] - bridge.unembed.bias[9], **TOL)


def test_induction_and_previous_token_scores_equal_transformer_lens_head_detector():
    from transformer_lens.head_detector import (
        compute_head_attention_similarity_score,
        get_induction_head_detection_pattern,
        get_previous_token_head_detection_pattern,
    )

    model = _ours(DecoderOnly, "none", seed=11, vocab_size=40, max_len=19)
    bridge = _lens(model)
    half = 9
    g = torch.Generator().manual_seed(4)
    first = torch.randperm(39, generator=g)[:half] + 1  # distinct tokens: no accidental repeats in a half
    ids = torch.cat([torch.tensor([0]), first, first])[None]  # (1, 19)
    _, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        _, theirs = bridge.run_with_cache(ids)
    seq = ids.shape[1]
    for layer in range(3):
        ours_ind = ind.induction_scores(cache[f"blocks.{layer}.attn.pattern"], half)
        ours_prev = ind.previous_token_scores(cache[f"blocks.{layer}.attn.pattern"])
        for h in range(3):
            w = theirs[f"blocks.{layer}.attn.hook_pattern"][0, h]
            kw = dict(exclude_bos=False, exclude_current_token=False, error_measure="mul")
            score = compute_head_attention_similarity_score
            their_ind = score(w, get_induction_head_detection_pattern(ids), **kw)
            their_prev = score(w, get_previous_token_head_detection_pattern(ids), **kw)
            # theirs sums the detected weights over every query and divides by seq; ours averages over the queries
            # that have such a key: the repeat's `half` queries, and the seq - 1 queries after the first
            assert abs(float(ours_ind[h]) * half / seq - their_ind) < 1e-10
            assert abs(float(ours_prev[h]) * (seq - 1) / seq - their_prev) < 1e-10


def test_copying_score_is_the_eigenvalue_ratio_of_the_full_ov_circuit():
    model = _ours(DecoderOnly, "none", seed=12)
    bridge = _lens(model)
    scores = ind.copying_scores(model, 1)
    for h in range(3):
        rows = slice(8 * h, 8 * (h + 1))
        attn = bridge.blocks[1].attn
        full = bridge.unembed.weight @ attn.o.weight[:, rows] @ attn.v.weight[rows] @ bridge.embed.weight.T  # (V, V)
        eig = torch.linalg.eigvals(full.detach())
        assert abs(float(scores[h]) - float(eig.real.sum() / eig.abs().sum())) < 1e-8


def test_transformer_lens_weight_processing_keeps_the_predictions_but_not_the_activations():
    """Why the comparisons load our weights as they are: TransformerLens's default processing (fold_ln,
    center_writing_weights, center_unembed, fold_value_biases) keeps the log-probabilities and changes the
    cached activations."""
    model = _ours(DecoderOnly, "mlp", seed=13)
    bridge = _lens(model)
    bridge.process_weights(fold_ln=True, center_writing_weights=True, center_unembed=True, fold_value_biases=True)
    ids = torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(9))
    logits, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        their_logits, theirs = bridge.run_with_cache(ids)
    assert torch.allclose(logits.log_softmax(-1), their_logits.log_softmax(-1), atol=1e-8)
    assert not torch.allclose(cache["blocks.1.resid_pre"], theirs["blocks.1.hook_resid_pre"], atol=1e-3)


def test_a_hugging_face_llama_converted_by_from_hf_can_be_looked_into():
    """Chapter 12's ``from_hf`` on a Llama (random weights from a config, nothing downloaded): its activations, logit
    lens and attribution, against TransformerLens's model of the same weights."""
    tf = pytest.importorskip("transformers")
    from transformer.hf import from_hf

    config = tf.LlamaConfig(vocab_size=23, hidden_size=24, intermediate_size=40, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16, rms_norm_eps=1e-5,
                            pad_token_id=None, bos_token_id=None, eos_token_id=None)
    torch.manual_seed(5)
    model = from_hf(tf.LlamaForCausalLM(config).double().eval())
    ids = torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(7))  # (batch, seq)
    logits, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        their_logits, theirs = _lens(model).run_with_cache(ids)
    assert torch.allclose(logits, their_logits, **TOL)
    for name in cache:
        assert torch.allclose(cache[name], theirs[transformer_lens_name(name)], **TOL), name
    assert torch.allclose(lens.logit_lens(model, cache)[-1], their_logits, **TOL)
    parts = lens.logit_attribution(model, cache, position=6, answer=4, other=9)
    assert torch.allclose(sum(parts.values()), their_logits[:, 6, 4] - their_logits[:, 6, 9], **TOL)


@pytest.mark.parametrize("mode", ["Q", "K", "V"])
def test_composition_scores_equal_transformer_lens_all_composition_scores(pair, mode):
    """Elhage et al.'s composition scores from the weights, against TransformerLens's own, on every pair of heads
    (including grouped-query attention and RoPE's permuted rows in the Llama-style decoder)."""
    model, bridge, _ = pair
    ours = ind.composition_scores(model, mode)
    theirs = bridge.all_composition_scores(mode).scores
    assert ours.shape == theirs.shape == (3, model.cfg.n_heads, 3, model.cfg.n_heads)
    assert torch.allclose(ours, theirs.to(ours), **TOL)
    assert ours[1, :, 0].abs().max() == 0 and ours[0, :, 1].min() > 0  # only earlier into later


def test_random_composition_score_is_the_mean_score_of_random_circuits():
    """The baseline, against TransformerLens's composition score of random factored matrices drawn elsewhere."""
    from transformer_lens import FactoredMatrix
    from transformer_lens.utilities.matrix import composition_scores

    g = torch.Generator().manual_seed(99)
    a, b, c, d = (torch.randn(4000, *shape, generator=g, dtype=torch.float64) for shape in ((32, 16), (16, 32)) * 2)
    theirs = composition_scores(FactoredMatrix(a, b), FactoredMatrix(c, d), broadcast_dims=False).mean().item()
    assert abs(ind.random_composition_score(32, 16, samples=4000) - theirs) < 0.005
    assert ind.random_composition_score(64, 4, samples=4000) < theirs - 0.05  # a smaller share of the stream: lower


def test_attribution_patching_is_the_derivative_of_the_real_patch(pair):
    """The estimate summed over a head is the derivative of the real patch along the clean-minus-corrupted direction
    (central finite differences of run_with_patches, float64); on the final stream, which the logits depend on
    linearly, it is the real patch itself. The parameters' gradients are left alone."""
    model, _, ids = pair
    clean, corrupted = ids[:1], ids[1:]

    def metric(logits):
        return logits[0, -1, 4] - logits[0, -1, 9]

    est = interp.attribution_patching(model, clean, corrupted, metric, ["blocks.1.attn.z", "final"])
    assert all(p.grad is None for p in model.parameters())
    _, cache = interp.run_with_cache(model, ids)
    z_clean, z_corr = cache["blocks.1.attn.z"][:1], cache["blocks.1.attn.z"][1:]
    eps = 1e-5
    for h in range(model.cfg.n_heads):
        def moved(t, h=h):
            z = z_corr.clone()
            z[:, :, h] += t * (z_clean - z_corr)[:, :, h]
            return metric(interp.run_with_patches(model, corrupted, {"blocks.1.attn.z": z})[0]).item()
        derivative = (moved(eps) - moved(-eps)) / (2 * eps)
        assert abs(est["blocks.1.attn.z"][0, :, h].sum().item() - derivative) < 1e-6
    base = metric(model(corrupted)).item()
    for p in range(ids.shape[1]):
        patched, _ = interp.run_with_patches(model, corrupted, {"final": interp.patched_from(cache["final"][:1],
                                                                                            position=p)})
        assert abs(est["final"][0, p].sum().item() - (metric(patched).item() - base)) < 1e-10


def test_attribution_patching_refuses_a_metric_that_is_not_a_number(pair):
    model, _, ids = pair
    with pytest.raises(ValueError, match="metric: expected a function from the logits to a 0-d tensor"):
        interp.attribution_patching(model, ids[:1], ids[1:], lambda logits: logits[0, -1], ["final"])


def test_head_detector_counts_every_earlier_copy_when_a_token_repeats_inside_the_half():
    """Where the chapter's prefix-matching score and TransformerLens's head_detector part: with a token twice in the
    half, theirs also counts the weight on the position after its first occurrence inside the half."""
    from transformer_lens.head_detector import (
        compute_head_attention_similarity_score,
        get_induction_head_detection_pattern,
    )

    half = [5, 7, 5, 9]  # token 5 twice inside the half
    ids = torch.tensor([[0, *half, *half]])  # (1, 9)
    seq = ids.shape[1]
    pattern = torch.tril(torch.ones(seq, seq))
    pattern = pattern / pattern.sum(-1, keepdim=True)  # uniform causal weights: 1 / (t + 1) on each key
    ours = ind.induction_scores(pattern[None, None], len(half)).item()
    theirs = compute_head_attention_similarity_score(pattern, get_induction_head_detection_pattern(ids),
                                                     exclude_bos=False, exclude_current_token=False,
                                                     error_measure="mul")
    # by hand: ours averages one key per query of the repeat (t = 5..8): 1/6 + 1/7 + 1/8 + 1/9; theirs adds, for
    # the second 5 in the half (t = 3) the key after the first 5 (1/4), for the repeat's first 5 (t = 5) the key after
    # the second 5 (1/6), for the repeat's second 5 (t = 7) two more keys (2/8), and divides by seq
    ours_by_hand = (1 / 6 + 1 / 7 + 1 / 8 + 1 / 9) / 4
    assert abs(ours - ours_by_hand) < 1e-6
    assert abs(theirs - (4 * ours_by_hand + 1 / 4 + 1 / 6 + 2 / 8) / seq) < 1e-6
    assert abs(theirs - ours * len(half) / seq) > 0.05
