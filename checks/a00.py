"""Checks for the exercises of chapter 0: why Transformers."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from . import references
from .answers import require_keys
from .core import Mistake, as_number, call, compare, fail, outputs, report
from .mistakes.a00 import ATTEND_MISTAKES, ELMAN_MISTAKES

__all__ = ["check_recurrence_by_hand", "check_attend", "check_elman_rnn", "RECURRENCE_KEYS"]

# Exercise 1: a sentence of 21 words; every hop of an RNN keeps 0.9 of a signal.
RECURRENCE_N = 21
RECURRENCE_FACTOR = 0.9
SURVIVAL_TOLERANCE = 1e-3
RECURRENCE_KEYS = ("rnn_steps", "attention_steps", "rnn_path", "attention_path", "survives")


def check_recurrence_by_hand(answers) -> None:
    """Steps and paths of an RNN and of self-attention for 21 words, and 0.9 ** 20."""
    __tracebackhide__ = True
    name = "recurrence by hand"
    require_keys(name, answers, RECURRENCE_KEYS)
    values = {}
    for key in RECURRENCE_KEYS:
        values[key] = as_number(answers[key])
        if values[key] is None:
            fail(f"✗ {name}", [f"{key}: expected a number, got {type(answers[key]).__name__}"])
        if not math.isfinite(values[key]):
            fail(f"✗ {name}", [f"{key}: expected a finite number, got {answers[key]}"])

    n, f = RECURRENCE_N, RECURRENCE_FACTOR
    hops = n - 1
    expected = {"rnn_steps": n, "attention_steps": 1, "rnn_path": hops, "attention_path": 1,
                "survives": f ** hops}
    problems = []
    for key in RECURRENCE_KEYS:
        got, want = values[key], expected[key]
        tol = SURVIVAL_TOLERANCE if key == "survives" else 1e-9
        if abs(got - want) <= tol:
            continue
        problems.append(f"{key} is wrong" + (" (tolerance 1e-3)" if key == "survives" else " (an exact count)"))
        for mistake in RECURRENCE_MISTAKES:
            if mistake.part == key and abs(got - mistake.wrong) <= tol:
                problems.append(f"Hint: {mistake.hint}")
                break
    report(name, problems)


def _recurrence_mistakes() -> list[Mistake]:
    n, f = RECURRENCE_N, RECURRENCE_FACTOR
    hops = n - 1
    return [
        Mistake("h_1 not counted", "an RNN computes one hidden state per word, h_1 included: count them all.",
                n - 1, "rnn_steps"),
        Mistake("all at once", "an RNN cannot compute its states at once: h_t needs h_(t-1) first.", 1, "rnn_steps"),
        Mistake("one step per word", "one self-attention layer computes every position at the same time: no output "
                "waits for another.", n, "attention_steps"),
        Mistake("no step", "even a layer that computes everything at once takes one step.", 0, "attention_steps"),
        Mistake("words, not hops", "off by one: word 1 already sits at position 1; count the hops from h_1 to h_n.",
                n, "rnn_path"),
        Mistake("one hop", "in an RNN word 1 reaches position n only through every hidden state in between.", 1,
                "rnn_path"),
        Mistake("as long as the RNN's", "in self-attention position n looks at word 1 directly: one hop, whatever "
                "the distance.", n - 1, "attention_path"),
        Mistake("no hop", "word 1 and word n are different positions: at least one hop joins them.", 0,
                "attention_path"),
        Mistake("one factor per word", "one multiplication per hop: as many factors of 0.9 as there are hops, not "
                "words.", f ** (hops + 1), "survives"),
        Mistake("one factor short", "one multiplication per hop: as many factors of 0.9 as there are hops.",
                f ** (hops - 1), "survives"),
        Mistake("times the hops", "the signal is multiplied by 0.9 at every hop (a power), not multiplied by the "
                "number of hops.", f * hops, "survives"),
        Mistake("what is lost", "this is the fraction that is lost; the question asks for what survives.",
                1 - f ** hops, "survives"),
        Mistake("a percentage", "give a fraction between 0 and 1, not a percentage.", 100 * f ** hops, "survives"),
        Mistake("losses added up", "the losses compound: each hop keeps 0.9 of what is left, so use a power.",
                1 - (1 - f) * hops, "survives"),
    ]


RECURRENCE_MISTAKES = _recurrence_mistakes()


def _attend_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    q, keys, values = torch.randn(4, generator=g), torch.randn(6, 4, generator=g), torch.randn(6, 3, generator=g)
    one_key = (torch.randn(5, generator=g), torch.randn(1, 5, generator=g), torch.randn(1, 2, generator=g))
    return [("6 keys", (q, keys, values)), ("1 key", one_key)]


def check_attend(fn: Callable, seed: int = 0) -> None:
    """``fn(query (d,), keys (n, d), values (n, d_v))`` -> ``(d_v,)``, softmax(keys @ query) @ values (atol 1e-5)."""
    __tracebackhide__ = True
    for case, (q, keys, values) in _attend_cases(seed):
        got = call(fn, (q.clone(), keys.clone(), values.clone()), f"attend ({case})")
        if isinstance(got, tuple):
            fail(f"✗ attend ({case})", ["returned a tuple; return only the output vector"])
        expected = (keys @ q).softmax(dim=0) @ values  # softmax(k q) v, not scaled
        problems = compare(got, expected, ("d_v",),
                           mistakes=outputs(ATTEND_MISTAKES, q, keys, values), what=f"output ({case})")
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
    expected = (keys @ q).softmax(dim=0) @ values  # softmax(k q) v, not scaled
    report("attend", compare(got, expected, ("d_v",), what="output (large scores)"))


def _load(model: nn.Module, reference: nn.RNN) -> nn.Module:
    """Copy the reference's weights into ``model``'s parameters of the same names."""
    registered = dict(model.named_parameters())
    with torch.no_grad():
        for pname in PARAMETERS:
            registered[pname].copy_(getattr(reference, f"{pname}_l0"))
    return model


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

    reference = references.elman_rnn(input_size, hidden_size, seed)
    _load(model, reference)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, input_size, generator=g)
    got = call(model, (x.clone(),), f"{name} forward")
    if isinstance(got, tuple):
        fail(f"✗ {name} forward", ["returned a tuple; return only the tensor of all hidden states "
                                   "(batch, seq, hidden), not a pair like nn.RNN's (output, h_n)"])
    with torch.no_grad():
        expected = reference(x)[0]
        mistakes = outputs(ELMAN_MISTAKES, x, run=lambda wrong, x: _load(wrong(input_size, hidden_size), reference)(x))
    problems = compare(got, expected, ("batch", "seq", "hidden"), mistakes=mistakes,
                       what=f"{name} output")
    if not problems and not got.requires_grad:
        problems = ["the output does not depend on the parameters through autograd: "
                    "use them directly, without .data, .detach() or torch.no_grad()"]
    report(name, problems)


MISTAKES = {
    "check_recurrence_by_hand": RECURRENCE_MISTAKES,
    "check_attend": ATTEND_MISTAKES,
    "check_elman_rnn": ELMAN_MISTAKES,
}
