"""Argument checks shared by the package.

Every error names the argument, what was expected and what was given, so a
reader who passes the wrong thing learns what to change.
"""

from __future__ import annotations

import torch


def shape_str(x: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in x.shape) + ")"


def require_tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return x


def require_float(name: str, x) -> torch.Tensor:
    require_tensor(name, x)
    if not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {x.dtype}")
    return x


def require_rank(name: str, x, ranks: tuple[int, ...], layout: str) -> torch.Tensor:
    """``layout`` spells the expected shape, e.g. ``"(batch, seq, d_model)"``."""
    require_tensor(name, x)
    if x.dim() not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ValueError(
            f"{name}: expected {want} dimensions {layout}, got {x.dim()} with shape {shape_str(x)}"
        )
    return x


TOKEN_ID_DTYPES = (torch.int64, torch.int32)  # what indexing an embedding matrix accepts


def require_token_ids(name: str, ids, vocab_size: int | None = None, ranks: tuple[int, ...] | None = None,
                      layout: str = "(batch, seq)", what: str = "token ids") -> torch.Tensor:
    """The one check of token ids (and token types): an int64 or int32 tensor, with a number of dimensions
    in ``ranks`` (if given, spelled by ``layout``), every value in ``[0, vocab_size)`` (if given)."""
    if ranks is None:
        require_tensor(name, ids)
    else:
        require_rank(name, ids, ranks, layout)
    if ids.dtype not in TOKEN_ID_DTYPES:
        raise TypeError(f"{name}: expected an integer tensor of {what} (torch.long), got dtype {ids.dtype}")
    if vocab_size is not None and ids.numel() and not 0 <= int(ids.min()) <= int(ids.max()) < vocab_size:
        raise ValueError(f"{name}: expected {what} in [0, {vocab_size - 1}], "
                         f"got values in [{int(ids.min())}, {int(ids.max())}]")
    return ids


def require_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected a positive int, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def require_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {sorted(choices)}, got {value!r}")


def require_divisible(d_model: int, n_heads: int) -> int:
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model: expected a multiple of n_heads={n_heads} so that d_h = d_model / n_heads "
            f"is whole, got d_model={d_model}"
        )
    return d_model // n_heads


def require_mask(name: str, mask, target: tuple[int, ...], layout: str) -> torch.Tensor:
    """Check a boolean mask that must broadcast to ``target`` (True = may attend)."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name}: expected dtype torch.bool (True = may attend), got {mask.dtype}; "
            f"use `{name} == 1` or pass additive scores through `bias`"
        )
    if mask.dim() > len(target) or mask.dim() < 2:
        raise ValueError(
            f"{name}: expected 2 to {len(target)} dimensions broadcastable to {layout} = "
            f"{tuple(target)}, got shape {shape_str(mask)}"
        )
    for m, t in zip(reversed(mask.shape), reversed(target)):
        if m not in (1, t):
            raise ValueError(
                f"{name}: expected a shape broadcastable to {layout} = {tuple(target)}, "
                f"got {shape_str(mask)}"
            )
    return mask
