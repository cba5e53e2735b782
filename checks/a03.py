"""Checks for the exercises of chapter 3: positional encodings."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from transformer.positional import (
    RelativePositionBias,
    SinusoidalPositionalEncoding,
    apply_rope,
    shift_matrix,
    sinusoidal_encoding,
)

from .core import CheckFailed, Mistake, as_tensor, call, compare, fail, outputs, report, values_of
from .mistakes.a03 import (
    ODD_D_MODEL_HINT,
    RELATIVE_BIAS_MISTAKES,
    ROPE_MISTAKES,
    SHIFT_MATRIX_MISTAKES,
    SINUSOIDAL_MODULE_MISTAKES,
    TABLE_MISTAKES,
)

__all__ = ["check_table_entries", "check_shift_matrix", "check_rope", "check_relative_bias_softmax",
           "check_sinusoidal_module", "TABLE_ENTRIES"]

# (position, column) of the entries asked for in the by-hand exercise, in the (positions, d_model) table
TABLE_ENTRIES = ((1, 0), (2, 1), (3, 2), (4, 3))
TABLE_TOLERANCE = 1e-3


def _entries(table: torch.Tensor) -> torch.Tensor:
    return torch.stack([table[p, j] for p, j in TABLE_ENTRIES])


def _table_entry_mistakes() -> list[Mistake]:
    table = sinusoidal_encoding(5, 5).double()
    transposed = torch.stack([table[j, p] for p, j in TABLE_ENTRIES])
    return [*(Mistake(m.name, m.hint, _entries(m.wrong(5, 6))) for m in TABLE_MISTAKES),
            Mistake("transposed", "rows are positions and columns are dimensions: P[pos, j] (you read the table "
                    "transposed).", transposed)]


TABLE_ENTRY_MISTAKES = _table_entry_mistakes()


def check_table_entries(answer) -> None:
    """``[P[1, 0], P[2, 1], P[3, 2], P[4, 3]]`` of the d_model = 5 table, each within 1e-3."""
    __tracebackhide__ = True
    expected = _entries(sinusoidal_encoding(5, 5).double())
    report("d_model = 5 table", compare(answer, expected, ("entry",), atol=TABLE_TOLERANCE, rtol=0.0,
                                        mistakes=values_of(TABLE_ENTRY_MISTAKES), what="entries"))


def check_shift_matrix(fn: Callable) -> None:
    """``fn(c, d_model)`` must return ``M_c`` ``(d_model, d_model)`` with ``P(t + c) = M_c P(t)`` (even d_model)."""
    __tracebackhide__ = True
    for c, d in ((1, 2), (3, 6), (-2, 8), (5, 4)):
        name = f"shift_matrix({c}, {d})"
        got = call(fn, (c, d), name)
        expected = shift_matrix(c, d).double()
        problems = compare(got, expected, ("row", "column"), atol=1e-5, rtol=1e-5,
                           mistakes=outputs(SHIFT_MATRIX_MISTAKES, c, d), what=name)
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
        problems = compare(got, expected, ("d",), atol=1e-5, rtol=1e-5, mistakes=outputs(ROPE_MISTAKES, x, t),
                           what=name)
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
    for n_keys, t in ((5, 2), (4, 0), (6, 5)):
        scores = torch.randn(n_keys, generator=g)
        bias = torch.randn(2 * n_keys - 1, generator=g)
        cases.append((n_keys, t, scores, bias))
    return cases


def _bias_row(bias: torch.Tensor, n_keys: int, t: int) -> torch.Tensor:
    """``b[t - i]`` for every key ``i``, ``(n_keys,)``, read by the package's :class:`RelativePositionBias`."""
    rel = RelativePositionBias(n_heads=1, max_distance=n_keys - 1)
    with torch.no_grad():
        rel.bias.copy_(bias[None])
        return rel(n_keys, n_keys)[0, t]  # (n_keys,)


