"""A forbidden callable is the same code by any name: its ATen operator and overloads (``torch.ops.aten``), its
other bindings (``torch.native_layer_norm``, ``torch._C._nn.cross_entropy_loss``), its tensor method
(``x.repeat_interleave``) and the ``torch.nn`` classes that call it (``nn.CrossEntropyLoss``) are flagged as the
forbidden name, statically (``grader/judging/forbidden.py``) and by the kernel's recorder
(``grader/kernel_side/forbidden_calls.py``); ways into the operator registry, the C bindings and any module's
``sys`` are flagged as what the grader cannot check. Each answer below scored full points with ``--forbidden zero``
before.
"""

from __future__ import annotations

import pkgutil
import types
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from grader.grade import _to_zero
from grader.hidden import module_for
from grader.judging import forbidden
from grader.kernel_side.forbidden_calls import recording

from conftest import ASSIGNMENTS, make_submission, solution_sources

A04, A06, A07, A09, A12 = ("04_queries_keys_values", "06_add_norm_feed_forward", "07_masking", "09_output_head",
                           "12_from_2017_to_today")
SDPA, LN, CE = ("torch.nn.functional.scaled_dot_product_attention", "torch.nn.functional.layer_norm",
                "torch.nn.functional.cross_entropy")
NORM = "import torch\n\n\ndef layer_norm(x, gamma, beta, eps=1e-5):\n    return {}\n"
ATTENTION = "import torch\n\n\ndef attention(q, k, v, mask=None):\n    return {}\n"
LOSS = ("import torch\nfrom torch import nn\n\n\ndef masked_cross_entropy(logits, labels, pad_id):\n"
        "    return {}\n")
REPEAT = "import torch\n\n\ndef repeat_kv(x, n_rep):\n    return {}\n"
ONLINE = "import torch\nimport torch.nn.functional as F\n\n\ndef online_softmax_attention(q, k, v, block_size):\n" \
         "    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n    return {}\n"

# (assignment, answer cell, source, the exercise it counts against, the forbidden name it is flagged as)
ROUTES = [
    (A06, "ex2_answer", NORM.format("torch.native_layer_norm(x, x.shape[-1:], gamma, beta, eps)[0]"),
     "ex2_layer_norm", LN),
    (A06, "ex2_answer", NORM.format("torch.ops.aten.layer_norm(x, [x.shape[-1]], gamma, beta, eps)"),
     "ex2_layer_norm", LN),
    (A06, "ex2_answer", NORM.format("torch.ops.aten.native_layer_norm.default(x, [x.shape[-1]], gamma, beta, eps)[0]"),
     "ex2_layer_norm", LN),
    (A06, "ex1_answer", "import torch\nby_hand = torch.native_layer_norm", "ex1_layer_norm_by_hand", LN),
    (A04, "ex2_answer", ATTENTION.format("torch.ops.aten.scaled_dot_product_attention(q, k, v, mask)"),
     "ex2_attention", SDPA),
    (A04, "ex2_answer", ATTENTION.format("torch._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]"),
     "ex2_attention", SDPA),
    (A04, "ex2_answer", "import torch.nn.functional as F\n\n\ndef attention(q, k, v, mask=None):\n    return "
     "F.multi_head_attention_forward(q, k, v, 1, 1, None, None, None, None, False, 0.0, None, None)[0]\n",
     "ex2_attention", SDPA),
    (A09, "ex2_answer", LOSS.format("torch._C._nn.cross_entropy_loss(logits.flatten(0, 1), labels.flatten(), "
                                    "None, 1, pad_id)"), "ex2_masked_cross_entropy", CE),
    (A09, "ex2_answer", LOSS.format("nn.CrossEntropyLoss(ignore_index=pad_id)(logits.flatten(0, 1), labels.flatten())"),
     "ex2_masked_cross_entropy", CE),
    (A09, "ex2_answer", LOSS.format("torch.ops.aten.cross_entropy_loss.default(logits.flatten(0, 1), "
                                    "labels.flatten())"), "ex2_masked_cross_entropy", CE),
    (A12, "ex4_answer", REPEAT.format("x.repeat_interleave(n_rep, dim=1)"), "ex4_repeat_kv", "torch.repeat_interleave"),
    (A12, "ex4_answer", REPEAT.format("torch.Tensor.repeat_interleave(x, n_rep, dim=1)"), "ex4_repeat_kv",
     "torch.repeat_interleave"),
    (A12, "ex4_answer", REPEAT.format("getattr(x, 'repeat_interleave')(n_rep, dim=1)"), "ex4_repeat_kv",
     "torch.repeat_interleave"),
    (A07, "ex2_answer", "import torch\nallowed = torch.ones(4, 4, dtype=torch.bool).tril().tolist()\n",
     "ex2_causal_by_hand", "torch.tril"),
    # exercise 12.2's text forbids a softmax: an answer that takes one over the whole row is flagged
    (A12, "ex2_answer", ONLINE.format("F.softmax(s, dim=-1) @ v"), "ex2_online_softmax_attention",
     "torch.nn.functional.softmax"),
    (A12, "ex2_answer", ONLINE.format("s.softmax(dim=-1) @ v"), "ex2_online_softmax_attention", "torch.softmax"),
    (A12, "ex2_answer", ONLINE.format("torch.nn.Softmax(dim=-1)(s) @ v"), "ex2_online_softmax_attention",
     "torch.softmax"),
]


