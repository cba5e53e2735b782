"""The known mistakes of the exercises of chapter 3, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a03` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from transformer.positional import sinusoidal_encoding

from ..core import Mistake


def _table_by(d_model: int, n_positions: int, angle_of, swap: bool = False) -> torch.Tensor:
    """A (positions, d_model) table built from a (possibly mistaken) rule ``angle_of(pos, column)``."""
    t = torch.zeros(n_positions, d_model, dtype=torch.float64)
    for pos in range(n_positions):
        for j in range(d_model):
            a = angle_of(pos, j)
            use_sin = (j % 2 == 0) != swap
            t[pos, j] = math.sin(a) if use_sin else math.cos(a)
    return t


def _right_angle(d: int, base: float = 10000.0):
    return lambda pos, j: pos / base ** (2 * (j // 2) / d)


# Mistaken tables, ``table(d_model, n_positions) -> (n_positions, d_model)``, float64.
TABLE_MISTAKES = [
    Mistake("sine and cosine swapped", "sine and cosine are swapped: even columns 2i hold the sine, odd columns 2i+1 "
            "the cosine.", lambda d, n: _table_by(d, n, _right_angle(d), swap=True)),
    Mistake("column number for i", "the exponent is 2i/d_model where i counts the (sin, cos) pairs: columns 2i and "
            "2i+1 share one frequency (you used the column number for i).",
            lambda d, n: _table_by(d, n, lambda pos, j: pos / 10000 ** (2 * j / d))),
    Mistake("no 2", "the exponent is 2i/d_model, with the pair number i (you used the column number without the 2).",
            lambda d, n: _table_by(d, n, lambda pos, j: pos / 10000 ** (j / d))),
    Mistake("2i doubled", "the exponent is 2i/d_model with i the pair number; 2i is already the even column, so you "
            "doubled it.", lambda d, n: _table_by(d, n, lambda pos, j: pos / 10000 ** (4 * (j // 2) / d))),
    Mistake("degrees", "the angles are in radians, not degrees (math.sin works in radians).",
            lambda d, n: _table_by(d, n, lambda pos, j: math.radians(_right_angle(d)(pos, j)))),
]


def _shift_by(c: int, d: int, omega_of, sign: float = 1.0) -> torch.Tensor:
    m = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = c * omega_of(i)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[math.cos(a), sign * math.sin(a)],
                                                            [-sign * math.sin(a), math.cos(a)]])
    return m


def _omega(d: int):
    return lambda i: 10000 ** (-2 * i / d)


SHIFT_MATRIX_MISTAKES = [
    Mistake("turns the wrong way", "this matrix turns the wrong way: M_c P(t) gives P(t - c). In the (sin, cos) pair, "
            "sin(x + a) = sin x cos a + cos x sin a.", lambda c, d: _shift_by(c, d, _omega(d), sign=-1.0)),
    Mistake("one angle for all pairs", "every pair turns by its own angle c * omega_i, with omega_i = 1 / "
            "10000^(2i/d_model).", lambda c, d: _shift_by(c, d, lambda i: 1.0)),
    Mistake("shift of 1", "the angle is c * omega_i: the shift c multiplies the frequency.",
            lambda c, d: _shift_by(1, d, _omega(d))),
    Mistake("column number for i", "omega_i = 1 / 10000^(2i/d_model), with i counting pairs (you used the column "
            "number 2i for i).", lambda c, d: _shift_by(c, d, lambda i: 10000 ** (-4 * i / d))),
]


def _rope_halves(x: torch.Tensor, t: int) -> torch.Tensor:
    d = x.shape[0]
    w = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    a = t * w
    x1, x2 = x[: d // 2].double(), x[d // 2:].double()
    return torch.cat([x1 * a.cos() - x2 * a.sin(), x1 * a.sin() + x2 * a.cos()])


def _rope_with(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    x = x.double()
    x1, x2 = x[0::2], x[1::2]
    return torch.stack([x1 * angles.cos() - x2 * angles.sin(), x1 * angles.sin() + x2 * angles.cos()], -1).flatten()


def _pair_numbers(x: torch.Tensor) -> torch.Tensor:
    """``2j`` for the pairs ``j`` of ``x (d,)``, as float64."""
    return torch.arange(0, x.shape[0], 2, dtype=torch.float64)


ROPE_MISTAKES = [
    Mistake("clockwise", "the pairs turn clockwise: R_t = [[cos, -sin], [sin, cos]] turns (x[2j], x[2j+1]) "
            "counter-clockwise.", lambda x, t: _rope_with(x, -t * 10000 ** (-_pair_numbers(x) / x.shape[0]))),
    Mistake("halves", "the pairs are neighbours (x[0], x[1]), (x[2], x[3]), ...; you paired the first half with the "
            "second half (another convention, not this book's).", _rope_halves),
    Mistake("one angle for all pairs", "pair j turns by t * omega_j with omega_j = 1 / 10000^(2j/d); you turned every "
            "pair by t.", lambda x, t: _rope_with(x, t * torch.ones_like(_pair_numbers(x)))),
    Mistake("column number for j", "omega_j = 1 / 10000^(2j/d), with j counting pairs (you used the column number 2j "
            "for j).", lambda x, t: _rope_with(x, t * 10000 ** (-2 * _pair_numbers(x) / x.shape[0]))),
    Mistake("position t + 1", "every pair is turned one step too far. Positions count from 0, and the token at "
            "position 0 is not turned at all: the angle is t * omega_j.",
            lambda x, t: _rope_with(x, (t + 1) * 10000 ** (-_pair_numbers(x) / x.shape[0]))),
]


def _bias_of_distance(bias, n_keys: int, t: int, flipped: bool = False):
    """``b[t - i]`` (or ``b[i - t]``) for every key ``i``, ``(n_keys,)``, with ``b[k] = bias[n_keys - 1 + k]``."""
    distance = torch.arange(n_keys) - t if flipped else t - torch.arange(n_keys)  # (n_keys,)
    return bias[n_keys - 1 + distance]


def _flipped(scores, bias, t):
    return (scores + _bias_of_distance(bias, scores.shape[0], t, flipped=True)).softmax(-1)


RELATIVE_BIAS_MISTAKES = [
    Mistake("distance flipped", "the distance is t - i (query position minus key position); you used i - t.",
            _flipped),
    Mistake("added after the softmax", "the bias is added to the scores before the softmax, inside the exponent.",
            lambda scores, bias, t: scores.softmax(-1) + _bias_of_distance(bias, scores.shape[0], t)),
    Mistake("not normalised", "the bias is added inside the exponent, and then the weights are normalised: divide "
            "by the sum of exp(s_j + b[t - j]).",
            lambda scores, bias, t: scores.softmax(-1) * _bias_of_distance(bias, scores.shape[0], t).exp()),
    Mistake("no offset", "bias[k] is b of distance k - (T - 1): b_0 sits at index T - 1 (you forgot the offset).",
            lambda scores, bias, t: (scores + bias[(t - torch.arange(scores.shape[0])) % (2 * scores.shape[0] - 1)])
            .softmax(-1)),
    Mistake("no bias", "this is the softmax of the scores alone; add the bias b[t - i] to each score first.",
            lambda scores, bias, t: scores.softmax(-1)),
]


class _AddsTable(nn.Module):
    """A module that adds ``table(d_model, max_len)``, a fixed table: ``(batch, seq, d_model)`` in and out."""

    def __init__(self, d_model: int, max_len: int, table: Callable[[int, int], torch.Tensor]):
        super().__init__()
        self.register_buffer("table", table(d_model, max_len))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[: x.shape[1]]


def _adds(table: Callable[[int, int], torch.Tensor]) -> Callable[[int, int], nn.Module]:
    """The exercise's module, ``cls(d_model, max_len)``, adding a mistaken table."""
    return lambda d_model, max_len: _AddsTable(d_model, max_len, table)