def check_relative_bias_softmax(fn: Callable, seed: int = 0) -> None:
    """``fn(scores, bias, t)``: ``p_i = exp(s_i + b[t - i]) / sum_j exp(s_j + b[t - j])`` with
    ``b[k] = bias[n - 1 + k]``, for a query at position ``t`` and ``n = len(scores)`` keys (the exercise's ``T``)."""
    __tracebackhide__ = True
    for n_keys, t, scores, bias in _relative_cases(seed):
        name = f"relative_bias_softmax (T={n_keys}, t={t})"  # T: the exercise's number of keys
        got = call(fn, (scores.clone(), bias.clone(), t), name)
        expected = (scores + _bias_row(bias, n_keys, t)).softmax(-1)
        problems = compare(got, expected, ("key",), atol=1e-5, rtol=1e-5,
                           mistakes=outputs(RELATIVE_BIAS_MISTAKES, scores, bias, t), what=name)
        p = as_tensor(got)
        if problems and p is not None and tuple(p.shape) == (n_keys,) and bool(torch.isfinite(p).all()):
            if abs(float(p.sum()) - 1) > 1e-4:
                problems.append(f"the weights sum to {float(p.sum()):.4f}; a softmax gives weights that sum to 1")
        if problems:
            report(name, problems)
    report("relative_bias_softmax", [])


def _built_and_run(cls, d_model: int, max_len: int, x: torch.Tensor) -> torch.Tensor:
    return cls(d_model, max_len)(x)


def _runs_with_even(cls: Callable, d: int, max_len: int) -> bool:
    """True when ``cls`` builds and runs with the even ``d_model`` next to ``d``."""
    try:
        cls(d + 1, max_len)(torch.zeros(1, 2, d + 1))
    except Exception:  # noqa: BLE001 - only asked to recognise a mistake
        return False
    return True


def _built_and_run_on(cls: Callable, d: int, max_len: int, x: torch.Tensor, name: str):
    """The student's module and its output on ``x``, or feedback: an error that only an odd d_model causes is named."""
    __tracebackhide__ = True
    try:
        module = cls(d, max_len)
        if not isinstance(module, nn.Module):
            fail(f"✗ {name}", [f"expected an instance of torch.nn.Module, got {type(module).__name__}"])
        trainable = [n for n, p in module.named_parameters() if p.requires_grad]
        if trainable:
            fail(f"✗ {name}", [f"the table is fixed, but the module has trainable parameters: {trainable}",
                               "Hint: store it with self.register_buffer('table', ...), not as nn.Parameter"])
        got = module(x.clone())
    except CheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - any error in student code is feedback
        lines = ["fix the error above, then run this cell again"]
        if d % 2 and _runs_with_even(cls, d, max_len):
            lines.append(f"Hint: {ODD_D_MODEL_HINT}")
        fail(f"✗ {name} raised {type(exc).__name__}: {exc}", lines)
    return got.detach() if isinstance(got, torch.Tensor) else got


def check_sinusoidal_module(cls: Callable, seed: int = 0) -> None:
    """``cls(d_model, max_len)`` adds the sinusoidal table: ``(batch, seq, d_model)`` in and out."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(seed)
    for d, max_len, seq in ((6, 20, 7), (5, 10, 4), (16, 64, 50)):
        name = f"SinusoidalPositionalEncoding({d}, max_len={max_len})"
        x = torch.randn(2, seq, d, generator=g)
        got = _built_and_run_on(cls, d, max_len, x, f"{name} on x of shape (2, {seq}, {d})")
        expected = SinusoidalPositionalEncoding(d, max_len)(x).double()
        mistakes = outputs(SINUSOIDAL_MODULE_MISTAKES, d, max_len, x, run=_built_and_run)
        report_name = f"{name} on x of shape (2, {seq}, {d})"
        problems = compare(got, expected, ("batch", "seq", "d_model"), atol=1e-5, rtol=1e-5, mistakes=mistakes,
                           what="output")
        if problems:
            report(report_name, problems)
    report("SinusoidalPositionalEncoding", [])


MISTAKES = {
    "check_table_entries": TABLE_ENTRY_MISTAKES,
    "check_shift_matrix": SHIFT_MATRIX_MISTAKES,
    "check_rope": ROPE_MISTAKES,
    "check_relative_bias_softmax": RELATIVE_BIAS_MISTAKES,
    "check_sinusoidal_module": SINUSOIDAL_MODULE_MISTAKES,
}
