"""Mixture of experts (chapter 14): the router by hand, and equal to Hugging Face's MoE blocks (Mixtral,
Qwen3-MoE, DeepSeek-V3 with its sigmoid scores, correction bias, group-limited routing, shared experts and
routed_scaling_factor), run in float64 (:class:`hf_float64.KeepFloat64`); the load-balancing loss equal to
Mixtral's ``load_balancing_loss_func``; DeepSeek-V3's bias update by hand. Each comparison has a wrong variant
that misses by more than its tolerance."""

from __future__ import annotations

import pytest
import torch

from hf_float64 import KeepFloat64, randomize
from transformer.moe import MixtureOfExperts, MoEConfig, Router, load_balancing_loss, update_correction_bias

tf = pytest.importorskip("transformers")
tf.logging.set_verbosity_error()
mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral")
qwen3 = pytest.importorskip("transformers.models.qwen3_moe.modeling_qwen3_moe")
deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
D = 12


def test_the_router_by_hand():
    """Logits (2, 1, 0, -1) for one token, k = 2: softmax p = e^s / sum; experts 0 and 1 kept with weights
    p_0, p_1 (Qwen3 without norm_topk_prob), or p_0 / (p_0 + p_1), p_1 / (p_0 + p_1) (Mixtral)."""
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    p = torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=torch.float64).exp()
    p = p / p.sum()
    for renormalize, expected in ((False, p[:2]), (True, p[:2] / p[:2].sum())):
        router = Router(2, MoEConfig(4, 2, renormalize=renormalize)).double()
        with torch.no_grad():
            router.weight.copy_(torch.tensor([[2.0, 0], [1, 0], [0, 0], [-1, 0]]))
        weights, experts, probs = router(x)
        assert experts.tolist() == [[0, 1]] and torch.allclose(weights[0], expected)
    assert torch.allclose(probs[0], p)


def test_deepseek_routing_by_hand():
    """Sigmoid scores; the bias picks expert 3 over expert 1, the weights stay the plain scores; with 2 groups
    of 2 and topk_group 1 the tokens stay in the better group."""
    router = Router(1, MoEConfig(4, 2, scoring="sigmoid", renormalize=False, scaling=2.0)).double()
    x = torch.ones(1, 1, dtype=torch.float64)
    with torch.no_grad():
        router.weight.copy_(torch.tensor([[3.0], [1.0], [-2.0], [0.0]]))
        router.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 0.5]))  # sigmoid(0) + 0.5 = 1.0 > sigmoid(1) = 0.73
    weights, experts, _ = router(x)
    assert sorted(experts[0].tolist()) == [0, 3]
    s = torch.sigmoid(torch.tensor([3.0, 0.0], dtype=torch.float64))
    assert torch.allclose(weights[0].sort().values, (2.0 * s).sort().values)
    router.moe.n_groups, router.moe.topk_groups = 2, 1  # groups {0, 1}: 0.95 + 0.73, {2, 3}: 0.12 + 1.0
    assert sorted(router(x)[1][0].tolist()) == [0, 1]


def moe_config(kind: str, seed: int):
    common = dict(hidden_size=D, hidden_act="silu", num_experts_per_tok=2)
    if kind == "mixtral":
        return tf.MixtralConfig(**common, intermediate_size=8, num_local_experts=4)
    if kind == "qwen3_moe":
        return tf.Qwen3MoeConfig(**common, moe_intermediate_size=8, num_experts=6, norm_topk_prob=seed % 2 == 0)
    return tf.DeepseekV3Config(hidden_size=D, hidden_act="silu", moe_intermediate_size=8, n_routed_experts=8,
                               n_shared_experts=2,
                               n_group=4, topk_group=2, norm_topk_prob=seed % 2 == 0, routed_scaling_factor=2.5,
                               num_experts_per_tok=3)