def found(assignment: str, cell: str, source: str) -> list[forbidden.Finding]:
    return forbidden.findings(make_submission(assignment, {cell: source}), assignment)


@pytest.mark.parametrize("assignment, cell, source, gid, name", ROUTES)
def test_another_route_to_a_forbidden_callable_is_flagged_as_it_and_scores_0(assignment, cell, source, gid, name):
    got = found(assignment, cell, source)
    assert (gid, name) in {(f.grade_id, f.name) for f in got if f.kind == "uses"}, [f.text for f in got]
    assert gid in _to_zero(got)  # --forbidden zero: the exercise scores 0


@pytest.mark.parametrize("source, through", [
    ("torch.sys.modules['torch.nn.functional'].layer_norm(x, x.shape[-1:], gamma, beta, eps)", "torch.sys.modules"),
    ("torch.sys.modules['transformer'].layer_norm(x, gamma, beta, eps)", "torch.sys.modules"),
    ("np.sys.modules['transformer'].layer_norm(x, gamma, beta, eps)", "numpy.sys.modules"),
    ("os.sys.modules['transformer'].layer_norm(x, gamma, beta, eps)", "os.sys.modules"),
    ("getattr(torch, 'sys').modules['transformer'].layer_norm(x, gamma, beta, eps)", "torch.sys.modules"),
    ("type(x).sys", ".sys"),
    ("torch.ops.aten.mean(x)", "torch.ops.aten.mean"),
    ("torch._C._VariableFunctions.mean(x)", "torch._C._VariableFunctions.mean"),
    ("torch._VF.mean(x)", "torch._VF.mean"),
    ("torch.nn.functional.torch._C._nn.gelu(x)", "torch.nn.functional.torch._C._nn.gelu"),
])
def test_the_registry_the_c_bindings_and_any_modules_sys_are_flagged(source, through):
    got = found(A06, "ex2_answer", "import os\n\nimport numpy as np\n" + NORM.format(source))
    reaches = [f for f in got if f.kind in ("dynamic", "internal")]
    assert through in [f.name for f in reaches], [f.text for f in got]
    assert all(f.grade_id == "ex2_layer_norm" for f in reaches) and "ex2_layer_norm" in _to_zero(got)


@pytest.mark.parametrize("source", [
    NORM.format("gamma * (x - x.mean(-1, keepdim=True)) / x.var(-1, keepdim=True, unbiased=False).add(eps).sqrt() "
                "+ beta"),
    "class Norm(torch.nn.Module):\n    def forward(self, x):\n        return self.layer_norm(x)\n",  # no tensor method
    "import sys\nprint(sys.version)\n",
])
def test_what_only_looks_like_a_route_is_not_flagged(source):
    assert found(A06, "ex2_answer", source) == []


def test_a_method_of_another_name_is_not_the_forbidden_one():
    assert found(A12, "ex4_answer", REPEAT.format("x.repeat(1, n_rep, 1, 1)")) == []


# ------------------------------------------------------------------ routes derived from PyTorch itself

