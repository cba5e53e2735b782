"""Chapter 13's scores, losses, attribution and explorers on inputs whose answers are worked out by hand,
and the errors its functions raise on bad input (the TransformerLens comparisons are in test_interp.py). The
attribution is worked out through a final LayerNorm, an RMSNorm (chapter 12) and no final norm."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer import TransformerConfig, induction, interp, lens
from transformer.model import DecoderOnly
from transformer.viz.inside import HeadPatternExplorer, LogitLensExplorer


def _model(**kw):
    torch.manual_seed(0)
    cfg = TransformerConfig(**{**dict(vocab_size=12, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=9,
                                      dropout=0.0, norm_first=True, positional="learned", pad_id=None,
                                      scale_embeddings=False), **kw})
    return DecoderOnly(cfg).double().eval()


def test_scores_of_a_pattern_made_by_hand():
    half, t = 3, 7  # <bos> a b c a b c
    prev = torch.zeros(t, t)
    prev[0, 0] = 1
    prev[torch.arange(1, t), torch.arange(t - 1)] = 1  # every query on the token before
    stripe = torch.eye(t)
    stripe[4:, :] = 0
    stripe[torch.arange(4, t), torch.arange(4, t) - half + 1] = 1  # the repeat on the token after its first copy
    both = torch.stack([prev, stripe, torch.full((t, t), 1 / t)])[None]  # (1, 3 heads, 7, 7)
    torch.testing.assert_close(induction.previous_token_scores(both), torch.tensor([1.0, 0.0, 1 / t]))
    # stripe head: 1 on its 3 repeat queries; the previous-token head hits t - half + 1 = t - 2 only when half = 3
    torch.testing.assert_close(induction.induction_scores(both, half), torch.tensor([0.0, 1.0, 1 / t]))


def test_repeated_tokens_repeat_and_half_losses_are_the_two_cross_entropies():
    ids = induction.repeated_tokens(3, 4, 10, torch.Generator().manual_seed(0))
    assert ids.shape == (3, 9) and (ids[:, 0] == 0).all() and torch.equal(ids[:, 1:5], ids[:, 5:])
    assert ids[:, 1:].min() >= 1 and ids.max() < 10
    logits = torch.randn(3, 9, 10, generator=torch.Generator().manual_seed(1))
    losses = induction.half_losses(logits, ids)
    # by hand: position t predicts token t + 1; the first half's targets are positions 2..4, the repeat's 6..8
    first = torch.stack([F.cross_entropy(logits[:, t], ids[:, t + 1]) for t in (1, 2, 3)]).mean()
    repeat = torch.stack([F.cross_entropy(logits[:, t], ids[:, t + 1]) for t in (5, 6, 7)]).mean()
    torch.testing.assert_close(losses, torch.stack([first, repeat]))


def test_an_attention_only_block_adds_only_its_attention():
    model = _model(ffn="none")
    block = model.causal_stack.layers[0]
    assert block.ff is None and block.norm2 is None
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(block(x), x + block.self_attn(block.norm1(x)))


def test_attribution_of_a_model_whose_stream_is_known():
    """One block whose attention writes nothing (W^O = 0, no bias): the stream is the embedding, and the
    attribution of the embedding is the whole difference, worked out from the LayerNorm by hand."""
    model = _model(n_layers=1, ffn="none", linear_bias=False)
    with torch.no_grad():
        model.causal_stack.layers[0].self_attn.w_o.weight.zero_()
    ids = torch.tensor([[1, 4, 7]])
    logits, cache = interp.run_with_cache(model, ids)
    parts = lens.logit_attribution(model, cache, position=2, answer=3, other=5)
    e = model.embed.tokens.weight[7] + model.embed.positions.weight[2]
    norm = model.causal_stack.norm
    z = (e - e.mean()) / torch.sqrt(e.var(unbiased=False) + norm.eps)
    u = model.head.weight[3] - model.head.weight[5]
    torch.testing.assert_close(parts["embed"][0], (norm.gamma * z) @ u)
    torch.testing.assert_close(parts["blocks.0.head.0"], torch.zeros(1, dtype=torch.float64))
    torch.testing.assert_close(sum(parts.values()), logits[:, 2, 3] - logits[:, 2, 5])


@pytest.mark.parametrize("final", ["rms", "none"])
def test_attribution_through_a_final_rms_norm_or_none(final):
    """The same known stream through chapter 12's RMSNorm, ``gamma * x / sqrt(mean(x**2) + eps)``, which does not
    centre, and through no final norm at all: the embedding's part is the whole difference, by hand."""
    fields = dict(norm="rms") if final == "rms" else dict(final_norm=False)
    model = _model(n_layers=1, ffn="none", linear_bias=False, **fields)
    with torch.no_grad():
        model.causal_stack.layers[0].self_attn.w_o.weight.zero_()
        if final == "rms":
            model.causal_stack.norm.gamma.copy_(torch.linspace(0.5, 2.0, 8))
    ids = torch.tensor([[1, 4, 7]])
    logits, cache = interp.run_with_cache(model, ids)
    parts = lens.logit_attribution(model, cache, position=2, answer=3, other=5)
    e = model.embed.tokens.weight[7] + model.embed.positions.weight[2]
    u = model.head.weight[3] - model.head.weight[5]
    if final == "rms":
        norm = model.causal_stack.norm
        assert abs(e.mean()) > 0.05  # a LayerNorm's centring would show
        expected = (norm.gamma * e / torch.sqrt(e.pow(2).mean() + norm.eps)) @ u
    else:
        expected = e @ u
    torch.testing.assert_close(parts["embed"][0], expected)
    torch.testing.assert_close(parts["final.bias"], torch.zeros(1, dtype=torch.float64))  # no beta, no head bias
    torch.testing.assert_close(sum(parts.values()), logits[:, 2, 3] - logits[:, 2, 5])


