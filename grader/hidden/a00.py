"""Hidden tests of assignment 00, why Transformers (references: PyTorch's nn.RNN and attention, arithmetic by hand).

Exercise 1 counts the steps and hops of the lectures' 21-word sentence: its questions are fixed, not drawn from the
seed. Every other input comes from the run's seed. Whether ElmanRNN registers its parameters under nn.RNN's names
and shapes is only reported (the kernel alone sees it); its outputs and gradients, computed with the grader's
weights, are scored.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, calls, generator, reads
from grader.hidden.judge import as_number, describe, entry, fields, number, returns, tensor

ASSIGNMENT = "00_why_transformers"
FIXED = {"ex1_recurrence_by_hand"}  # the lectures' 21-word sentence, counted by hand
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_attend": Forbid("attend", ("torch.nn.functional.scaled_dot_product_attention", "transformer")),
    "ex3_elman_rnn": Forbid("ElmanRNN", ("torch.nn.RNN", "torch.nn.RNNCell")),
}
GRAD_TOL = {"atol": 1e-4, "rtol": 1e-3}   # gradients through a loop over time: float32 sums in another order


def _count(got, want: int, name: str) -> str | None:
    """``got`` must be a number equal to the count ``want`` (an int, a float such as 21.0, a one-element tensor)."""
    if as_number(got) is None:
        return f"{name}: expected a number, got {describe(got)}"
    got = as_number(got)
    if got != want:
        return f"{name} is wrong (an exact count)"
    return None


def ex1_recurrence_by_hand(seed: int):
    n, f = 21, 0.9
    left = 1.0
    for _hop in range(n - 1):   # one factor per hop, written out
        left *= f
    counts = [("rnn_steps", n, "the sequential steps of the RNN for 21 words"),
              ("attention_steps", 1, "the sequential steps of one self-attention layer for 21 words"),
              ("rnn_path", n - 1, "the hops from word 1 to position 21 in the RNN"),
              ("attention_path", 1, "the hops from word 1 to position 21 in self-attention")]
    for key, want, words in counts:
        yield Case(f"answers[{key!r}], {words} (an exact count)", reads("answers"),
                   entry(key, lambda got, key=key, want=want: _count(got, want, key)))
    yield Case("answers['survives'], the fraction of word 1's signal left at position 21 (within 1e-3)",
               reads("answers"), entry("survives", lambda got: number(got, left, 1e-3, "survives")))


def ex2_attend(seed: int):
    g = generator(seed, "ex2_attend")
    for n, d, dv in [(1, 1, 1), (4, 3, 2), (9, 16, 5), (30, 8, 8)]:
        q = torch.randn(d, generator=g)
        k = torch.randn(n, d, generator=g)
        v = torch.randn(n, dv, generator=g)
        ref = F.scaled_dot_product_attention(q[None, None], k[None], v[None], scale=1.0)[0, 0]
        yield Case(f"attend with a random query ({d},), keys ({n}, {d}) and values ({n}, {dv})",
                   calls("attend", q, k, v), returns(ref, ["d_v"]))
    # scores of 100 and more: e^100 overflows a float32; the weights are the logistic function of the difference
    c, a = 25 + 15 * float(torch.rand((), generator=g)), 4 + 2 * float(torch.rand((), generator=g))
    b = a - 0.02 - 0.1 * float(torch.rand((), generator=g))
    q, k = torch.tensor([c, 0.0]), torch.tensor([[a, 0.0], [b, 0.0]])
    v = torch.randn(2, 3, generator=g)
    scores = (k.double() @ q.double()).tolist()   # the float32 inputs, in float64
    w = 1 / (1 + math.exp(scores[1] - scores[0]))
    ref = (w * v[0].double() + (1 - w) * v[1].double()).float()
    yield Case("attend with two keys whose scores are above 100 (the softmax must stay finite)",
               calls("attend", q, k, v), returns(ref, ["d_v"]))


PARAMETERS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
SHAPES = {"weight_ih": ("hidden_size", "input_size"), "weight_hh": ("hidden_size", "hidden_size"),
          "bias_ih": ("hidden_size",), "bias_hh": ("hidden_size",)}


def _registered_judge(sizes):
    """Unscored: the kernel says which parameters the module registered, and their shapes."""
    def judge(reply):
        module, params, _out, _grads = fields(reply, "module", "params", "out", "grads")
        if not module:
            return "expected an instance of a torch.nn.Module subclass"
        if not isinstance(params, dict):
            return f"expected the parameters' shapes, got {describe(params)}"
        for name, named in SHAPES.items():
            if name not in params:
                return f"{name} is not a registered parameter: wrap it in nn.Parameter(...)"
            if params[name] != [sizes[d] for d in named]:
                shape = "(" + ", ".join(f"{d}={sizes[d]}" for d in named) + ")"
                return f"{name}: expected shape {shape}; it has another shape"
        return None
    return judge


def _elman_judge(ref, grads):
    """Scored: the output with the grader's weights, and the gradients of the four parameters."""
    def judge(reply):
        _module, _params, out, got_grads = fields(reply, "module", "params", "out", "grads")
        if out is None:
            return ("no output: ElmanRNN(input_size, hidden_size) must be an nn.Module whose registered parameters "
                    "weight_ih, weight_hh, bias_ih and bias_hh have nn.RNN's shapes (the test sets them)")
        if isinstance(out, tuple):
            return "returned a tuple; return only the tensor of all hidden states (batch, seq, hidden)"
        problem = tensor(out, ref, dims=["batch", "seq", "hidden"])
        if problem:
            return f"the output: {problem}"
        if got_grads is None:
            return ("the output does not depend on the parameters through autograd: use them directly, "
                    "without .data, .detach() or torch.no_grad()")
        for name, got in zip(PARAMETERS, fields(got_grads, *PARAMETERS), strict=True):
            if got is None:   # never used: its gradient is 0 (right when h_0 = 0 is the only state it meets)
                got = torch.zeros_like(grads[name])
            problem = tensor(got, grads[name], dtype=None, **GRAD_TOL)
            if problem:
                return f"the gradient of {name}: {problem}"
        return None
    return judge


