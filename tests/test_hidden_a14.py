"""Assignment 14's hidden references against independent ones: the by-hand answer three ways, the banded mask as
Hugging Face's Mistral builds it, the ring buffer's slots as the keys that mask lets a query see, the router's weights
as Hugging Face's Qwen3-MoE router gives them, Switch's loss as Hugging Face's Mixtral computes it, and YaRN's
frequencies as Hugging Face's rope-init function gives them; and the claims the exercises' texts make about them."""

from __future__ import annotations

import pytest
import torch

from checks import cache_by_hand
from grader.hidden import a14 as hidden
from hf_float64 import KeepFloat64

from bank import EXPECTED

ASSIGNMENT = "14_open_models"
KEYS = ("mha", "gqa", "mla", "window")


def hugging_face(module: str):
    """A module of Hugging Face's ``transformers`` (the optional ``hf`` dependency): its tests skip without it."""
    return pytest.importorskip(f"transformers{module}")


def test_the_by_hand_answer_is_the_same_three_ways():
    """The hidden judge's numbers, the visible check's (from the models' shapes) and the bank's worked by hand."""
    judged = dict(zip(KEYS, EXPECTED[ASSIGNMENT]["ex1_answer"], strict=True))
    assert hidden._cache_judge(judged) is None
    assert cache_by_hand() == judged
    assert hidden._cache_judge({**judged, "mla": 512}) is not None
    assert judged["window"] * 8 == 32768 * judged["gqa"]  # Mistral 7B: the window cuts a 32k cache 8 times


@pytest.mark.parametrize("seq_len, window", [(7, 3), (6, 1), (5, 5), (4, 9), (12, 4)])
def test_the_hidden_mask_is_hugging_faces_sliding_window(seq_len, window):
    allowed = hugging_face(".masking_utils").sliding_window_causal_mask_function(window)
    q, kv = torch.arange(seq_len)[:, None], torch.arange(seq_len)[None, :]  # every (query, key) pair at once
    theirs = allowed(torch.tensor(0), torch.tensor(0), q, kv).expand(seq_len, seq_len)
    assert torch.equal(hidden._band(seq_len, window), theirs)
    assert int(theirs[-1].sum()) == min(window, seq_len)  # the last query sees `window` keys, itself included


@pytest.mark.parametrize("window", [1, 3, 4, 7])
def test_the_ring_holds_exactly_the_keys_the_window_lets_the_next_query_see(window):
    for t in range(3 * window + 2):
        ring = hidden._ring(t, window)
        visible = set(torch.nonzero(hidden._band(t + 1, window)[t]).flatten().tolist())
        assert set(ring.tolist()) - {-1} == visible, (t, window)
        assert all(p == -1 or p % window == slot for slot, p in enumerate(ring.tolist()))
    assert hidden._ring(5, 4).tolist() == [4, 5, 2, 3]  # the exercise's example


@pytest.mark.parametrize("k, renormalize", [(2, True), (2, False), (1, True), (3, False)])
def test_the_hidden_router_is_hugging_faces_qwen3_moe_router(k, renormalize):
    n, g = 6, torch.Generator().manual_seed(k)
    qwen3 = hugging_face(".models.qwen3_moe.modeling_qwen3_moe")
    cfg = hugging_face("").Qwen3MoeConfig(hidden_size=n, num_experts=n, num_experts_per_tok=k,
                                          norm_topk_prob=renormalize)
    router = qwen3.Qwen3MoeTopKRouter(cfg)
    with torch.no_grad():
        router.weight.copy_(torch.eye(n))  # its scores are the logits themselves
    logits = 2 * torch.randn(9, n, generator=g)
    _, weights, experts = router(logits)
    theirs = torch.zeros(9, n).scatter(1, experts, weights)
    torch.testing.assert_close(hidden._gates(logits, k, renormalize).float(), theirs)


def test_with_renormalisation_a_softmax_after_the_top_k_gives_the_same_weights():
    """The claim of exercise 4's text, and without the renormalisation the two differ."""
    logits = torch.randn(5, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    top = logits.topk(3, dim=-1)
    after = torch.zeros_like(logits).scatter(1, top.indices, top.values.softmax(dim=-1))
    torch.testing.assert_close(hidden._gates(logits, 3, True), after)
    assert not torch.allclose(hidden._gates(logits, 3, False), after)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_hidden_loss_is_hugging_faces_mixtral_loss(k):
    n, g = 6, torch.Generator().manual_seed(k)
    logits = 1.5 * torch.randn(20, n, generator=g, dtype=torch.float64)
    logits[:, 0] += 2.0  # an uneven load
    probs = logits.softmax(dim=-1)
    ours = hidden._switch_loss(probs, probs.topk(k, dim=-1).indices, n)
    theirs = hugging_face(".models.mixtral.modeling_mixtral").load_balancing_loss_func((logits,), n, k)
    torch.testing.assert_close(ours, theirs.double())


@pytest.mark.parametrize("n, k", [(4, 1), (6, 2), (8, 3)])
def test_an_even_load_costs_k(n, k):
    """The claim of exercise 5's text: f_i = k / n and P_i = 1 / n give a loss of k."""
    probs = torch.full((n, n), 1 / n, dtype=torch.float64)
    experts = torch.tensor([[(i + j) % n for j in range(k)] for i in range(n)])
    assert float(hidden._switch_loss(probs, experts, n)) == pytest.approx(k)


YARN_CASES = [(32, 10000.0, 4.0, 256, ()), (64, 500000.0, 8.0, 8192, ()), (128, 1000000.0, 40.0, 4096, (16, 2))]


@pytest.mark.parametrize("d, base, factor, original, betas", YARN_CASES)
def test_the_hidden_yarn_frequencies_are_hugging_faces(d, base, factor, original, betas):
    """``_compute_yarn_parameters`` on a Llama config, run in float64; and the ramp moves the slow pairs only."""
    settings = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original,
                **dict(zip(("beta_fast", "beta_slow"), betas)), "rope_theta": base}
    config = hugging_face("").LlamaConfig(hidden_size=4 * d, num_attention_heads=4, head_dim=d,
                                          max_position_embeddings=int(factor * original), rope_parameters=settings)
    with KeepFloat64():
        theirs, _ = hugging_face(".modeling_rope_utils").ROPE_INIT_FUNCTIONS["yarn"](config, torch.device("cpu"))
    ours = hidden._yarn(d, base, factor, original, *betas)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=0)
    plain = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert ours[0] == plain[0] and torch.isclose(ours[-1], plain[-1] / factor, rtol=1e-12, atol=0)
