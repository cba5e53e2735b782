"""Checks for the exercises of chapter 0: why Transformers."""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real

import numpy as np
import torch
from torch import nn

from ..attention import scaled_dot_product_attention
from .core import call, compare, fail, report, require_keys

__all__ = ["check_recurrence_by_hand", "check_attend", "check_elman_rnn", "RECURRENCE_KEYS"]

# Exercise 1: a sentence of 21 words; every hop of an RNN keeps 0.9 of a signal.
RECURRENCE_N = 21
RECURRENCE_FACTOR = 0.9
SURVIVAL_TOLERANCE = 1e-3
RECURRENCE_KEYS = ("rnn_steps", "attention_steps", "rnn_path", "attention_path", "survives")


def _number(value):
    """A plain float from an int, float, numpy scalar or one-element tensor; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, torch.Tensor):
        return float(value) if value.numel() == 1 else None
    if isinstance(value, (Real, np.number)):
        return float(value)
    return None


def check_recurrence_by_hand(answers) -> None:
    """Steps and paths of an RNN and of self-attention for 21 words, and 0.9 ** 20."""
    __tracebackhide__ = True
    name = "recurrence by hand"
    require_keys(name, answers, RECURRENCE_KEYS)
    values = {}
    for key in RECURRENCE_KEYS:
        values[key] = _number(answers[key])
        if values[key] is None:
            fail(f"✗ {name}", [f"{key}: expected a number, got {type(answers[key]).__name__}"])
        if not math.isfinite(values[key]):
            fail(f"✗ {name}", [f"{key}: expected a finite number, got {answers[key]}"])

    n, f = RECURRENCE_N, RECURRENCE_FACTOR
    hops = n - 1
    expected = {"rnn_steps": n, "attention_steps": 1, "rnn_path": hops, "attention_path": 1,
                "survives": f ** hops}
    mistakes = {
        "rnn_steps": {
            n - 1: "an RNN computes one hidden state per word, h_1 included: count them all.",
            1: "an RNN cannot compute its states at once: h_t needs h_(t-1) first.",
        },
        "attention_steps": {
            n: "one self-attention layer computes every position at the same time: no output waits for another.",
            0: "even a layer that computes everything at once takes one step.",
        },
        "rnn_path": {
            n: "off by one: word 1 already sits at position 1; count the hops from h_1 to h_n.",
            1: "in an RNN word 1 reaches position n only through every hidden state in between.",
        },
        "attention_path": {
            n - 1: "in self-attention position n looks at word 1 directly: one hop, whatever the distance.",
            0: "word 1 and word n are different positions: at least one hop joins them.",
        },
        "survives": {
            f ** (hops + 1): "one multiplication per hop: as many factors of 0.9 as there are hops, not words.",
            f ** (hops - 1): "one multiplication per hop: as many factors of 0.9 as there are hops.",
            f * hops: "the signal is multiplied by 0.9 at every hop (a power), not multiplied by the number of hops.",
            1 - f ** hops: "this is the fraction that is lost; the question asks for what survives.",
            100 * f ** hops: "give a fraction between 0 and 1, not a percentage.",
            1 - (1 - f) * hops: "the losses compound: each hop keeps 0.9 of what is left, so use a power.",
        },
    }
    problems = []
    for key in RECURRENCE_KEYS:
        got, want = values[key], expected[key]
        tol = SURVIVAL_TOLERANCE if key == "survives" else 1e-9
        if abs(got - want) <= tol:
            continue
        problems.append(f"{key} is wrong" + (" (tolerance 1e-3)" if key == "survives" else " (an exact count)"))
        for wrong, hint in mistakes[key].items():
            if abs(got - wrong) <= tol:
                problems.append(f"Hint: {hint}")
                break
    report(name, problems)


def _attend_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    q, keys, values = torch.randn(4, generator=g), torch.randn(6, 4, generator=g), torch.randn(6, 3, generator=g)
    one_key = (torch.randn(5, generator=g), torch.randn(1, 5, generator=g), torch.randn(1, 2, generator=g))
    return [("6 keys", (q, keys, values)), ("1 key", one_key)]


def _attend_mistakes(q, keys, values) -> dict[str, torch.Tensor]:
    scores = keys @ q
    w = scores.softmax(dim=0)
    return {
        "in this chapter a score is the plain dot product q . k_j; the division by sqrt(d_k) comes in chapter 4.":
            (scores / math.sqrt(q.shape[0])).softmax(dim=0) @ values,
        "you returned the weights; the output is their weighted sum of the values.": w,
        "the scores must go through a softmax first, so that the weights are positive and sum to 1.":
            scores @ values,
        "dividing the scores by their sum is not a softmax: exponentiate them first.": (scores / scores.sum()) @ values,
        "the weighted sum runs over the values, not the keys.": w @ keys,
        "that is a hard lookup (the best key only); attention mixes all the values by their weights.":
            values[int(scores.argmax())],
        "the weights must depend on the query: this is the plain average of the values.": values.mean(dim=0),
    }


def check_attend(fn: Callable, seed: int = 0) -> None:
    """``fn(query (d,), keys (n, d), values (n, d_v))`` -> ``(d_v,)``, softmax(keys @ query) @ values (atol 1e-5)."""
    __tracebackhide__ = True
    for case, (q, keys, values) in _attend_cases(seed):
        got = call(fn, (q.clone(), keys.clone(), values.clone()), f"attend ({case})")
        if isinstance(got, tuple):
            fail(f"✗ attend ({case})", ["returned a tuple; return only the output vector"])
        expected = scaled_dot_product_attention(q[None, None], keys[None], values[None], scale=1.0)[0, 0]
        problems = compare(got, expected, ("d_v",), atol=1e-5, rtol=1e-4, mistakes=_attend_mistakes(q, keys, values),
                           what=f"output ({case})")
        if problems:
            report(f"attend ({case})", problems)
    # Large scores: e^100 overflows float32, so exp(s) / sum(exp(s)) gives inf / inf = NaN.
    q = torch.tensor([10.0, 0.0])
    keys = torch.tensor([[10.0, 0.0], [9.0, 1.0], [0.0, 1.0]])
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    got = call(fn, (q, keys, values), "attend (large scores)")
    t = got.detach() if isinstance(got, torch.Tensor) else None
    if t is not None and t.shape == (2,) and not bool(torch.isfinite(t).all()):
        fail("✗ attend (large scores)", [
            "output (large scores): NaN or Inf for scores near 100",
            "Hint: e^100 overflows; .softmax(dim=0) subtracts the largest score first and stays finite.",
        ])
    expected = scaled_dot_product_attention(q[None, None], keys[None], values[None], scale=1.0)[0, 0]
    report("attend", compare(got, expected, ("d_v",), atol=1e-5, rtol=1e-4, what="output (large scores)"))


def _rnn_reference(seed: int, input_size: int, hidden_size: int) -> nn.RNN:
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    rnn = nn.RNN(input_size, hidden_size, batch_first=True)
    torch.random.set_rng_state(gen_state)
    return rnn


def _elman(x, w_ih, w_hh, b_ih, b_hh, act=torch.tanh, recurrent=True, reverse=False, shift=False):
    """A loop over time with a knob per known mistake; ``x (batch, seq, input)`` -> ``(batch, seq, hidden)``."""
    h = torch.zeros(x.shape[0], w_hh.shape[0], dtype=x.dtype)
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    out = [None] * x.shape[1]
    for t in steps:
        before = h
        h = act(x[:, t] @ w_ih.T + b_ih + (h @ w_hh.T if recurrent else 0) + b_hh)
        out[t] = before if shift else h
    return torch.stack(out, dim=1)  # seq of (batch, hidden) -> (batch, seq, hidden)


PARAMETERS = {"weight_ih": ("hidden_size", "input_size"), "weight_hh": ("hidden_size", "hidden_size"),
              "bias_ih": ("hidden_size",), "bias_hh": ("hidden_size",)}


def check_elman_rnn(cls, seed: int = 0) -> None:
    """``cls(input_size, hidden_size)`` is an ``nn.Module`` whose ``forward(x (batch, seq, input))`` returns all
    hidden states ``(batch, seq, hidden)`` and equals ``nn.RNN(..., batch_first=True)`` with copied weights."""
    __tracebackhide__ = True
    name = "ElmanRNN"
    input_size, hidden_size = 3, 4
    sizes = {"input_size": input_size, "hidden_size": hidden_size}
    model = call(cls, (input_size, hidden_size), f"{name}({input_size}, {hidden_size})")
    if not isinstance(model, nn.Module):
        fail(f"✗ {name}", [f"expected an instance of a torch.nn.Module subclass, got {type(model).__name__}",
                           "write `class ElmanRNN(nn.Module):` and call super().__init__() first"])
    registered = dict(model.named_parameters())
    problems = []
    for pname, dims in PARAMETERS.items():
        want = tuple(sizes[d] for d in dims)
        if pname not in registered:
            hint = (f"{pname} exists but is not registered: wrap it in nn.Parameter(...)"
                    if isinstance(getattr(model, pname, None), torch.Tensor) else f"{pname}: missing")
            problems.append(hint)
        elif tuple(registered[pname].shape) != want:
            got_dims = ", ".join(str(s) for s in registered[pname].shape)
            problems.append(f"{pname}: expected shape ({', '.join(f'{d}={sizes[d]}' for d in dims)}), got ({got_dims})")
            if tuple(registered[pname].shape) == want[::-1]:
                problems.append(f"Hint: nn.RNN stores {pname} as (hidden_size, input_size) and computes "
                                f"x @ {pname}.T; store it the same way.")
    if problems:
        report(name, problems)

    reference = _rnn_reference(seed, input_size, hidden_size)
    with torch.no_grad():
        for pname in PARAMETERS:
            registered[pname].copy_(getattr(reference, f"{pname}_l0"))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, input_size, generator=g)
    got = call(model, (x.clone(),), f"{name} forward")
    if isinstance(got, tuple):
        fail(f"✗ {name} forward", ["returned a tuple; return only the tensor of all hidden states "
                                   "(batch, seq, hidden), not a pair like nn.RNN's (output, h_n)"])
    with torch.no_grad():
        expected = reference(x)[0]
        w = [getattr(reference, f"{p}_l0").detach() for p in PARAMETERS]
        seq_first = nn.RNN(input_size, hidden_size)
        for p in PARAMETERS:
            getattr(seq_first, f"{p}_l0").copy_(getattr(reference, f"{p}_l0"))
        mistakes = {
            "no tanh: each new state is squashed with torch.tanh.": _elman(x, *w, act=lambda z: z),
            "the states do not depend on each other: add h_(t-1) @ weight_hh.T at every step.":
                _elman(x, *w, recurrent=False),
            "the output at step t is the new state h_t, not the state h_(t-1) from before the step.":
                _elman(x, *w, shift=True),
            "time runs backwards: start at t = 0 and go forward.": _elman(x, *w, reverse=True),
            "time runs along dimension 1: x is (batch, seq, input), so step t reads x[:, t].": seq_first(x)[0],
            "bias_hh is missing: nn.RNN adds both biases, bias_ih and bias_hh.": _elman(x, w[0], w[1], w[2], 0 * w[3]),
            "bias_ih is missing: nn.RNN adds both biases, bias_ih and bias_hh.": _elman(x, w[0], w[1], 0 * w[2], w[3]),
            "you returned only the last hidden state; return the states of every step, (batch, seq, hidden).":
                expected[:, -1],
        }
    problems = compare(got, expected, ("batch", "seq", "hidden"), atol=1e-5, rtol=1e-4, mistakes=mistakes,
                       what=f"{name} output")
    if not problems and not got.requires_grad:
        problems = ["the output does not depend on the parameters through autograd: "
                    "use them directly, without .data, .detach() or torch.no_grad()"]
    report(name, problems)
