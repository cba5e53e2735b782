"""What the static reading cannot follow is flagged, not chased (``grader/judging/forbidden.py``,
``grader/judging/reading.py``).

The reading resolves names; where a name is computed it stops, and says so: any attribute reached by a computed name
("reaches an attribute by a computed name ... which the grader cannot check"), any switching-off of the kernel's
recorder, any of PyTorch's internals. Names are read in their own scope: a parameter or a local hides the module's
name of the same spelling. Each attack below scored 10/10 with ``--forbidden zero`` and no flag before (the third
round of attacks); honest code that uses ``getattr`` with a literal, ``functools``, ``map`` and in-place operations
on its own tensors, and every correct alternative of the student bank, stays unflagged.
"""

from __future__ import annotations

import pytest

from grader.grade import _to_zero
from grader.judging import forbidden

from bank import RIGHT_CASES
from conftest import make_submission

A04, A06, A12 = "04_queries_keys_values", "06_add_norm_feed_forward", "12_from_2017_to_today"
ATTENTION = ("import functools\nimport operator\nimport string\n\nimport torch\nimport torch.nn.functional as F\n\n\n"
             "def attention(q, k, v, mask=None):\n    {}\n")
NAME = "'scaled_dot_product_attention'"


def found(assignment: str, cell: str, source: str) -> list[forbidden.Finding]:
    return forbidden.findings(make_submission(assignment, {cell: source}), assignment)


def flagged(assignment: str, cell: str, source: str, kind: str, gid: str) -> list[forbidden.Finding]:
    """The findings of ``kind`` against ``gid``, after checking that ``--forbidden zero`` scores ``gid`` 0."""
    got = found(assignment, cell, source)
    assert gid in _to_zero(got), [f.text for f in got]
    return [f for f in got if f.kind == kind and f.grade_id == gid]


# ------------------------------------------------------------------ computed names

COMPUTED = [
    f"return getattr.__call__(F, {NAME})(q, k, v, attn_mask=mask)",
    f"g = getattr\n    return g(F, {NAME})(q, k, v, attn_mask=mask)",
    "return functools.reduce(getattr, ('nn', 'functional', 'scaled_dot_product_attention'), torch)(q, k, v)",
    "return string.Formatter().get_field('0.nn.functional.scaled_dot_product_attention', (torch,), {})[0](q, k, v)",
    f"return F.__getattribute__({NAME})(q, k, v, attn_mask=mask)",
    f"return type(F).__getattribute__(F, {NAME})(q, k, v)",
    "fs = torch.overrides.get_overridable_functions()[F]\n"
    "    return [f for f in fs if f.__name__ == 'scaled_dot_product_attention'][0](q, k, v)",
    "fs = torch.overrides.get_testing_overrides()\n"
    "    return [f for f in fs if getattr(f, '__name__', '') == 'scaled_dot_product_attention'][0](q, k, v)",
    f"return list(map(getattr, [F], [{NAME}]))[0](q, k, v)",
    f"return functools.partial(getattr, F)({NAME})(q, k, v)",
    f"return operator.methodcaller({NAME}, q, k, v)(F)",
    f"return print.__self__.getattr(F, {NAME})(q, k, v)",
    f"return F.__dict__[{NAME}](q, k, v)",
    f"return vars(F)[{NAME}](q, k, v)",
    "return eval('F.scaled_' + 'dot_product_attention')(q, k, v)",
    "import importlib\n    return importlib.import_module('torch.nn.functional').scaled_dot_product_attention(q, k, v)",
    "import types\n    code = (lambda: F.relu).__code__\n"
    "    return types.FunctionType(code.replace(co_names=('F', 'scaled_dot_product_attention')), {'F': F})()(q, k, v)",
]


@pytest.mark.parametrize("body", COMPUTED)
def test_an_attribute_reached_by_a_computed_name_is_flagged_with_its_exercise_and_line(body):
    got = flagged(A04, "ex2_answer", ATTENTION.format(body), "dynamic", "ex2_attention")
    assert got, body
    assert all("reaches an attribute by a computed name through " in f.text and
               f.text.endswith(", which the grader cannot check; read it") for f in got)
    assert all(f.where.startswith("ex2_answer line ") and int(f.where.split()[-1]) >= 10 for f in got)


