"""The package's cache, patching, head split and scores (transformer.interp, transformer.induction, transformer.lens)
against TransformerLens, built from a config and our state dict (no download), in float64.

TransformerLens 4 builds its own model, ``TransformerBridge.boot_native``, from a ``TransformerBridgeConfig``;
we load our weights into it with ``load_state_dict``, which applies none of the weight processing of
TransformerLens's loaders (``fold_ln``, ``center_writing_weights``, ``center_unembed``, ``fold_value_biases``):
those rewrite the weights so that the logits stay the same but cached activations do not (folding the norms'
``gamma`` and ``beta`` into the next matrices changes what the norms output; centring the writing weights
changes the residual stream by its mean). Without them the two models hold the same numbers, and every cached
activation agrees to 1e-10. The models and inputs here are not the chapter's: random weights, other sizes.
"""

from __future__ import annotations

import pytest
import torch

from transformer import TransformerConfig, interp, lens
from transformer import induction as ind
from transformer.model import DecoderOnly, EncoderOnly

tl = pytest.importorskip("transformer_lens")
pytest.importorskip("transformer_lens.model_bridge.sources.native")

TOL = dict(atol=1e-10, rtol=1e-10)


def _ours(kind=DecoderOnly, ffn="mlp", seed=3, **sizes):
    cfg = TransformerConfig(**{**dict(vocab_size=23, d_model=24, n_heads=3, d_ff=40, n_layers=3, max_len=16), **sizes},
                            ffn=ffn, dropout=0.0, norm_first=True, positional="learned", scale_embeddings=False,
                            tie_weights=False, pad_id=None, activation="relu")
    torch.manual_seed(seed)
    model = kind(cfg).double().eval()
    with torch.no_grad():  # non-trivial norms and biases, so that a misplaced one shows
        for name, p in model.named_parameters():
            if name.endswith(("gamma", "beta", "bias")):
                p.add_(0.3 * torch.randn_like(p))
    return model


def _lens(model):
    """The TransformerLens model with ``model``'s weights, every name mapped by hand."""
    from transformer_lens import TransformerBridge, TransformerBridgeConfig

    cfg, stack = model.cfg, interp.stack_of(model)
    lcfg = TransformerBridgeConfig(
        n_layers=cfg.n_layers, d_model=cfg.d_model, n_ctx=cfg.max_len, d_head=cfg.d_h, n_heads=cfg.n_heads,
        d_vocab=cfg.vocab_size, d_mlp=cfg.d_ff, act_fn="relu", attn_only=cfg.ffn == "none", eps=cfg.norm_eps,
        normalization_type="LN", positional_embedding_type="standard", architecture=None, dtype=torch.float64,
        attention_dir="causal" if isinstance(model, DecoderOnly) else "bidirectional")
    bridge = TransformerBridge.boot_native(lcfg, dtype=torch.float64)
    state = {"embed.weight": model.embed.tokens.weight, "pos_embed.weight": model.embed.positions.weight,
             "ln_final.weight": stack.norm.gamma, "ln_final.bias": stack.norm.beta,
             "unembed.weight": model.head.weight, "unembed.bias": torch.zeros(cfg.vocab_size, dtype=torch.float64)}
    for i, block in enumerate(stack.layers):
        state[f"blocks.{i}.ln1.weight"], state[f"blocks.{i}.ln1.bias"] = block.norm1.gamma, block.norm1.beta
        for ours, theirs in (("w_q", "q"), ("w_k", "k"), ("w_v", "v"), ("w_o", "o")):
            layer = getattr(block.self_attn, ours)
            state[f"blocks.{i}.attn.{theirs}.weight"] = layer.weight
            state[f"blocks.{i}.attn.{theirs}.bias"] = layer.bias
        if block.ff is not None:
            state[f"blocks.{i}.ln2.weight"], state[f"blocks.{i}.ln2.bias"] = block.norm2.gamma, block.norm2.beta
            for ours, theirs in (("linear1", "in"), ("linear2", "out")):
                layer = getattr(block.ff, ours)
                state[f"blocks.{i}.mlp.{theirs}.weight"] = layer.weight
                state[f"blocks.{i}.mlp.{theirs}.bias"] = layer.bias
    result = bridge.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    return bridge.eval()


