"""A tiny Vision Transformer (chapter 11).

An image becomes a sequence: cut it into ``p x p`` patches, flatten each patch
into a vector of ``C * p * p`` numbers, and project it to ``d_model`` with one
linear layer. Prepend a learned ``[class]`` vector, add learned positional
encodings, run the encoder blocks of chapter 6, and classify from the output
at the ``[class]`` position (Dosovitskiy et al., 2021).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_divisor, require_float, require_positive_int, require_rank, shape_str
from .blocks import Encoder
from .config import TransformerConfig
from .positional import LearnedPositionalEncoding


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``images (batch, C, H, W)`` -> ``patches (batch, n_patches, C * p * p)``, ``n_patches = (H / p) (W / p)``.

    Patches are numbered row by row from the top left; each is flattened
    channel first, then row, then column (the order of ``F.unfold`` and of a
    ``Conv2d`` with ``kernel_size = stride = p``).
    """
    _require_patchable(images, patch_size)
    return _patchify(images, patch_size)


def _patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """:func:`patchify` on arguments already checked."""
    b, c, h, w = images.shape
    p = patch_size
    x = images.reshape(b, c, h // p, p, w // p, p)  # (batch, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (batch, rows, cols, C, p, p)
    return x.reshape(b, (h // p) * (w // p), c * p * p)  # (batch, n_patches, C * p * p)


class VisionTransformer(nn.Module):
    """``forward(images (batch, C, H, W)) -> logits (batch, n_classes)`` (chapter 11).

    Pre-norm encoder blocks with GELU, as in ViT; the ``[class]`` token's final
    vector goes through a LayerNorm (the encoder's final norm) and a linear head.
    """

    def __init__(self, image_size: int, patch_size: int, channels: int, n_classes: int, d_model: int = 32,
                 n_heads: int = 4, d_ff: int = 64, n_layers: int = 2, dropout: float = 0.0):
        super().__init__()
        for name, value in (("image_size", image_size), ("channels", channels), ("n_classes", n_classes)):
            require_positive_int(name, value)
        require_divisor("patch_size", patch_size, "image_size", image_size)
        self.image_size, self.patch_size, self.channels = image_size, patch_size, channels
        self.n_patches = (image_size // patch_size) ** 2
        cfg = TransformerConfig(vocab_size=1, d_model=d_model, n_heads=n_heads, d_ff=d_ff, n_layers=n_layers,
                                dropout=dropout, max_len=self.n_patches + 1, norm_first=True, activation="gelu",
                                positional="learned")
        self.patch_embed = nn.Linear(channels * patch_size ** 2, d_model)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)
        self.positions = LearnedPositionalEncoding(d_model, self.n_patches + 1)
        self.drop = nn.Dropout(dropout)
        self.encoder = Encoder(cfg)
        self.head = nn.Linear(d_model, n_classes)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """``(batch, C, H, W)`` -> the encoder's input ``(batch, 1 + n_patches, d_model)``."""
        _require_images(images, (self.channels, self.image_size, self.image_size))
        x = self.patch_embed(_patchify(images, self.patch_size))  # (batch, n_patches, d_model)
        cls = self.cls_token.expand(x.shape[0], -1, -1)  # (batch, 1, d_model)
        return self.drop(self.positions(torch.cat([cls, x], dim=1)))  # (batch, 1 + n_patches, d_model)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h = self.encoder(self.embed(images))  # (batch, 1 + n_patches, d_model)
        return self.head(h[:, 0])  # the [class] position -> (batch, n_classes)


def bar_images(n: int, generator: torch.Generator, size: int = 12,
               noise: float = 0.3) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` noisy ``size x size`` images, each with one bright bar: ``(images (n, 1, size, size), labels (n,))``.

    Label 0: the bar is horizontal; label 1: vertical. Bars are 4 to 6 pixels
    long and lie anywhere in the image, so they often cross patch borders.
    """
    require_positive_int("n", n)
    labels = torch.randint(2, (n,), generator=generator)
    images = noise * torch.randn(n, 1, size, size, generator=generator)
    length = torch.randint(4, 7, (n, 1, 1), generator=generator)
    start = (torch.rand(n, 1, 1, generator=generator) * (size - length + 1)).long()  # first pixel along the bar
    line = torch.randint(size, (n, 1, 1), generator=generator)  # the bar's row (or column)
    rows = torch.arange(size)[None, :, None]  # (1, size, 1)
    cols = torch.arange(size)[None, None, :]  # (1, 1, size)
    horizontal = (rows == line) & (cols >= start) & (cols < start + length)  # (n, size, size)
    vertical = (cols == line) & (rows >= start) & (rows < start + length)
    bar = torch.where(labels[:, None, None] == 0, horizontal, vertical)  # (n, size, size)
    return images + bar[:, None].float(), labels


# ----------------------------------------------------------------------------- argument checks


def _require_patchable(images, patch_size) -> None:
    """Float ``images (batch, C, H, W)`` whose H and W are multiples of ``patch_size``."""
    require_float("images", images)
    require_rank("images", images, (4,), "(batch, C, H, W)")
    require_positive_int("patch_size", patch_size)
    if images.shape[2] % patch_size or images.shape[3] % patch_size:
        raise ValueError(f"images: expected H and W divisible by patch_size={patch_size}, "
                         f"got shape {shape_str(images)}")


def _require_images(images, want: tuple[int, int, int]) -> None:
    """Float ``images (batch, C, H, W)`` with ``(C, H, W) = want``."""
    require_float("images", images)
    require_rank("images", images, (4,), "(batch, C, H, W)")
    if tuple(images.shape[1:]) != want:
        raise ValueError(f"images: expected (batch, C, H, W) = (batch, {', '.join(map(str, want))}), "
                         f"got {shape_str(images)}")
