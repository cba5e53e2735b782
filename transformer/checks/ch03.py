"""Checks for the exercises of chapter 3: positional encodings."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ..positional import RelativePositionBias, SinusoidalPositionalEncoding, apply_rope, shift_matrix, sinusoidal_encoding
from .core import as_tensor, call, compare, fail, report

__all__ = ["check_table_entries", "check_shift_matrix", "check_rope", "check_relative_bias_softmax",
           "check_sinusoidal_module", "TABLE_ENTRIES"]

# (position, column) of the entries asked for in the by-hand exercise, in the (positions, d_model) table
TABLE_ENTRIES = ((1, 0), (2, 1), (3, 2), (4, 3))
TABLE_TOLERANCE = 1e-3


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


def _mistaken_tables(d: int, n: int) -> dict[str, torch.Tensor]:
    return {
        "sine and cosine are swapped: even columns 2i hold the sine, odd columns 2i+1 the cosine.":
            _table_by(d, n, _right_angle(d), swap=True),
        "the exponent is 2i/d_model where i counts the (sin, cos) pairs: columns 2i and 2i+1 share one "
        "frequency (you used the column number for i).":
            _table_by(d, n, lambda pos, j: pos / 10000 ** (2 * j / d)),
        "the exponent is 2i/d_model, with the pair number i (you used the column number without the 2).":
            _table_by(d, n, lambda pos, j: pos / 10000 ** (j / d)),
        "the exponent is 2i/d_model with i the pair number; 2i is already the even column, so you doubled it.":
            _table_by(d, n, lambda pos, j: pos / 10000 ** (4 * (j // 2) / d)),
        "the angles are in radians, not degrees (math.sin works in radians).":
            _table_by(d, n, lambda pos, j: math.radians(pos / 10000 ** (2 * (j // 2) / d))),
    }


def check_table_entries(answer) -> None:
    """``[P[1, 0], P[2, 1], P[3, 2], P[4, 3]]`` of the d_model = 5 table, each within 1e-3."""
    __tracebackhide__ = True
    table = sinusoidal_encoding(5, 5).double()
    pick = lambda t: torch.stack([t[p, j] for p, j in TABLE_ENTRIES])  # noqa: E731
    expected = pick(table)
    mistakes = {hint: pick(t) for hint, t in _mistaken_tables(5, 6).items()}
    mistakes["rows are positions and columns are dimensions: P[pos, j] (you read the table transposed)."] = \
        torch.stack([table[j, p] for p, j in TABLE_ENTRIES])
    report("d_model = 5 table", compare(answer, expected, ("entry",), atol=TABLE_TOLERANCE, rtol=0.0,
                                        mistakes=mistakes, what="entries"))


def _shift_by(c: int, d: int, omega_of, sign: float = 1.0) -> torch.Tensor:
    m = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = c * omega_of(i)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[math.cos(a), sign * math.sin(a)],
                                                            [-sign * math.sin(a), math.cos(a)]])
    return m


def check_shift_matrix(fn: Callable) -> None:
    """``fn(c, d_model)`` must return ``M_c`` ``(d_model, d_model)`` with ``P(t + c) = M_c P(t)`` (even d_model)."""
    __tracebackhide__ = True
    for c, d in ((1, 2), (3, 6), (-2, 8), (5, 4)):
        name = f"shift_matrix({c}, {d})"
        got = call(fn, (c, d), name)
        expected = shift_matrix(c, d).double()
        omega = lambda i, d=d: 10000 ** (-2 * i / d)  # noqa: E731
        mistakes = {
            "this matrix turns the wrong way: M_c P(t) gives P(t - c). In the (sin, cos) pair, "
            "sin(x + a) = sin x cos a + cos x sin a.": _shift_by(c, d, omega, sign=-1.0),
            "every pair turns by its own angle c * omega_i, with omega_i = 1 / 10000^(2i/d_model).":
                _shift_by(c, d, lambda i: 1.0),
            "the angle is c * omega_i: the shift c multiplies the frequency.": _shift_by(1, d, omega),
            "omega_i = 1 / 10000^(2i/d_model), with i counting pairs (you used the column number 2i for i).":
                _shift_by(c, d, lambda i, d=d: 10000 ** (-4 * i / d)),
        }
        problems = compare(got, expected, ("row", "column"), atol=1e-5, rtol=1e-5, mistakes=mistakes,
                           what=name)
        if problems and not any("Hint" in p for p in problems):
            m = as_tensor(got)
            if m is not None and tuple(m.shape) == (d, d) and bool(torch.isfinite(m).all()):
                table = sinusoidal_encoding(20, d).double()
                if not torch.allclose(table[5 + c], m.double() @ table[5], atol=1e-4):
                    problems.append(f"M_c @ P(5) should equal P(5 + c) for c = {c}, and it does not")
        if problems:
            report(name, problems)
    report("shift_matrix", [])


def _rope_reference(x: torch.Tensor, t: int) -> torch.Tensor:
    return apply_rope(x[None].double(), torch.tensor([t]))[0]


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


def _relative_property_fails(fn: Callable, g: torch.Generator) -> bool:
    """True when ``<fn(q, t), fn(k, i)>`` changes as ``t`` and ``i`` move together (and fn runs)."""
    d = 8
    q, k = torch.randn(d, generator=g), torch.randn(d, generator=g)
    scores = []
    for t, i in ((4, 1), (7, 4), (13, 10)):
        try:
            a, b = as_tensor(fn(q.clone(), t)), as_tensor(fn(k.clone(), i))
            scores.append(float((a.double().flatten() * b.double().flatten()).sum()))
        except Exception:  # noqa: BLE001 - the value checks report errors
            return False
    return max(scores) - min(scores) > 1e-4


def check_rope(fn: Callable, seed: int = 0) -> None:
    """``fn(x, t)`` rotates each pair ``(x[2j], x[2j+1])`` of ``x (d,)`` by ``t * omega_j``, counter-clockwise;
    then ``<fn(q, t), fn(k, i)>`` depends on ``t - i`` only."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for d, t in ((2, 3), (8, 5), (8, 0), (6, 11)):
        name = f"rope(x, t={t}) with d={d}"
        x = torch.randn(d, generator=g)
        got = call(fn, (x.clone(), t), name)
        expected = _rope_reference(x, t)
        w = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        mistakes = {
            "the pairs turn clockwise: R_t = [[cos, -sin], [sin, cos]] turns (x[2j], x[2j+1]) counter-clockwise.":
                _rope_with(x, -t * w),
            "the pairs are neighbours (x[0], x[1]), (x[2], x[3]), ...; you paired the first half with the "
            "second half (another convention, not this book's).": _rope_halves(x, t),
            "pair j turns by t * omega_j with omega_j = 1 / 10000^(2j/d); you turned every pair by t.":
                _rope_with(x, t * torch.ones_like(w)),
            "omega_j = 1 / 10000^(2j/d), with j counting pairs (you used the column number 2j for j).":
                _rope_with(x, t * 10000 ** (-2 * torch.arange(0, d, 2, dtype=torch.float64) / d)),
        }
        problems = compare(got, expected, ("d",), atol=1e-5, rtol=1e-5, mistakes=mistakes, what=name)
        v = as_tensor(got)
        if problems and v is not None and tuple(v.shape) == (d,) and bool(torch.isfinite(v).all()):
            if abs(float(v.double().norm()) - float(x.double().norm())) > 1e-4:
                problems.append("a rotation keeps the length of a vector, and |rope(x, t)| differs from |x|")
            if _relative_property_fails(fn, torch.Generator().manual_seed(seed + 1)):
                problems.append("<rope(q, t), rope(k, i)> changes when t and i move together; "
                                "after a rotation by t * omega_j it must depend on t - i only")
        if problems:
            report(name, problems)
    if _relative_property_fails(fn, torch.Generator().manual_seed(seed + 1)):
        fail("✗ rope: the relative property", [
            "<rope(q, t), rope(k, i)> changes when t and i move together; "
            "after a rotation by t * omega_j it must depend on t - i only"])
    report("rope", [])