def _their_names(name: str) -> str:
    """Our activation name -> TransformerLens's hook name."""
    if name == "final":
        return "ln_final.hook_out"
    _, i, *rest = name.split(".")
    theirs = {"resid_pre": "hook_resid_pre", "resid_post": "hook_resid_post", "attn.pattern": "attn.hook_pattern",
              "attn.z": "attn.hook_z", "attn.out": "hook_attn_out", "ffn.out": "hook_mlp_out"}[".".join(rest)]
    return f"blocks.{i}.{theirs}"


@pytest.fixture(scope="module", params=[(DecoderOnly, "mlp"), (DecoderOnly, "none"), (EncoderOnly, "mlp")],
                ids=["decoder", "attention-only decoder", "encoder"])
def pair(request):
    kind, ffn = request.param
    model = _ours(kind, ffn, seed=3 + request.param_index)
    ids = torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(7))  # (batch, seq)
    return model, _lens(model), ids


def test_every_cached_activation_equals_transformer_lens(pair):
    model, bridge, ids = pair
    logits, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        their_logits, theirs = bridge.run_with_cache(ids)
    assert torch.allclose(logits, their_logits, **TOL)
    assert torch.allclose(cache["embed"], theirs["hook_embed"] + theirs["hook_pos_embed"], **TOL)
    compared = [name for name in cache if name != "embed"]
    for name in compared:
        assert torch.allclose(cache[name], theirs[_their_names(name)], **TOL), name
    per_block = 6 if model.cfg.ffn != "none" else 5  # resid_pre, pattern, z, attn.out, (ffn.out,) resid_post
    assert len(compared) == 1 + per_block * model.cfg.n_layers  # and final


def test_head_outputs_add_up_to_the_attention_output_and_equal_theirs(pair):
    model, bridge, ids = pair
    _, cache = interp.run_with_cache(model, ids)
    with torch.no_grad():
        _, theirs = bridge.run_with_cache(ids)
    for i in range(model.cfg.n_layers):
        heads = interp.head_outputs(model, cache, i)  # (batch, seq, heads, d_model)
        z, w_o = theirs[f"blocks.{i}.attn.hook_z"], bridge.blocks[i].attn.o.weight  # (b, s, h, d_h), (d_model, h d_h)
        by_hand = torch.stack([z[:, :, h] @ w_o[:, h * 8:(h + 1) * 8].T for h in range(3)], dim=2)
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
        hook_name = _their_names(name)
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
    with torch.no_grad():
        logits, theirs = bridge.run_with_cache(ids)
        stacked = torch.stack([theirs[f"blocks.{i}.hook_resid_pre"] for i in range(3)]
                              + [theirs["blocks.2.hook_resid_post"]])  # (blocks + 1, batch, seq, d_model)
        their_lens = bridge.unembed(bridge.ln_final(stacked))
    assert torch.allclose(lens.logit_lens(model, cache), their_lens, **TOL)
    assert torch.allclose(lens.logit_lens(model, cache)[-1], logits, **TOL)
    parts = lens.logit_attribution(model, cache, position=6, answer=4, other=9)
    assert torch.allclose(sum(parts.values()), logits[:, 6, 4] - logits[:, 6, 9], **TOL)
    # one head by hand from TransformerLens's numbers: its output, centred, over the stream's frozen scale
    z = theirs["blocks.1.attn.hook_z"][:, 6, 2]  # (batch, d_h): head 2 at position 6
    w_o = bridge.blocks[1].attn.o.weight[:, 16:24]  # (d_model, d_h): head 2's columns
    x = z @ w_o.T  # (batch, d_model)
    scale = theirs["ln_final.hook_scale"][:, 6]  # (batch, 1)
    by_hand = (bridge.ln_final.weight * (x - x.mean(-1, keepdim=True)) / scale) @ (bridge.unembed.weight[4] -
                                                                                     bridge.unembed.weight[9])
    assert torch.allclose(parts["blocks.1.head.2"], by_hand, **TOL)


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
