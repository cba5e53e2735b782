"""The induction experiment's training record and its no-copying bound (transformer.induction), against the model's
own cache after training and a simulation."""

from __future__ import annotations

import math

import torch

from transformer import induction as ind
from transformer import interp


def test_the_probe_scores_are_the_induction_scores_and_leave_the_training_alone():
    probe = ind.repeated_tokens(8, 5, 12, torch.Generator().manual_seed(5))  # (8, 11)
    plain, probed = (ind.induction_model(12, 5, d_model=16, n_heads=2, seed=1) for _ in range(2))
    without = ind.train_induction(plain, steps=30, batch=8, lr=3e-3, seed=2, every=10)
    with_probe = ind.train_induction(probed, steps=30, batch=8, lr=3e-3, seed=2, every=10, probe=probe)
    assert torch.equal(without["losses"], with_probe["losses"]) and "scores" not in without
    assert with_probe["scores"].shape == (4, 2, 2) and not probed.training  # steps 1, 10, 20, 30
    _, cache = interp.run_with_cache(probed, probe)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.pattern"]  # (8, heads, 11, 11)
        stripe = torch.stack([pattern[:, :, 6 + i, 2 + i] for i in range(5)], dim=-1)  # the key after the first copy
        assert torch.allclose(with_probe["scores"][-1, layer], stripe.mean(dim=(0, 2)), atol=1e-12)


def test_the_seen_tokens_loss_equals_a_simulation():
    """ln(number of distinct tokens) among `half` uniform draws from vocab_size - 1 tokens, averaged over halves."""
    g = torch.Generator().manual_seed(0)
    simulated = []
    for half in range(4, 11):
        draws = torch.randint(1, 32, (20000, half), generator=g)  # (samples, half)
        distinct = torch.tensor([len(set(row)) for row in draws.tolist()], dtype=torch.float64)
        simulated.append(distinct.log().mean())
    assert abs(ind.seen_tokens_loss(32, 4, 10) - torch.stack(simulated).mean().item()) < 0.005
    assert abs(ind.seen_tokens_loss(3, 1, 1) - 0.0) < 1e-12  # one token drawn: one distinct, ln 1 = 0
    assert abs(ind.seen_tokens_loss(3, 2, 2) - 0.5 * math.log(2)) < 1e-12  # 2 of 2 tokens: 2 distinct half the time
