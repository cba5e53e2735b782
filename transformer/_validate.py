"""Argument checks shared by the package.

Every error names the argument, what was expected and what was given, so a
reader who passes the wrong thing learns what to change.
"""

from __future__ import annotations

import operator
from enum import Enum

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


def require_min_rank(name: str, x, rank: int, layout: str) -> torch.Tensor:
    """At least ``rank`` dimensions, the last ones spelled by ``layout``, e.g. ``"(..., T_q, T_k)"``."""
    require_tensor(name, x)
    if x.dim() < rank:
        raise ValueError(f"{name}: expected at least {rank} dimension{'s' * (rank != 1)} {layout}, "
                         f"got shape {shape_str(x)}")
    return x


TOKEN_ID_DTYPES = (torch.int64, torch.int32)  # what indexing an embedding matrix accepts


def require_token_ids(name: str, ids, vocab_size: int | None = None, ranks: tuple[int, ...] | None = None,
                      layout: str = "(batch, seq)", what: str = "token ids", max_len: int | None = None,
                      offset: int = 0) -> torch.Tensor:
    """The one check of token ids (and token types): an int64 or int32 tensor, with a number of dimensions
    in ``ranks`` (if given, spelled by ``layout``), every value in ``[0, vocab_size)`` (if given), and, if
    ``max_len`` is given, a sequence (the last dimension) that ends at most at position ``max_len`` when its
    first id is at position ``offset`` (:func:`require_max_len`)."""
    if ranks is None:
        require_tensor(name, ids)
    else:
        require_rank(name, ids, ranks, layout)
    if ids.dtype not in TOKEN_ID_DTYPES:
        raise TypeError(f"{name}: expected an integer tensor of {what} (torch.long), got dtype {ids.dtype}")
    if vocab_size is not None and ids.numel() and not 0 <= int(ids.min()) <= int(ids.max()) < vocab_size:
        raise ValueError(f"{name}: expected {what} in [0, {vocab_size - 1}], "
                         f"got values in [{int(ids.min())}, {int(ids.max())}]")
    if max_len is not None:
        require_max_len(name, offset + ids.shape[-1], max_len, "the model")
    return ids


def require_int(name: str, value, low: int | None = None, high: int | None = None, *,
                expected: str | None = None) -> int:
    """An ``int`` (not a bool) in ``[low, high]`` (a bound that is None is not checked).

    ``expected`` replaces the default wording (``"an int >= 0"``, ``"an int in [0, 9]"``) in both errors.
    """
    want = expected or "an int" + _bounds(low, high, False, False)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected {want}, got {type(value).__name__} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name}: expected {want}, got {value}")
    return value


def require_positive_int(name: str, value) -> int:
    """An int >= 1 (not a bool), e.g. a size or a count."""
    return require_int(name, value, low=1, expected="a positive int")


def require_number(name: str, value, low: float | None = None, high: float | None = None, *,
                   open_low: bool = False, open_high: bool = False, expected: str | None = None) -> float:
    """An int or float (not a bool, not NaN) between ``low`` and ``high``, each end included unless
    ``open_low`` / ``open_high`` (a bound that is None is not checked).

    The default wording names the interval: ``"a number > 0"``, ``"a number in (0, 1]"``; ``expected``
    replaces it in both errors.
    """
    want = expected or "a number" + _bounds(low, high, open_low, open_high)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected {want}, got {type(value).__name__} {value!r}")
    above = low is None or (value > low if open_low else value >= low)
    below = high is None or (value < high if open_high else value <= high)
    if value != value or not (above and below):  # value != value: NaN, which is in no interval
        raise ValueError(f"{name}: expected {want}, got {value}")
    return value


def require_probability(name: str, value, *, open_low: bool = False, open_high: bool = False) -> float:
    """A number in ``[0, 1]`` (an end excluded with ``open_low`` / ``open_high``): ``"a probability in [0, 1)"``."""
    interval = _bounds(0, 1, open_low, open_high)
    return require_number(name, value, 0, 1, open_low=open_low, open_high=open_high,
                          expected="a probability" + interval)


def require_bool(name: str, value) -> bool:
    """``True`` or ``False`` itself: not 0, 1 or a string such as ``"no"``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
    return value


def _bounds(low, high, open_low: bool, open_high: bool) -> str:
    """How an interval reads after "an int" or "a number": ``" >= 1"``, ``" < 5"``, ``" in (0, 1]"``, or ``""``."""
    if low is not None and high is not None:
        return f" in {'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
    if low is not None:
        return f" {'>' if open_low else '>='} {low}"
    if high is not None:
        return f" {'<' if open_high else '<='} {high}"
    return ""


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


def require_divisor(name: str, value, whole_name: str, whole: int, why: str = "") -> int:
    """A positive int that divides ``whole`` (the argument ``whole_name``, already checked); returns
    ``whole // value``. ``why`` says, in the error, why it must divide: ``"n_kv_heads: expected a divisor of
    n_heads=8 (each kv head serves a whole group of query heads), got 3"``."""
    require_positive_int(name, value)
    if whole % value:
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name}: expected a divisor of {whole_name}={whole}{reason}, got {value}")
    return whole // value


