"""The tiny Vision Transformer (chapter 10): patches against F.unfold and a hand example, the patch
embedding against nn.Conv2d, and a short training run on generated bar images."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer.train import fit
from transformer.vision import VisionTransformer, bar_images, patchify


def test_patchify_by_hand():
    image = torch.arange(16.0).reshape(1, 1, 4, 4)
    # 0  1 |  2  3
    # 4  5 |  6  7
    # -----+------
    # 8  9 | 10 11
    # 12 13| 14 15
    patches = patchify(image, 2)
    assert patches.shape == (1, 4, 4)
    assert patches[0].tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]


def test_patchify_two_channels_by_hand():
    image = torch.stack([torch.arange(4.0).reshape(2, 2), 10 + torch.arange(4.0).reshape(2, 2)])[None]  # (1, 2, 2, 2)
    assert patchify(image, 2)[0].tolist() == [[0, 1, 2, 3, 10, 11, 12, 13]]  # channel first, then rows
    assert patchify(image, 1)[0].tolist() == [[0, 10], [1, 11], [2, 12], [3, 13]]


@pytest.mark.parametrize("shape, p", [((2, 3, 12, 12), 4), ((1, 1, 8, 8), 2), ((3, 2, 6, 9), 3)])
def test_patchify_equals_unfold(shape, p):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    ref = F.unfold(x, kernel_size=p, stride=p).transpose(1, 2)  # (batch, n_patches, C p p)
    out = patchify(x, p)
    assert out.shape == (shape[0], (shape[2] // p) * (shape[3] // p), shape[1] * p * p)
    torch.testing.assert_close(out, ref, atol=0, rtol=0)


def test_linear_patch_embedding_equals_a_strided_convolution():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 12, 12, generator=g)
    conv = nn.Conv2d(3, 8, kernel_size=4, stride=4)
    linear = nn.Linear(3 * 4 * 4, 8)
    with torch.no_grad():
        linear.weight.copy_(conv.weight.flatten(1))  # (8, 3, 4, 4) -> (8, 48)
        linear.bias.copy_(conv.bias)
    ref = conv(x).flatten(2).transpose(1, 2)  # (2, 8, 3, 3) -> (2, 9, 8)
    torch.testing.assert_close(linear(patchify(x, 4)), ref, atol=1e-5, rtol=0)


def test_patchify_rejects_bad_input():
    with pytest.raises(ValueError, match=r"images: expected H and W divisible by patch_size=5"):
        patchify(torch.zeros(1, 1, 12, 12), 5)
    with pytest.raises(ValueError, match=r"images: expected 4 dimensions \(batch, C, H, W\)"):
        patchify(torch.zeros(12, 12), 4)
    with pytest.raises(TypeError, match="images: expected a floating-point tensor"):
        patchify(torch.zeros(1, 1, 4, 4, dtype=torch.long), 2)


def test_vit_shapes_and_class_token():
    torch.manual_seed(0)
    vit = VisionTransformer(12, 4, 1, 3, d_model=16, n_heads=2, d_ff=32, n_layers=1).eval()
    x = torch.randn(5, 1, 12, 12, generator=torch.Generator().manual_seed(2))
    assert vit.n_patches == 9
    assert vit.embed(x).shape == (5, 10, 16)
    assert vit(x).shape == (5, 3)
    # the first position of the encoder input is the learned [class] vector plus position 0, for every image
    e = vit.embed(x)
    torch.testing.assert_close(e[:, 0], (vit.cls_token[0, 0] + vit.positions.weight[0]).expand(5, -1))
    # the parameter count by hand: patch embedding, class token, 10 positions, 1 block, final norm, head
    d, p2 = 16, 16
    block = (4 * d * d + 4 * d) + (d * 32 + 32 + 32 * d + d) + 2 * 2 * d
    assert sum(p.numel() for p in vit.parameters()) == (p2 * d + d) + d + 10 * d + block + 2 * d + (d * 3 + 3)


def test_vit_rejects_wrong_images():
    vit = VisionTransformer(12, 4, 1, 2)
    with pytest.raises(ValueError, match=r"images: expected \(batch, C, H, W\) = \(batch, 1, 12, 12\)"):
        vit(torch.zeros(2, 3, 12, 12))
    with pytest.raises(ValueError, match="patch_size: expected a divisor of image_size=12, got 5"):
        VisionTransformer(12, 5, 1, 2)


def test_bar_images_by_hand():
    images, labels = bar_images(200, torch.Generator().manual_seed(0), size=10, noise=0.0)
    assert images.shape == (200, 1, 10, 10) and set(labels.tolist()) == {0, 1}
    for img, label in zip(images[:, 0], labels):
        rows, cols = img.nonzero(as_tuple=True)
        assert 4 <= len(rows) <= 6 and (img[rows, cols] == 1).all()
        if label == 0:  # horizontal: one row, consecutive columns
            assert len(set(rows.tolist())) == 1 and cols.tolist() == list(range(int(cols.min()), int(cols.max()) + 1))
        else:
            assert len(set(cols.tolist())) == 1 and rows.tolist() == list(range(int(rows.min()), int(rows.max()) + 1))
    again, _ = bar_images(200, torch.Generator().manual_seed(0), size=10, noise=0.0)
    assert torch.equal(images, again)


@pytest.mark.slow  # about 5 s on an idle core, more when the cores are shared
def test_a_short_training_run_learns_the_bars():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    vit = VisionTransformer(12, 4, 1, 2, d_model=32, n_heads=4, d_ff=64, n_layers=2)

    def batches():
        while True:
            yield bar_images(64, g, noise=0.2)

    fit(vit, batches(), 150, loss_fn=lambda m, b: F.cross_entropy(m(b[0]), b[1]), lr=3e-3, warmup=50)
    x, y = bar_images(500, torch.Generator().manual_seed(99), noise=0.2)
    with torch.no_grad():
        accuracy = (vit(x).argmax(dim=-1) == y).float().mean().item()
    assert accuracy >= 0.9