def _relative_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    cases = []
    for T, t in ((5, 2), (4, 0), (6, 5)):
        scores = torch.randn(T, generator=g)
        bias = torch.randn(2 * T - 1, generator=g)
        cases.append((T, t, scores, bias))
    return cases


def check_relative_bias_softmax(fn: Callable, seed: int = 0) -> None:
    """``fn(scores, bias, t)``: ``p_i = exp(s_i + b[t - i]) / sum_j exp(s_j + b[t - j])`` with
    ``b[k] = bias[T - 1 + k]``, for a query at position ``t`` and keys ``0 .. T-1``."""
    __tracebackhide__ = True
    for T, t, scores, bias in _relative_cases(seed):
        name = f"relative_bias_softmax (T={T}, t={t})"
        got = call(fn, (scores.clone(), bias.clone(), t), name)
        rel = RelativePositionBias(n_heads=1, max_distance=T - 1)
        with torch.no_grad():
            rel.bias.copy_(bias[None])
            b_row = rel(T, T)[0, t]  # (T,): b[t - i] for every key i
        expected = (scores + b_row).softmax(-1)
        i = torch.arange(T)
        flipped = bias[T - 1 + (i - t)]
        mistakes = {
            "the distance is t - i (query position minus key position); you used i - t.": (scores + flipped).softmax(-1),
            "the bias is added to the scores before the softmax, inside the exponent.":
                scores.softmax(-1) + b_row,
            "the bias is added inside the exponent, and then the weights are normalised: divide by the sum "
            "of exp(s_j + b[t - j]).": scores.softmax(-1) * b_row.exp(),
            "bias[k] is b of distance k - (T - 1): b_0 sits at index T - 1 (you forgot the offset).":
                (scores + bias[(t - i) % (2 * T - 1)]).softmax(-1),
            "this is the softmax of the scores alone; add the bias b[t - i] to each score first.": scores.softmax(-1),
        }
        problems = compare(got, expected, ("key",), atol=1e-5, rtol=1e-5, mistakes=mistakes, what=name)
        p = as_tensor(got)
        if problems and p is not None and tuple(p.shape) == (T,) and bool(torch.isfinite(p).all()):
            if abs(float(p.sum()) - 1) > 1e-4:
                problems.append(f"the weights sum to {float(p.sum()):.4f}; a softmax gives weights that sum to 1")
        if problems:
            report(name, problems)
    report("relative_bias_softmax", [])