def ex3_elman_rnn(seed: int):
    g = generator(seed, "ex3_elman_rnn")
    for inp, hid, b, t in [(1, 1, 1, 1), (3, 5, 2, 7), (6, 4, 3, 12)]:
        with torch.random.fork_rng(devices=[]):  # building it draws PyTorch's own initial weights: leave no trace
            rnn = torch.nn.RNN(inp, hid, batch_first=True)
        bound = 1 / math.sqrt(hid)   # nn.RNN's own initialisation, drawn from the seed
        state = {n: (2 * torch.rand(getattr(rnn, n + "_l0").shape, generator=g) - 1) * bound for n in PARAMETERS}
        with torch.no_grad():
            for n, value in state.items():
                getattr(rnn, n + "_l0").copy_(value)
        x = torch.randn(b, t, inp, generator=g)
        weight = torch.randn(b, t, hid, generator=g)   # the loss whose gradients are compared
        out = rnn(x)[0]
        (out * weight).sum().backward()
        grads = {n: getattr(rnn, n + "_l0").grad.detach().clone() for n in PARAMETERS}
        sizes = {"input_size": inp, "hidden_size": hid}
        request = Request("a00.elman_rnn", {"input_size": inp, "hidden_size": hid, "state": state, "x": x,
                                            "weight": weight})
        yield Case(f"ElmanRNN({inp}, {hid}) with random weights, on a random x of shape ({b}, {t}, {inp}): all "
                   "hidden states, and the gradients of its parameters", request, _elman_judge(out.detach(), grads))
        yield Case(f"ElmanRNN({inp}, {hid}) registers weight_ih, weight_hh, bias_ih and bias_hh with nn.RNN's shapes",
                   request, _registered_judge(sizes), scored=False)
