"""Hidden tests of assignment 03, positional encodings (references: the formulas written out here, complex numbers).

Exercise 1 reads four entries of the exercise's d_model = 5 table, worked by hand: its question is fixed, not drawn
from the seed. Every other input comes from the run's seed. The sinusoidal module's output is scored, and so is its
output after one SGD step on its parameters (a table stored as a trainable parameter moves); whether the table is a
buffer, which only the kernel sees, is reported beside them.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import describe, fields, items, numbers, tensor

ASSIGNMENT = "03_positional_encodings"
FIXED = {"ex1_table_entries"}  # four entries of the exercise's d_model = 5 table, worked by hand
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex1_table_entries": Forbid("entries", ("transformer",)),
    "ex2_shift_matrix": Forbid("shift_matrix", ("transformer",)),
    "ex3_rope": Forbid("rope", ("transformer",)),
    "ex4_relative_bias_softmax": Forbid("relative_bias_softmax", ("transformer",)),
    "ex5_sinusoidal_module": Forbid("SinusoidalPositionalEncoding", ("transformer",)),
}
TOL = {"atol": 1e-5, "rtol": 1e-5}
SINUSOIDAL = ("module", "trainable", "table_buffer", "out", "stepped")


def _P(pos: int, j: int, d: int) -> float:
    """Entry (pos, j) of the sinusoidal table: pair j // 2, sine in even columns, cosine in odd ones."""
    angle = pos / 10000 ** (2 * (j // 2) / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


def _floats(got):
    """A tensor, array or (nested) list of numbers as a float64 tensor; None if it is none of these."""
    if isinstance(got, torch.Tensor):
        return None if got.dtype == torch.bool or got.dtype.is_complex else got.detach().double()
    if isinstance(got, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(got, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        return torch.from_numpy(arr)
    return None


def _close(got, want: torch.Tensor, dims, name: str, **tol) -> str | None:
    """``got`` (a tensor, or an array or list of numbers; any float dtype) close to ``want``."""
    t = _floats(got)
    if t is None:
        return f"{name}: expected a tensor, got {describe(got)}"
    problem = tensor(t, want.double(), dims=dims, dtype=None, **tol)
    return f"{name}: {problem}" if problem else None


def _returns(ref, dims, name):
    """A judge for ``calls``: the result close to ``ref``, in any floating-point dtype."""
    def judge(reply):
        out, _args = fields(reply, "out", "args")
        return _close(out, ref, dims, name, **TOL)
    return judge


def ex1_table_entries(seed: int):
    want = [_P(1, 0, 5), _P(2, 1, 5), _P(3, 2, 5), _P(4, 3, 5)]
    yield Case("entries = [P[1, 0], P[2, 1], P[3, 2], P[4, 3]] of the d_model = 5 table (each within 1e-3)",
               reads("entries"), lambda got: numbers(got, want, 1e-3, "entries"))


def _shift(c: int, d: int) -> torch.Tensor:
    """M_c, written out: per pair i, the 2 x 2 block that moves (sin t w, cos t w) to (sin (t+c) w, cos (t+c) w)."""
    M = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = c / 10000 ** (2 * i / d)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    return M


def _shift_judge(c: int, d: int):
    times = [7, 12, 30]
    rows = {t: torch.tensor([_P(t, j, d) for j in range(d)], dtype=torch.float64)
            for t in times + [t + c for t in times]}
    eye = torch.eye(d, dtype=torch.float64)

    def judge(reply):
        out, _args = fields(reply, "out", "args")
        M = _floats(out)
        if M is None:
            return f"expected a float tensor, got {describe(out)}"
        problem = tensor(M, _shift(c, d), dims=["row", "column"], dtype=None, **TOL)
        if problem:
            return problem
        if tensor(M.T @ M, eye, dtype=None, atol=1e-5, rtol=0.0):
            return "M_c does not preserve lengths (M_c^T M_c is not the identity)"
        if any(tensor(M @ rows[t], rows[t + c], dtype=None, atol=1e-5, rtol=0.0) for t in times):
            return "M_c P_t is not P_(t+c)"
        return None
    return judge


def ex2_shift_matrix(seed: int):
    g = generator(seed, "ex2_shift_matrix")
    for _ in range(4):
        d = 2 * int(torch.randint(1, 9, (1,), generator=g))
        c = int(torch.randint(-6, 7, (1,), generator=g))
        yield Case(f"shift_matrix(c, {d}) for a random offset c between -6 and 6: M_c, and M_c P_t = P_(t+c)",
                   calls("shift_matrix", c, d), _shift_judge(c, d))


def _rope(x: torch.Tensor, t: int) -> torch.Tensor:
    """RoPE as complex multiplication: pair (a, b) is a + ib, multiplied by e^(i t omega_j)."""
    d = x.shape[0]
    omega = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.double().reshape(-1, 2).contiguous()) * torch.polar(torch.ones_like(omega), t * omega)
    return torch.view_as_real(z).flatten()


def _relative_judge(q, k, positions, offset):
    def judge(replies):
        replies = items(replies, len(positions), "the replies, one per position")
        scores = []
        for t, reply in zip(positions, replies, strict=True):
            rq, rk = items(reply, 2, "the reply for one position")
            a, b = _floats(rq), _floats(rk)
            if a is None or b is None or tuple(a.shape) != (q.shape[0],) or tuple(b.shape) != (k.shape[0],):
                return f"rope: expected a tensor of shape (d={q.shape[0]},), got {describe(rq if a is None else rk)}"
            if not bool(torch.isfinite(a).all() and torch.isfinite(b).all()):
                return "rope returned NaN or infinite values"
            scores.append(float(a @ b))
            if tensor(a, _rope(q, t), dtype=None, **TOL) or tensor(b, _rope(k, t - offset), dtype=None, **TOL):
                return f"rope(q, t) or rope(k, t - {offset}) is wrong at one of the positions t"
        if max(scores) - min(scores) >= 1e-4:
            return f"the score <rope(q, t), rope(k, t - {offset})> changes when t moves (more than 1e-4)"
        return None
    return judge


def ex3_rope(seed: int):
    g = generator(seed, "ex3_rope")
    for d, top in [(2, 3), (4, 20), (16, 100), (64, 300)]:
        x = torch.randn(d, generator=g)
        t = int(torch.randint(0, top, (), generator=g))
        yield Case(f"rope of a random vector of size {d} at a random position below {top}", calls("rope", x, t),
                   _returns(_rope(x, t), ["d"], "the output"))
    q, k = torch.randn(32, generator=g), torch.randn(32, generator=g)
    offset = int(torch.randint(1, 10, (), generator=g))
    positions = sorted(int(t) for t in torch.randperm(200, generator=g)[:3] + offset)
    yield Case("the relative property: <rope(q, t), rope(k, t - c)> for random q and k of size 32, a random offset c "
               "and three random positions t (equal within 1e-4, each rotation right)",
               Request("a03.rope_pairs", {"q": q, "k": k, "positions": positions, "offset": offset}),
               _relative_judge(q, k, positions, offset))


def ex4_relative_bias_softmax(seed: int):
    g = generator(seed, "ex4_relative_bias_softmax")
    for T in [1, 3, 8, 10]:
        t = int(torch.randint(0, T, (), generator=g))
        s = torch.randn(T, generator=g)
        b = torch.randn(2 * T - 1, generator=g)
        e = [math.exp(float(s[i]) + float(b[T - 1 + t - i])) for i in range(T)]
        want = torch.tensor([v / sum(e) for v in e], dtype=torch.float64)
        args = [s, b, t]
        yield Case(f"relative_bias_softmax with random scores ({T},) and bias ({2 * T - 1},), the query at a random "
                   "position",
                   calls("relative_bias_softmax", *args),
                   _returns(want, ["key"], "the weights"))


def _sinusoidal_judge(ref):
    """Scored: the module's output."""
    def judge(reply):
        _module, _trainable, _buffer, out, _stepped = fields(reply, *SINUSOIDAL)
        if out is None:
            return "no output: expected an instance of a torch.nn.Module subclass"
        problem = tensor(out, ref, dims=["batch", "seq", "d_model"], **TOL)
        return f"the output: {problem}" if problem else None
    return judge


def _stepped_judge(ref):
    """Scored: the output after one SGD step on the module's parameters, which must not have moved the table."""
    def judge(reply):
        *_, out, stepped = fields(reply, *SINUSOIDAL)
        if out is None:
            return "no output: expected an instance of a torch.nn.Module subclass"
        problem = tensor(stepped, ref, dims=["batch", "seq", "d_model"], **TOL)
        return (f"the output after one SGD step on the module's parameters: {problem} (the table is fixed: does "
                "training move it? store it with self.register_buffer('table', ...))") if problem else None
    return judge


def _buffer_judge(reply):
    """Unscored: the kernel says whether the table is a buffer and the module has nothing to train."""
    module, trainable, table_buffer, _out, _stepped = fields(reply, *SINUSOIDAL)
    if not module:
        return "expected an instance of a torch.nn.Module subclass"
    if trainable != 0:
        return ("the table is fixed, but the module has trainable parameters: "
                "store it with self.register_buffer('table', ...)")
    if table_buffer is not True:
        return "the module has no buffer named table: store it with self.register_buffer('table', ...)"
    return None


def ex5_sinusoidal_module(seed: int):
    g = generator(seed, "ex5_sinusoidal_module")
    for d, L, seq in [(1, 3, 3), (7, 30, 12), (32, 100, 100), (9, 16, 1)]:
        x = torch.randn(3, seq, d, generator=g)
        table = torch.tensor([[_P(p, j, d) for j in range(d)] for p in range(seq)])
        weights, after = torch.randn(3, seq, d, generator=g), torch.randn(3, seq, d, generator=g)
        request = Request("a03.sinusoidal", {"d_model": d, "max_len": L, "x": x, "weights": weights,
                                             "after": after})
        yield Case(f"SinusoidalPositionalEncoding({d}, max_len={L}) on a random x of shape (3, {seq}, {d}): "
                   "the output", request, _sinusoidal_judge(x + table))
        yield Case(f"SinusoidalPositionalEncoding({d}, max_len={L}) after one SGD step (lr 1) on its parameters "
                   f"for the loss sum(w * output), w random: the output on another random x of shape (3, {seq}, {d}) "
                   "(the fixed table must not move)", request, _stepped_judge(after + table))
        yield Case(f"SinusoidalPositionalEncoding({d}, max_len={L}): no trainable parameters, a buffer named table",
                   request, _buffer_judge, scored=False)