def theirs_and_ours(kind: str, seed: int):
    config = moe_config(kind, seed)
    config._experts_implementation = "eager"
    block = {"mixtral": mixtral.MixtralSparseMoeBlock, "qwen3_moe": qwen3.Qwen3MoeSparseMoeBlock,
             "deepseek_v3": deepseek.DeepseekV3MoE}[kind](config)
    block = randomize(block, seed)
    gate = block.gate
    if kind == "deepseek_v3":
        gate.e_score_correction_bias.copy_(torch.randn(8, generator=torch.Generator().manual_seed(seed)) * 0.3)
        moe = MoEConfig(8, 3, n_shared=2, scoring="sigmoid", renormalize=config.norm_topk_prob, n_groups=4,
                        topk_groups=2, scaling=2.5)
    else:
        moe = MoEConfig(gate.num_experts, 2, renormalize=kind == "mixtral" or config.norm_topk_prob)
    ours = MixtureOfExperts(D, 8, moe).double()
    with torch.no_grad():
        ours.router.weight.copy_(gate.weight)
        if kind == "deepseek_v3":
            ours.router.bias.copy_(gate.e_score_correction_bias)
            shared = block.shared_experts
            for mine, their in ((ours.shared.linear1, shared.gate_proj), (ours.shared.linear3, shared.up_proj),
                                (ours.shared.linear2, shared.down_proj)):
                mine.weight.copy_(their.weight)
        for e, expert in enumerate(ours.experts):
            gate_w, up = block.experts.gate_up_proj[e].chunk(2)  # (2 d_expert, D) -> 2 x (d_expert, D)
            expert.linear1.weight.copy_(gate_w)
            expert.linear3.weight.copy_(up)
            expert.linear2.weight.copy_(block.experts.down_proj[e])
    return block, ours


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", ["mixtral", "qwen3_moe", "deepseek_v3"])
def test_the_block_equals_hugging_face(kind, seed):
    block, ours = theirs_and_ours(kind, seed)
    x = torch.randn(2, 7, D, generator=torch.Generator().manual_seed(10 + seed), dtype=torch.float64)
    with torch.no_grad(), KeepFloat64():
        expected = block(x)
    with torch.no_grad():
        got = ours(x)
        assert (got - expected).abs().max() <= 1e-12 * expected.abs().max()
        if kind == "deepseek_v3":  # the bias must only choose: weighing by score + bias misses
            ours.router.moe.scoring = "softmax"
        else:  # softmax after the top-k (over the kept logits) instead of before
            ours.router.moe.renormalize = not ours.router.moe.renormalize
        assert (ours(x) - expected).abs().max() > 1e-3 * expected.abs().max()


def test_deepseek_groups_matter():
    block, ours = theirs_and_ours("deepseek_v3", 0)
    x = torch.randn(4, 9, D, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    with torch.no_grad(), KeepFloat64():
        expected = block(x)
    ours.router.moe.n_groups = 1  # no group limit: other experts for some tokens
    with torch.no_grad():
        assert (ours(x) - expected).abs().max() > 1e-3 * expected.abs().max()


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_load_balancing_loss_equals_mixtral(top_k):
    logits = torch.randn(30, 6, generator=torch.Generator().manual_seed(top_k), dtype=torch.float64)
    probs = logits.softmax(-1)
    experts = probs.topk(top_k, dim=-1).indices
    with KeepFloat64():
        theirs = mixtral.load_balancing_loss_func((logits,), 6, top_k)
    ours = load_balancing_loss(probs, experts, 6)
    assert abs(float(ours) - float(theirs)) <= 1e-12
    even = load_balancing_loss(torch.full((6, 6), 1 / 6, dtype=torch.float64), torch.arange(6)[:, None], 6)
    assert float(even) == pytest.approx(1.0)  # an even load: 6 * sum(1/6 * 1/6) = 1


def test_correction_bias_update_by_hand():
    """Loads (3, 1, 0, 2), mean 1.5: the bias of experts 1 and 2 goes up by the rate, of 0 and 3 down."""
    experts = torch.tensor([[0, 3], [0, 1], [0, 3]])
    new = update_correction_bias(torch.zeros(4), experts, rate=0.1)
    assert torch.allclose(new, torch.tensor([-0.1, 0.1, 0.1, -0.1]))


def test_bias_updates_balance_a_skewed_router():
    """A router that favours two of eight experts (a third of the choices each): after 200 updates of the correction
    bias every expert gets between 1/10 and 3/20 of them (1/8 is even), the router's weights unchanged."""
    torch.manual_seed(0)
    router = Router(D, MoEConfig(8, 2, scoring="sigmoid")).double()
    with torch.no_grad():
        router.weight[:2, 0] += 2.0  # experts 0 and 1 score higher for tokens whose feature 0 is positive ...
    x = torch.randn(400, D, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    x[:, 0] += 1.0  # ... which most are

    def loads() -> torch.Tensor:
        experts = router(x)[1]
        return torch.bincount(experts.reshape(-1), minlength=8) / experts.numel()  # (8,), sums to 1

    assert loads()[:2].min() > 0.3
    for _ in range(200):
        router.bias = update_correction_bias(router.bias, router(x)[1], rate=0.01)
    assert 0.1 < loads().min() and loads().max() < 0.15


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="top_k: expected an int in"):
        MoEConfig(4, 5)
    with pytest.raises(ValueError, match="n_groups: expected a divisor of n_experts=6"):
        MoEConfig(6, 2, n_groups=4)
    with pytest.raises(ValueError, match="scoring"):
        MoEConfig(4, 2, scoring="relu")
