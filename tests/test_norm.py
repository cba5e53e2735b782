"""LayerNorm and RMSNorm (chapter 6) against nn.LayerNorm and nn.RMSNorm."""

import pytest
import torch
from torch import nn

from transformer import LayerNorm, RMSNorm
from transformer.interop import copy_layer_norm


def randn(*shape, seed=0, scale=1.0, shift=0.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale + shift


@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 5, 7), (2, 3, 4, 7)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm_matches_torch(shape, eps):
    theirs = nn.LayerNorm(7, eps=eps)
    with torch.no_grad():
        theirs.weight.copy_(randn(7, seed=1))
        theirs.bias.copy_(randn(7, seed=2))
    ours = LayerNorm(7, eps=eps)
    copy_layer_norm(ours, theirs)
    x = randn(*shape, seed=3, scale=4.0, shift=2.0)  # far from mean 0 / std 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=0)


def test_layer_norm_gradients_match_torch():
    theirs = nn.LayerNorm(6)
    with torch.no_grad():
        theirs.weight.copy_(randn(6, seed=1))
        theirs.bias.copy_(randn(6, seed=2))
    ours = LayerNorm(6)
    copy_layer_norm(ours, theirs)
    x1 = randn(4, 6, seed=3).requires_grad_()
    x2 = x1.detach().clone().requires_grad_()
    w = randn(4, 6, seed=4)
    (ours(x1) * w).sum().backward()
    (theirs(x2) * w).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.gamma.grad, theirs.weight.grad, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.beta.grad, theirs.bias.grad, atol=1e-5, rtol=0)


@pytest.mark.parametrize("shape", [(9,), (2, 5, 9)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, 1e-1])
def test_rms_norm_matches_torch(shape, eps):
    theirs = nn.RMSNorm(9, eps=eps)
    with torch.no_grad():
        theirs.weight.copy_(randn(9, seed=1))
    ours = RMSNorm(9, eps=eps)
    with torch.no_grad():
        ours.gamma.copy_(theirs.weight)
    x = randn(*shape, seed=5, scale=0.3, shift=1.0)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=0)


def test_layer_norm_is_a_z_score_per_token():
    ln = LayerNorm(16)  # gamma = 1, beta = 0 at initialisation
    assert torch.equal(ln.gamma.detach(), torch.ones(16)) and torch.equal(ln.beta.detach(), torch.zeros(16))
    x = randn(3, 5, 16, seed=6, scale=10.0, shift=-7.0)
    y = ln(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, 5), atol=1e-5, rtol=0)
    # the biased std (divide by d_model), as the normalisation uses; eps makes it a hair below 1
    torch.testing.assert_close(y.std(-1, unbiased=False), torch.ones(3, 5), atol=1e-4, rtol=0)
    # and a hand example: [1, 2, 3, 4] has mean 2.5 and biased variance 1.25
    z = LayerNorm(4, eps=0.0)(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    torch.testing.assert_close(z, torch.tensor([-1.5, -0.5, 0.5, 1.5]) / 1.25**0.5, atol=1e-6, rtol=0)


def test_rms_norm_by_hand():
    # [3, 4] has mean square (9 + 16) / 2 = 12.5: divide by sqrt(12.5)
    y = RMSNorm(2, eps=0.0)(torch.tensor([3.0, 4.0]))
    torch.testing.assert_close(y, torch.tensor([3.0, 4.0]) / 12.5**0.5, atol=1e-6, rtol=0)


def test_norms_act_token_by_token():
    # Changing one token must not change the normalised value of another.
    for norm in (LayerNorm(8), RMSNorm(8)):
        x = randn(1, 4, 8, seed=7)
        x2 = x.clone()
        x2[0, 2] = randn(8, seed=8) * 100
        y, y2 = norm(x), norm(x2)
        torch.testing.assert_close(y[0, [0, 1, 3]], y2[0, [0, 1, 3]], atol=0, rtol=0)


def test_fast_layer_norm_equals_the_teaching_form_and_torch():
    from transformer import LayerNorm

    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 7, 16, generator=g) * 2 + 1
    slow, fast = LayerNorm(16), LayerNorm(16, fast=True)
    with torch.no_grad():
        for m in (slow, fast):
            m.gamma.copy_(torch.randn(16, generator=torch.Generator().manual_seed(1)))
            m.beta.copy_(torch.randn(16, generator=torch.Generator().manual_seed(2)))
    ref = torch.nn.functional.layer_norm(x, (16,), slow.gamma, slow.beta, 1e-5)
    torch.testing.assert_close(fast(x), ref)
    torch.testing.assert_close(slow(x), fast(x), atol=1e-5, rtol=1e-5)