def test_attribution_of_a_llama_style_model_adds_up_to_its_logit_difference():
    """Chapter 12's choices: RMSNorm, SwiGLU, RoPE on half-split pairs, grouped-query attention, no biases."""
    model = _model(norm="rms", ffn="gated", activation="silu", positional="rope", rope_pairs="half", n_kv_heads=1,
                   linear_bias=False, n_layers=2)
    ids = torch.tensor([[1, 4, 7, 2, 9], [3, 3, 8, 1, 0]])
    logits, cache = interp.run_with_cache(model, ids)
    parts = lens.logit_attribution(model, cache, position=3, answer=3, other=5)
    assert list(parts) == ["embed", "blocks.0.head.0", "blocks.0.head.1", "blocks.0.ffn", "blocks.1.head.0",
                           "blocks.1.head.1", "blocks.1.ffn", "final.bias"]
    torch.testing.assert_close(sum(parts.values()), logits[:, 3, 3] - logits[:, 3, 5])
    torch.testing.assert_close(sum(lens.stream_parts(model, cache).values()), cache["blocks.1.resid_post"])


@pytest.mark.parametrize("fields, call, match", [
    (dict(norm_first=False), lens.logit_attribution, r"model: expected a pre-norm model \(cfg.norm_first=True\), "
                                                     r"whose stream is the sum .*got a post-norm model"),
    (dict(norm_first=False), lens.stream_parts, r"model: expected a pre-norm model"),
    (dict(head_transform=True), lens.logit_attribution,
     r"model: expected a linear output head \(cfg.head_transform=False\), got a head with a HeadTransform"),
], ids=["post-norm, attribution", "post-norm, stream parts", "BERT's head transform"])
def test_attribution_refuses_a_stream_or_a_head_that_is_not_linear(fields, call, match):
    model = _model(**fields)
    _, cache = interp.run_with_cache(model, torch.tensor([[1, 2, 3, 4]]))
    args = (1, 2, 3) if call is lens.logit_attribution else ()
    with pytest.raises(ValueError, match=match):
        call(model, cache, *args)


def test_the_copying_score_of_a_head_that_copies_is_one():
    model = _model(n_layers=1, ffn="none", d_model=4, n_heads=1, vocab_size=4, tie_weights=False)
    attn = model.causal_stack.layers[0].self_attn
    with torch.no_grad():  # W_E = W_U = I and W^O W^V = I: attending to a token adds exactly its own logit
        model.embed.tokens.weight.copy_(torch.eye(4))
        model.head.weight.copy_(torch.eye(4))
        attn.w_v.weight.copy_(torch.eye(4))
        attn.w_o.weight.copy_(torch.eye(4))
    assert math.isclose(induction.copying_scores(model, 0).item(), 1.0, abs_tol=1e-12)
    with torch.no_grad():
        attn.w_o.weight.copy_(-torch.eye(4))  # the opposite: it lowers the token it attends to
    assert math.isclose(induction.copying_scores(model, 0).item(), -1.0, abs_tol=1e-12)