X, IDS = torch.randn(2, 3, 4), torch.tensor([0, 3])
LOGITS = torch.randn(2, 5, generator=torch.Generator().manual_seed(0))
# How to call each torch callable that an exercise forbids (to find the ATen operator it is, by tracing it):
# a new exercise that forbids another one adds its call here.
EXAMPLES = {
    SDPA: lambda f: (f, (X, X, X)),
    LN: lambda f: (lambda x: f(x, (4,)), (X,)),
    "torch.layer_norm": lambda f: (lambda x: f(x, (4,)), (X,)),
    "torch.nn.LayerNorm": lambda c: (c(4), (X,)),
    "torch.nn.RNN": lambda c: (c(4, 3), (X, torch.zeros(1, 3, 3))),
    "torch.nn.RNNCell": lambda c: (c(4, 3), (X[0], torch.zeros(3, 3))),
    "torch.nn.MultiheadAttention": lambda c: (c(4, 2), (X, X, X)),
    "torch.nn.TransformerDecoderLayer": lambda c: (c(4, 2, 8, dropout=0.0), (X, X)),
    "torch.tril": lambda f: (f, (X,)),
    "torch.softmax": lambda f: (lambda x: f(x, -1), (X,)),
    "torch.nn.functional.softmax": lambda f: (lambda x: f(x, -1), (X,)),
    CE: lambda f: (lambda x: f(x, IDS), (LOGITS,)),
    "torch.nn.CrossEntropyLoss": lambda c: (c(), (LOGITS, IDS)),
    "torch.nn.functional.nll_loss": lambda f: (lambda x: f(x, IDS), (LOGITS,)),
    "torch.nn.functional.unfold": lambda f: (lambda x: f(x, 2, stride=2), (X[None],)),
    "torch.repeat_interleave": lambda f: (lambda x: f(x, 2, dim=1), (X,)),
}
SPACES = ("torch", "torch._C._VariableFunctions", "torch._C._nn", "torch._C._special")


def forbidden_callables() -> dict[str, tuple[str, ...]]:
    """Every torch callable some exercise forbids -> the exercises (assignment:grade_id) that forbid it."""
    out: dict[str, tuple[str, ...]] = {}
    for assignment in ASSIGNMENTS:
        for gid, rule in getattr(module_for(assignment), "FORBIDS", {}).items():
            for name in rule.names:
                if name.startswith("torch."):
                    out[name] = (*out.get(name, ()), f"{assignment}:{gid}")
    return out