@pytest.mark.parametrize("source", [
    f"getattr = getattr\n\n\ndef attention(q, k, v, mask=None):\n    return getattr(F, {NAME}, None)(q, k, v)\n",
    f"def attention(q, k, v, mask=None, get=getattr):\n    return get(F, {NAME})(q, k, v)\n",
])
def test_getattr_is_flagged_however_it_is_named_or_shadowed(source):
    assert flagged(A04, "ex2_answer", "import torch.nn.functional as F\n" + source, "dynamic", "ex2_attention")


def test_a_literal_getattr_on_what_the_reader_knows_is_read_as_today():
    got = found(A04, "ex2_answer", ATTENTION.format(f"return getattr(F, {NAME})(q, k, v)"))
    assert [(f.kind, f.name) for f in got] == [("uses", "torch.nn.functional.scaled_dot_product_attention")]


# ------------------------------------------------------------------ switching the recorder off

RECORDER = [
    "import sys\nsys.setprofile(None)\n",
    "import sys as s\ns.settrace(None)\n",
    "from sys import setprofile\nsetprofile(None)\n",
    "import threading\nthreading.setprofile(None)\n",
    "import threading\nthreading.settrace(None)\n",
    "import sys\ntool = sys.monitoring.PROFILER_ID\n",
    "import torch\ntorch.overrides._pop_mode()\n",
    "import torch.utils._python_dispatch as d\nd._pop_mode()\n",
    "import torch\ntorch._C._pop_torch_function_stack()\n",
    "import torch\ntorch._C._set_torch_function_mode(None)\n",
    "import torch\nwith torch._C.DisableTorchFunction():\n    pass\n",
    "import torch\nwith torch._C._DisableTorchDispatch():\n    pass\n",
    "from torch.overrides import TorchFunctionMode\n\n\nclass Quiet(TorchFunctionMode):\n    pass\n",
    "from torch.utils._python_dispatch import TorchDispatchMode\n",
    "def attention(q, k, v, mask=None):\n    import sys\n    sys.setprofile(None)\n    return q\n",
]


@pytest.mark.parametrize("source", RECORDER)
def test_switching_the_recorder_off_is_flagged_by_name(source):
    got = flagged(A04, "ex2_answer", source, "recorder", "ex2_attention")
    assert got and all("switches off the grader's recorder through " in f.text for f in got), source


def test_what_only_looks_like_the_recorder_is_not_flagged():
    assert found(A04, "ex2_answer", "import sys\nimport time\n\nprofile = time.perf_counter()\n"
                                    "trace = sys.version\n") == []


# ------------------------------------------------------------------ PyTorch's internals


@pytest.mark.parametrize("body", [
    "return torch._native_multi_head_attention(q, k, v, q.shape[-1], 1, *weights)[0]",
    "return torch._transformer_encoder_layer_fwd(q, q.shape[-1], 1, *weights)",
    "return torch._scaled_dot_product_attention_math(q, k, v)[0]",
])
def test_a_private_operator_of_pytorch_is_flagged_and_a_route_when_it_does_the_work(body):
    got = found(A04, "ex2_answer", ATTENTION.format(body))
    assert "ex2_attention" in _to_zero(got)
    assert [f for f in got if f.kind == "internal" and "reaches PyTorch's internals through torch._" in f.text]


# ------------------------------------------------------------------ scopes

REPEAT = "import math\n\nimport torch\n\nx = math\n\n\ndef repeat_kv(x, n_rep):\n    return {}\n"
ONLINE = ("import math\n\nimport torch\n\ns = math\n\n\ndef online_softmax_attention(q, k, v, block_size):\n"
          "    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n    return {}\n")