def require_kv_heads(n_kv_heads, n_heads: int) -> int:
    """Grouped-query attention's key/value heads (chapter 12): a divisor of ``n_heads``; returns the group size
    ``n_heads // n_kv_heads``."""
    return require_divisor("n_kv_heads", n_kv_heads, "n_heads", n_heads,
                           "each kv head serves a whole group of query heads")


def require_last_dim(name: str, x, size: int, size_name: str = "d_model") -> torch.Tensor:
    """A tensor whose last dimension is ``size``, e.g. ``(..., d_model)``."""
    require_tensor(name, x)
    if x.dim() < 1 or x.shape[-1] != size:
        raise ValueError(f"{name}: expected {size_name}={size} in the last dimension, got shape {shape_str(x)}")
    return x


def require_sizes(name: str, x, sizes: tuple[int | None, ...], layout: str) -> torch.Tensor:
    """A tensor of ``len(sizes)`` dimensions (checked before) whose sizes are ``sizes``, None for any size;
    ``layout`` spells them, e.g. ``"(batch=2, T_k, d_model=16)"``."""
    require_tensor(name, x)
    if any(want is not None and got != want for got, want in zip(x.shape, sizes)):
        raise ValueError(f"{name}: expected {layout}, got {shape_str(x)}")
    return x


def require_max_len(name: str, length: int, max_len: int, build: str = "the encoding") -> int:
    """The one check of a sequence's length: ``length`` positions (cached ones included) need at most
    ``max_len``, the rows of a table of positions. It is made where a sequence enters: a model's ids, a
    positional encoding, an attention layer with RoPE. ``build`` names what to build with a larger max_len."""
    if length > max_len:
        raise ValueError(f"{name}: expected a sequence of at most max_len={max_len} positions, got {length}; "
                         f"build {build} with a larger max_len")
    return length


def require_mask(name: str, mask, target: tuple[int, ...], layout: str) -> torch.Tensor:
    """Check a boolean mask that must broadcast to ``target`` (True = may attend)."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name}: expected dtype torch.bool (True = may attend), got {mask.dtype}; "
            f"use `{name} == 1` for a mask of 0s and 1s"
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


def require_attention_inputs(q, k, v, mask=None) -> None:
    """Attention's ``q (batch, [heads,] T_q, d_k)``, ``k (batch, [heads,] T_k, d_k)``, ``v (batch, [heads,] T_k, d_v)``:
    floating point, of one dtype, sizes that fit together; a bool ``mask`` that broadcasts to the scores
    ``(batch, [heads,] T_q, T_k)``."""
    _require_qkv(q, k, v)
    if mask is not None:
        score_shape = (*q.shape[:-1], k.shape[-2])  # (batch, [heads,] T_q, T_k)
        require_mask("mask", mask, score_shape, "(batch, [heads,] T_q, T_k)")


def _require_qkv(q, k, v) -> None:
    layout = "(batch, [heads,] seq, d)"
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_float(name, t)
        require_rank(name, t, (3, 4), layout)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"k, v: expected the dtype of q ({q.dtype}), got k {k.dtype} and v {v.dtype}")
    if not (q.dim() == k.dim() == v.dim()):
        raise ValueError(
            f"k, v: expected the same number of dimensions as q ({q.dim()}), "
            f"got k {shape_str(k)} and v {shape_str(v)}"
        )
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(
            f"k, v: expected the same leading (batch, [heads]) sizes as q {tuple(q.shape[:-2])}, "
            f"got k {shape_str(k)} and v {shape_str(v)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"k: expected d_k={q.shape[-1]} (the last size of q) in its last dimension, "
            f"got {k.shape[-1]} (shape {shape_str(k)})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"v: expected one value per key, seq={k.shape[-2]} in dimension {v.dim() - 2}, "
            f"got {v.shape[-2]} (shape {shape_str(v)})"
        )


def require_enum(name: str, value, enum: type[Enum]) -> Enum:
    """A member of ``enum`` itself, not its value: ``ActsOn.SCORES``, not ``"scores"``."""
    if not isinstance(value, enum):
        members = ", ".join(f"{enum.__name__}.{m.name}" for m in enum)
        raise TypeError(f"{name}: expected a member of {enum.__name__} ({members}), "
                        f"got {type(value).__name__} {value!r}")
    return value


def require_optional_bool(name: str, value, none_means: str) -> bool | None:
    """None, ``True`` or ``False``; ``none_means`` says what None stands for, e.g. ``"only with pre-norm"``."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name}: expected None ({none_means}), True or False, got {type(value).__name__} {value!r}")
    return value


def require_index(name: str, value, low: int | None = None, high: int | None = None, *,
                  expected: str | None = None) -> int:
    """:func:`require_int` that also takes what Python indexes with as an int (a NumPy integer, a one-element
    integer tensor, e.g. an item of a tensor of ids), returned as an ``int``; a bool of any kind stays refused."""
    if not isinstance(value, (bool, int)) and not (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        try:
            value = operator.index(value)  # a NumPy int or a one-element integer tensor -> int; a NumPy bool refuses
        except (TypeError, ValueError, RuntimeError):
            pass  # not an integer: require_int names what was given
    return require_int(name, value, low, high, expected=expected)