def traced_op(name: str) -> str | None:
    """The one ATen operator that calling ``name`` records in a trace (torch.jit.trace: before any decomposition),
    or None when it records several (a composite, such as nn.MultiheadAttention)."""
    fn, args = EXAMPLES[name](pkgutil.resolve_name(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = torch.jit.trace(fn, args, check_trace=False).graph
    ops = {n.kind()[6:] for n in graph.nodes() if n.kind().startswith("aten::")
           and any(o.type().kind() == "TensorType" for o in n.outputs())}
    return ops.pop() if len(ops) == 1 else None


def registry_routes(op: str) -> list[str]:
    """What the registry binds to ``op`` and to its ``native_``/``_`` implementations: ``torch.ops.aten`` and each
    overload, a C function of the same name in SPACES, and the tensor method (as ``.op``)."""
    all_ops = {n[6:].split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    out = []
    for o in (op, f"native_{op}", f"_{op}"):
        if o not in all_ops:
            continue
        packet = getattr(torch.ops.aten, o)
        out += [f"torch.ops.aten.{o}", *(f"torch.ops.aten.{o}.{v}" for v in packet.overloads())]
        out += [f"{s}.{o}" for s in SPACES if isinstance(getattr(pkgutil.resolve_name(s), o, None),
                                                         types.BuiltinFunctionType)]
        out += [f".{o}"] if isinstance(getattr(torch.Tensor, o, None), types.MethodDescriptorType) else []
    return out


def calling_classes(name: str) -> list[str]:
    """The public torch.nn classes whose forward names the forbidden functional ``F.<leaf>`` (its bytecode)."""
    leaf = name.rsplit(".", 1)[1]
    if getattr(F, leaf, None) is not pkgutil.resolve_name(name):
        return []
    return [f"torch.nn.{k}" for k, c in vars(nn).items() if isinstance(c, type) and issubclass(c, nn.Module)
            and isinstance(getattr(c, "forward", None), types.FunctionType) and leaf in c.forward.__code__.co_names
            and c.forward.__globals__.get("F") is F]


def test_every_torch_callable_an_exercise_forbids_has_an_example_call():
    assert set(forbidden_callables()) <= set(EXAMPLES), "add a call for the new forbidden callable to EXAMPLES"


@pytest.mark.parametrize("name", sorted(forbidden_callables()))
def test_forbidden_knows_every_route_the_registry_has_for_each_forbidden_callable(name):
    """The operator a trace records for the callable, every name the registry binds to it and to its native
    implementation, and every nn class whose forward calls it, all read as the forbidden name."""
    op = traced_op(name)
    want = [*(registry_routes(op) if op else []), *calling_classes(name)]
    if not want:
        pytest.skip(f"{name} is a composite (no single operator) that no nn class calls by name")
    missed = [route for route in want if not forbidden.matches(route, name)]
    assert not missed, f"{name} ({forbidden_callables()[name]}) is also {missed}"


def test_the_derivation_finds_the_routes_of_the_finding():
    """The red team's routes are among those derived, so the test above covers them."""
    assert traced_op(LN) == traced_op("torch.nn.LayerNorm") == "layer_norm"
    assert {"torch.ops.aten.layer_norm.default", "torch.native_layer_norm"} <= set(registry_routes("layer_norm"))
    assert traced_op(SDPA) == "scaled_dot_product_attention"
    assert traced_op(CE) == "cross_entropy_loss" and "torch._C._nn.cross_entropy_loss" in registry_routes(
        "cross_entropy_loss")
    assert "torch.nn.CrossEntropyLoss" in calling_classes(CE)
    assert ".repeat_interleave" in registry_routes(traced_op("torch.repeat_interleave"))
    assert traced_op("torch.nn.MultiheadAttention") is None  # a composite: no single operator is it


def test_routes_are_never_the_exercises_own_tools():
    """What the solutions use is no route of anything they are forbidden (reading them finds nothing)."""
    for assignment in ASSIGNMENTS:
        assert forbidden.findings(make_submission(assignment), assignment) == [], assignment


# ------------------------------------------------------------------ the kernel's recorder


def recorded(names, call) -> list[str]:
    with recording(names) as ran:
        call()
    return ran


@pytest.mark.parametrize("names, call, ran", [
    ((LN,), lambda: torch.ops.aten.layer_norm(X, [4]), [LN]),
    ((LN,), lambda: torch.ops.aten.native_layer_norm.default(X, [4], None, None, 1e-5), [LN]),
    ((LN,), lambda: torch.native_layer_norm(X, [4], None, None, 1e-5), [LN]),
    ((SDPA, "transformer"), lambda: torch.ops.aten.scaled_dot_product_attention(X, X, X), [SDPA]),
    ((SDPA,), lambda: torch._scaled_dot_product_flash_attention_for_cpu(X[None], X[None], X[None]), [SDPA]),
    (("torch.softmax", CE, "torch.nn.CrossEntropyLoss"), lambda: torch._C._nn.cross_entropy_loss(LOGITS, IDS),
     [CE, "torch.nn.CrossEntropyLoss"]),
    (("torch.nn.CrossEntropyLoss",), lambda: F.cross_entropy(LOGITS, IDS), ["torch.nn.CrossEntropyLoss"]),
    ((CE, "torch.nn.functional.nll_loss"), lambda: nn.CrossEntropyLoss()(LOGITS, IDS), [CE]),
    (("torch.repeat_interleave",), lambda: X.repeat_interleave(2, dim=1), ["torch.repeat_interleave"]),
    (("torch.repeat_interleave",), lambda: torch.ops.aten.repeat_interleave.self_int(X, 2),
     ["torch.repeat_interleave"]),
    (("torch.tril",), lambda: X.tril(), ["torch.tril"]),
    (("torch.repeat_interleave", "torch.tril"), lambda: X.repeat(1, 2, 1).triu(), []),
])
def test_the_kernel_records_a_forbidden_callable_under_its_other_names(names, call, ran):
    assert recorded(names, call) == ran


def test_the_recorder_does_not_take_a_caller_for_the_call():
    """nn.MultiheadAttention calls F.scaled_dot_product_attention only without weights: the kernel reports what ran."""
    mha = nn.MultiheadAttention(4, 2)
    assert recorded((SDPA,), lambda: mha(X, X, X)) == []
    assert recorded((SDPA,), lambda: mha(X, X, X, need_weights=False)) == [SDPA]


def test_the_solutions_of_the_finding_record_nothing():
    user: dict = {}
    exec(compile("import torch\n" + solution_sources(A12)["ex4_answer"], "<answer>", "exec"), user)  # noqa: S102
    assert recorded(("torch.repeat_interleave", "transformer"), lambda: user["repeat_kv"](X[None], 2)) == []