@pytest.mark.parametrize("assignment, cell, source, gid, name", [
    (A12, "ex4_answer", REPEAT.format("x.repeat_interleave(n_rep, dim=1)"), "ex4_repeat_kv", "torch.repeat_interleave"),
    (A12, "ex4_answer", REPEAT.format("[x.repeat_interleave(n_rep, dim=1) for x in [x]][0]"), "ex4_repeat_kv",
     "torch.repeat_interleave"),
    (A12, "ex4_answer", REPEAT.format("(lambda x: x.repeat_interleave(n_rep, dim=1))(x)"), "ex4_repeat_kv",
     "torch.repeat_interleave"),
    (A12, "ex4_answer", REPEAT.replace("x = math\n", "x = math\nx = torch.ones(2)\n").format("x")
     + "\n\ny = x.repeat_interleave(2)\n", "ex4_repeat_kv", "torch.repeat_interleave"),
    (A12, "ex2_answer", ONLINE.format("s.softmax(dim=-1) @ v"), "ex2_online_softmax_attention", "torch.softmax"),
    (A04, "ex2_answer", "import torch.nn.functional as F\n\n\ndef attention(q, k, v, mask=None, F=F):\n"
     "    return F.scaled_dot_product_attention(q, k, v)\n", "ex2_attention",
     "torch.nn.functional.scaled_dot_product_attention"),
    (A04, "ex2_answer", "import math\n\nimport torch.nn.functional as F\n\nF = math\n\n\n"
     "def attention(q, k, v, mask=None):\n    global F\n    import torch.nn.functional as F\n"
     "    return F.scaled_dot_product_attention(q, k, v)\n", "ex2_attention",
     "torch.nn.functional.scaled_dot_product_attention"),
])
def test_a_name_is_read_in_its_own_scope(assignment, cell, source, gid, name):
    got = found(assignment, cell, source)
    assert (gid, name) in {(f.grade_id, f.name) for f in got if f.kind == "uses"}, [f.text for f in got]


def test_a_local_of_the_same_name_does_not_make_a_module_forbidden():
    source = ("import torch\nimport torch.nn.functional as F\n\n\ndef attention(q, k, v, mask=None):\n"
              "    F = torch\n    return F.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1) @ v\n")
    assert found(A04, "ex2_answer", source) == []


# ------------------------------------------------------------------ honest code stays unflagged

HONEST = [
    (A04, "ex2_answer", "import functools\nimport math\n\nimport torch\n\n\n"
     "def attention(q, k, v, mask=None):\n"
     "    matmul = getattr(torch, 'matmul')\n"
     "    scores = matmul(q, getattr(k, 'mT')) / math.sqrt(getattr(q, 'shape')[-1])\n"
     "    if mask is not None:\n"
     "        scores.masked_fill_(~mask, float('-inf'))\n"
     "    scores -= scores.amax(dim=-1, keepdim=True)\n"
     "    scores.exp_()\n"
     "    scores /= scores.sum(dim=-1, keepdim=True)\n"
     "    weigh = functools.partial(torch.matmul, scores)\n"
     "    return list(map(weigh, [v]))[0]\n"),
    (A04, "ex2_answer", "import functools\nimport operator\n\nimport torch\n\n\n"
     "def attention(q, k, v, mask=None):\n"
     "    q = q * q.shape[-1] ** -0.5\n"
     "    scores = functools.reduce(operator.matmul, [q, k.transpose(-2, -1)])\n"
     "    if mask is not None:\n"
     "        scores = scores.masked_fill(~mask, float('-inf'))\n"
     "    weights = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)\n"
     "    weights.div_(weights.sum(dim=-1, keepdim=True))\n"
     "    return weights @ v\n"),
    (A06, "ex2_answer", "import torch\n\n\nclass Norm(torch.nn.Module):\n"
     "    def __init__(self, d):\n        super().__init__()\n        self.weight = torch.nn.Parameter(torch.ones(d))\n"
     "\n    def forward(self, x):\n        return getattr(self, 'weight') * x\n\n\n"
     "def layer_norm(x, gamma, beta, eps=1e-5):\n"
     "    mean = x.mean(-1, keepdim=True)\n    var = ((x - mean) ** 2).mean(-1, keepdim=True)\n"
     "    out = (x - mean) / torch.sqrt(var + eps)\n    out.mul_(gamma).add_(beta)\n    return out\n\n\n"
     "model = Norm(4).eval()\nprint(type(model).__name__, sorted(map(str, [1, 2])))\n"),
    (A12, "ex4_answer", "import torch\n\n\ndef repeat_kv(x, n_rep):\n"
     "    b, h, t, d = x.shape\n    return x[:, :, None].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)\n"),
]


@pytest.mark.parametrize("assignment, cell, source", HONEST)
def test_honest_code_with_literal_getattr_functools_map_and_in_place_ops_is_not_flagged(assignment, cell, source):
    assert found(assignment, cell, source) == []


@pytest.mark.parametrize("assignment, cell, what, source", RIGHT_CASES,
                         ids=[f"{c[0][:2]}-{c[1]}-{c[2]}" for c in RIGHT_CASES])
def test_no_correct_alternative_of_the_bank_is_flagged(assignment, cell, what, source):
    assert found(assignment, cell, source) == [], what
