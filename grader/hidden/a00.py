"""Hidden tests of assignment 00, why Transformers (references: PyTorch's nn.RNN and attention, arithmetic by hand)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grader.forbidden import Forbid
from grader.hidden import Case, Request, calls, probe, reads
from grader.hidden.judge import as_number, describe, entry, number, returns, tensor

ASSIGNMENT = "00_why_transformers"
GRADED = ["ex1_recurrence_by_hand", "ex2_attend", "ex3_elman_rnn"]
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_attend": Forbid("attend", ("torch.nn.functional.scaled_dot_product_attention", "transformer")),
    "ex3_elman_rnn": Forbid("ElmanRNN", ("torch.nn.RNN", "torch.nn.RNNCell")),
}
TOL = {"atol": 1e-5, "rtol": 1e-4}
GRAD_TOL = {"atol": 1e-4, "rtol": 1e-3}   # gradients through a loop over time: float32 sums in another order


def _count(got, want: int, name: str) -> str | None:
    """``got`` must be a number equal to the count ``want`` (an int, a float such as 21.0, a one-element tensor)."""
    if as_number(got) is None:
        return f"{name}: expected a number, got {describe(got)}"
    got = as_number(got)
    if got != want:
        return f"{name} is wrong (an exact count)"
    return None


def ex1_recurrence_by_hand():
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


def ex2_attend():
    g = torch.Generator().manual_seed(2017)
    for n, d, dv in [(1, 1, 1), (4, 3, 2), (9, 16, 5), (30, 8, 8)]:
        q = torch.randn(d, generator=g)
        k = torch.randn(n, d, generator=g)
        v = torch.randn(n, dv, generator=g)
        ref = F.scaled_dot_product_attention(q[None, None], k[None], v[None], scale=1.0)[0, 0]
        args = [q, k, v]
        yield Case(f"attend with a random query ({d},), keys ({n}, {d}) and values ({n}, {dv})",
                   calls("attend", *args), returns(ref, ["d_v"], **TOL))
    # scores 150 and 120: e^150 overflows a float32; the weights are the logistic function of the difference, 30
    q, k, v = torch.tensor([30.0, 0.0]), torch.tensor([[5.0, 0.0], [4.0, 0.0]]), torch.eye(2)
    w = 1 / (1 + math.exp(-30.0))
    ref = torch.tensor([w, 1 - w])
    args = [q, k, v]
    yield Case("attend with two keys whose scores are above 100 (the softmax must stay finite)",
               calls("attend", *args), returns(ref, ["d_v"], atol=1e-5, rtol=1e-5))


PARAMETERS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


@probe
def a00_elman_rnn(user, input_size, hidden_size, state, x, weight):
    """ElmanRNN(input_size, hidden_size) with the weights ``state``: its parameters, its output on ``x``, and the
    gradients of its parameters for the loss ``(output * weight).sum()``."""
    import torch
    model = user["ElmanRNN"](input_size, hidden_size)
    if not isinstance(model, torch.nn.Module):
        return {"module": False, "kind": type(model).__name__}
    params = {n: list(p.shape) for n, p in model.named_parameters()}
    if any(params.get(n) != list(v.shape) for n, v in state.items()):
        return {"module": True, "params": params}
    registered = dict(model.named_parameters())
    with torch.no_grad():
        for n, v in state.items():
            registered[n].copy_(v)
    out = model(x)
    reply = {"module": True, "params": params, "out": out, "grads": None}
    if isinstance(out, torch.Tensor) and out.requires_grad and tuple(out.shape) == tuple(weight.shape):
        model.zero_grad()
        (out * weight).sum().backward()
        reply["grads"] = {n: (None if p.grad is None else p.grad.detach().clone()) for n, p in registered.items()}
    return reply


def _elman_judge(sizes, ref, grads):
    dims = ["batch", "seq", "hidden"]
    shapes = {"weight_ih": ("hidden_size", "input_size"), "weight_hh": ("hidden_size", "hidden_size"),
              "bias_ih": ("hidden_size",), "bias_hh": ("hidden_size",)}

    def judge(reply):
        if not reply.get("module"):
            return f"expected an instance of a torch.nn.Module subclass, got an object of type {reply.get('kind')}"
        params = reply["params"]
        for name, named in shapes.items():
            want = [sizes[d] for d in named]
            if name not in params:
                return f"{name} is not a registered parameter: wrap it in nn.Parameter(...)"
            if params[name] != want:
                shape = "(" + ", ".join(f"{d}={sizes[d]}" for d in named) + ")"
                return f"{name}: expected shape {shape}, got {tuple(params[name])}"
        out = reply["out"]
        if isinstance(out, tuple):
            return "returned a tuple; return only the tensor of all hidden states (batch, seq, hidden)"
        problem = tensor(out, ref, dims=dims, **TOL)
        if problem:
            return f"the output: {problem}"
        if reply["grads"] is None:
            return ("the output does not depend on the parameters through autograd: use them directly, "
                    "without .data, .detach() or torch.no_grad()")
        for name in PARAMETERS:
            got = reply["grads"].get(name)
            if got is None:   # never used: its gradient is 0 (right when h_0 = 0 is the only state it meets)
                got = torch.zeros_like(grads[name])
            problem = tensor(got, grads[name], dtype=None, **GRAD_TOL)
            if problem:
                return f"the gradient of {name}: {problem}"
        return None
    return judge


def ex3_elman_rnn():
    g = torch.Generator().manual_seed(1990)
    g_loss = torch.Generator().manual_seed(1991)   # its own generator: x is drawn as before
    for seed, (inp, hid, b, t) in enumerate([(1, 1, 1, 1), (3, 5, 2, 7), (6, 4, 3, 12)]):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            rnn = torch.nn.RNN(inp, hid, batch_first=True)
        x = torch.randn(b, t, inp, generator=g)
        weight = torch.randn(b, t, hid, generator=g_loss)   # the loss whose gradients are compared
        out = rnn(x)[0]
        (out * weight).sum().backward()
        state = {n: getattr(rnn, n + "_l0").detach().clone() for n in PARAMETERS}
        grads = {n: getattr(rnn, n + "_l0").grad.detach().clone() for n in PARAMETERS}
        sizes = {"input_size": inp, "hidden_size": hid}
        yield Case(f"ElmanRNN({inp}, {hid}) with the weights of a seeded nn.RNN, on a random x of shape "
                   f"({b}, {t}, {inp}): its parameters, all hidden states, and the gradients of its parameters",
                   Request("a00_elman_rnn", {"input_size": inp, "hidden_size": hid, "state": state, "x": x,
                                             "weight": weight}),
                   _elman_judge(sizes, out.detach(), grads))