def check_sinusoidal_module(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, max_len)`` adds the sinusoidal table: ``(batch, seq, d_model)`` in and out."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for d, max_len, seq in ((6, 20, 7), (5, 10, 4), (16, 64, 50)):
        name = f"SinusoidalPositionalEncoding({d}, max_len={max_len})"
        module = call(cls, (d, max_len), name)
        if not isinstance(module, nn.Module):
            fail(f"✗ {name}", [f"expected an instance of torch.nn.Module, got {type(module).__name__}"])
        trainable = [n for n, p in module.named_parameters() if p.requires_grad]
        if trainable:
            fail(f"✗ {name}", [f"the table is fixed, but the module has trainable parameters: {trainable}",
                               "Hint: store it with self.register_buffer('table', ...), not as nn.Parameter"])
        x = torch.randn(2, seq, d, generator=g)
        got = call(module, (x.clone(),), f"{name}.forward (x of shape (2, {seq}, {d}))")
        if isinstance(got, torch.Tensor):
            got = got.detach()
        expected = SinusoidalPositionalEncoding(d, max_len)(x).double()
        mistakes = {hint: x.double() + t for hint, t in _mistaken_tables(d, seq).items()}
        mistakes["the module adds the table to x; you returned the table alone."] = \
            sinusoidal_encoding(seq, d).double().expand(2, seq, d)
        mistakes["forgot to add the table: the output is x unchanged."] = x.double()
        mistakes["the module adds the table to x (batch, seq, d_model); you returned the table alone."] = \
            sinusoidal_encoding(seq, d).double()
        report_name = f"{name} on x of shape (2, {seq}, {d})"
        problems = compare(got, expected, ("batch", "seq", "d_model"), atol=1e-5, rtol=1e-5, mistakes=mistakes,
                           what="output")
        if problems:
            report(report_name, problems)
    report("SinusoidalPositionalEncoding", [])