def test_the_model_is_left_as_it_was():
    model = _model()
    ids = torch.tensor([[1, 2, 3, 4]])
    before = model(ids)
    interp.run_with_patches(model, ids, {"blocks.1.resid_pre": interp.ablated("zero")})
    interp.run_with_cache(model, ids)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    torch.testing.assert_close(model(ids), before)


@pytest.mark.parametrize("call, match", [
    (lambda m, ids: interp.run_with_cache(m, ids, names=["blocks.9.resid_pre"]),
     r"names: expected names of this model's activations .*got 'blocks.9.resid_pre'"),
    (lambda m, ids: interp.run_with_cache(m, ids, names="embed"), r"names: expected a list of activation names"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"blocks.0.attn.pattern": torch.zeros(1)}),
     r"patches: expected an activation that can be replaced, got 'blocks.0.attn.pattern'"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"embed": torch.zeros(1, 3, 5)}),
     r"patches\['embed'\]: expected a tensor of shape \(1, 4, 8\), got \(1, 3, 5\)"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"embed": 3}), r"patches\['embed'\]: expected a tensor or"),
    (lambda m, ids: interp.run_with_patches(m, ids, {}), r"patches: expected a non-empty dict"),
    (lambda m, ids: interp.run_with_cache(torch.nn.Linear(2, 2), ids), r"model: expected a DecoderOnly or EncoderOnly"),
    (lambda m, ids: interp.ablated("half"), r"how: expected one of \['mean', 'zero'\], got 'half'"),
    (lambda m, ids: interp.ablated("mean"), r"reference: expected a torch.Tensor, got NoneType"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"embed": interp.ablated("zero", head=0)}),
     r"head: expected a patch of an attn.z activation \(batch, seq, heads, d_h\), got one of shape \(1, 4, 8\)"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"embed": interp.patched_from(torch.zeros(1, 5, 8))}),
     r"source: expected the activation's shape after the batch, \(1, 4, 8\), got \(1, 5, 8\)"),
    (lambda m, ids: interp.run_with_patches(m, ids, {"embed": interp.ablated("mean", reference=torch.zeros(3, 2, 8))}),
     r"reference: expected the activation's shape after the batch, \(1, 4, 8\), got \(1, 2, 8\)"),
    (lambda m, ids: interp.head_outputs(m, interp.run_with_cache(m, ids)[1], 2), r"layer: expected"),
    (lambda m, ids: lens.logit_attribution(m, interp.run_with_cache(m, ids)[1], 4, 1, 2), r"position: expected"),
    (lambda m, ids: lens.logit_attribution(m, interp.run_with_cache(m, ids)[1], 1, 12, 2), r"answer: expected"),
    (lambda m, ids: induction.induction_scores(torch.zeros(1, 2, 7, 7), 4), r"half: expected the half length"),
    (lambda m, ids: induction.repeated_tokens(2, 3, 1, torch.Generator()), r"vocab_size: expected an int >= 2"),
])
def test_bad_input_names_the_argument_the_expected_and_the_given(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(_model(), torch.tensor([[1, 2, 3, 4]]))


def test_the_head_pattern_explorer_shows_the_chosen_head_and_its_scores():
    patterns = torch.rand(2, 3, 4, 4).tril()
    patterns = patterns / patterns.sum(-1, keepdim=True)
    scores = {"previous token": torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])}
    ex = HeadPatternExplorer(["<bos>", "a", "b", "a"], patterns, scores)
    ex.layer.value, ex.head.value = 1, 2
    torch.testing.assert_close(ex.weights, patterns[1, 2].double())
    assert "layer 1, head 2: previous token 0.60" in ex.view.value
    assert "<svg" in ex.view.value and "aria-label='Attention of layer 1, head 2" in ex.view.value
    with pytest.raises(ValueError, match=r"patterns: expected \(layers, heads, T=3, T\)"):
        HeadPatternExplorer(["a", "b", "c"], patterns, scores)


def test_the_logit_lens_explorer_lists_the_likeliest_tokens():
    lens_logits = torch.log(torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]],
                                          [[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]]))  # (2 depths, 2 positions, 3 words)
    ex = LogitLensExplorer(["x", "y"], lens_logits, ["p", "q", "r"], ["embeddings", "block 0"], k=2)
    assert [(w, round(p, 2)) for w, p in ex.top] == [("p", 0.7), ("q", 0.2)]
    ex.position.value, ex.depth.value = 1, 1
    assert [(w, round(p, 2)) for w, p in ex.top] == [("p", 0.6), ("q", 0.3)]
    assert "after block 0, position 1 (<b>y</b>) predicts next: <b>p</b> (0.60)" in ex.view.value