class _TableAlone(nn.Module):
    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_len, d_model).double())

    def forward(self, x):
        return self.table[: x.shape[1]].expand(x.shape[0], -1, -1)  # (batch, seq, d_model), without x


class _TableAloneUnbatched(_TableAlone):
    def forward(self, x):
        return self.table[: x.shape[1]]  # (seq, d_model)


class _NothingAdded(nn.Module):
    def __init__(self, d_model: int, max_len: int):
        super().__init__()

    def forward(self, x):
        return x


class _OddBreaks(nn.Module):
    """The table built by slices, every odd column given one angle per pair: fine for an even d_model only."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] / 10000 ** (
            torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (max_len, ceil(d_model / 2))
        table = torch.zeros(max_len, d_model, dtype=torch.float64)
        table[:, 0::2] = angles.sin()
        table[:, 1::2] = angles.cos()  # one column too many when d_model is odd
        self.register_buffer("table", table)

    def forward(self, x):
        return x + self.table[: x.shape[1]]


ODD_D_MODEL_HINT = ("it works for an even d_model and breaks for an odd one. Count the columns for d_model = 5: "
                    "which hold a sine, which a cosine? Is there a cosine for every angle?")

SINUSOIDAL_MODULE_MISTAKES = [
    *(Mistake(m.name, m.hint, _adds(m.wrong)) for m in TABLE_MISTAKES),
    Mistake("the table alone", "the module adds the table to x; you returned the table alone.", _TableAlone),
    Mistake("nothing added", "forgot to add the table: the output is x unchanged.", _NothingAdded),
    Mistake("odd d_model", ODD_D_MODEL_HINT, _OddBreaks),
    Mistake("the table alone, unbatched", "the module adds the table to x (batch, seq, d_model); you returned the "
            "table alone.", _TableAloneUnbatched),
]
