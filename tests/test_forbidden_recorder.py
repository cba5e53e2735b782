"""The kernel's recorder sees a forbidden call however it is made, and says when it was switched off
(``grader/kernel_side/forbidden_calls.py``); PyTorch's operators that do a forbidden one's whole work are derived
from PyTorch (``grader/kernel_side/routes.py``); what the kernel records is a flag, and with ``--forbidden zero`` a 0,
like what the reading finds (``grader/grade.py``).

Each attack below left no trace before (the third round of attacks, exercise 4.2 with ``--forbidden zero``: 10/10,
flags and problems empty): a call from C code (``map``, ``functools.partial``), an operator that does the forbidden
one's whole work (``torch._native_multi_head_attention`` with identity weights), the recorder switched off.
"""

from __future__ import annotations

import copy
import json
import sys
from types import SimpleNamespace

import nbformat
import pytest
import torch
import torch.nn.functional as F

from grader import grade, hidden, limits
from grader.judging import forbidden
from grader.judging.verdicts import Verdict
from grader.kernel_side import forbidden_calls, plain, probes, runner
from grader.kernel_side.forbidden_calls import recording, targets
from grader.running import sandbox
from grader.running.replies import read_reply
from layout.paths import kernel_read_roots

from bank import RIGHT_CASES
from conftest import ASSIGNMENTS, graded_class, notebook_path, setup_source, solution_sources

A04 = "04_queries_keys_values"
SDPA = "torch.nn.functional.scaled_dot_product_attention"
Q, K, V = (torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
HEAD = "import functools\nimport sys\n\nimport torch\nimport torch.nn.functional as F\n\n\n"
NATIVE = (  # attention by PyTorch's fused multi-head attention with identity weights: full points before
    "import math\n\n\n"
    "def attention(q, k, v, mask=None):\n"
    "    lead, (tq, dk), (tk, dv) = q.shape[:-2], q.shape[-2:], v.shape[-2:]\n"
    "    q, k, v = (t.reshape(-1, *t.shape[-2:]) for t in (q, k, v))\n"
    "    mask = None if mask is None else mask.expand(*lead, tq, tk).reshape(-1, tq, tk)\n"
    "    e = max(dk, dv)\n"
    "    q = F.pad(q * math.sqrt(e / dk), (0, e - dk, 0, tk - tq))\n"
    "    k, v = F.pad(k, (0, e - dk)), F.pad(v, (0, e - dv))\n"
    "    eye, zero = torch.eye(e, dtype=q.dtype), torch.zeros(e, dtype=q.dtype)\n"
    "    m = None if mask is None else F.pad(~mask, (0, 0, 0, tk - tq)).unsqueeze(1)\n"
    "    out = torch._native_multi_head_attention(q, k, v, e, 1, torch.cat([eye, eye, eye]), zero.repeat(3), eye,\n"
    "                                             zero, m, False, True, None if m is None else 2)[0]\n"
    "    return out[:, :tq, :dv].reshape(*lead, tq, dv)\n"
)
QUIET = ("class Quiet(torch.overrides.TorchFunctionMode):\n"
         "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
         "        return func(*args, **(kwargs or {}))\n\n\n")
FROM_C = ("def attention(q, k, v, mask=None):\n"
          "    return next(map(functools.partial(F.scaled_dot_product_attention, attn_mask=mask), [q], [k], [v]))\n")


@pytest.fixture
def prepared():
    """The recorder prepared as in a graded kernel (the genuine hooks kept, the library folders the grader's), and
    put back as it was after the test."""
    saved = dict(forbidden_calls._GENUINE), list(forbidden_calls._LIBRARY)
    forbidden_calls.prepare(kernel_read_roots(sandbox.KERNEL_SIDE))
    yield
    forbidden_calls._GENUINE.clear()
    forbidden_calls._GENUINE.update(saved[0])
    forbidden_calls._LIBRARY[:] = saved[1]


def define(source: str, globals_: dict | None = None) -> dict:
    user = {"__name__": "__main__"} if globals_ is None else globals_
    exec(compile(HEAD + source, "<answer>", "exec"), user)  # noqa: S102 - the test's own code
    return user


def probed(source: str, names=(SDPA, "transformer")):
    """Record while the grader's own probe (a frame of the kernel side, as in grading) calls the answer's function."""
    user = define(source)
    with recording(names) as ran:
        probes.call(user, "attention", [Q, K, V])
    return ran


# ------------------------------------------------------------------ calls however made


@pytest.mark.parametrize("source", [
    FROM_C,
    "def attention(q, k, v, mask=None):\n    return list(map(F.scaled_dot_product_attention, [q], [k], [v]))[0]\n",
    NATIVE,
])
def test_a_call_made_from_c_code_or_by_an_operator_that_does_the_work_is_recorded(source):
    out = define(source)["attention"](Q, K, V)
    assert torch.allclose(out, F.scaled_dot_product_attention(Q, K, V), atol=1e-6)  # the attack works
    ran = probed(source)
    assert ran == [SDPA] and ran.off == []


def test_a_call_made_in_a_thread_the_answer_started_is_recorded():
    source = ("import threading\n\n\ndef attention(q, k, v, mask=None):\n    out = []\n"
              "    job = threading.Thread(target=lambda: out.append(F.scaled_dot_product_attention(q, k, v)))\n"
              "    job.start()\n    job.join()\n    return out[0]\n")
    assert probed(source) == [SDPA]
    source = source.replace("target=lambda: out.append(F.scaled_dot_product_attention(q, k, v))",
                            "target=F.scaled_dot_product_attention, args=(q, k, v)").replace("out[0]", "q")
    assert probed(source) == [SDPA]


def test_a_function_whose_module_is_not_main_is_still_the_students():
    user = define("attention = eval('lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v)', "
                  "{'F': F})\n")
    with recording((SDPA,)) as ran:
        probes.call(user, "attention", [Q, K, V])
    assert ran == [SDPA]


def test_the_probes_own_calls_are_not_recorded():
    """Code in the kernel side's folder (a probe building a reference of its own) is not the student's."""
    own: dict = {}
    here = forbidden_calls.HERE + "a_probe_of_its_own.py"
    exec(compile("import torch.nn.functional as F\n\n\ndef reference(q, k, v):\n"  # noqa: S102 - the test's own code
                 "    F.scaled_dot_product_attention(q, k, v)\n"
                 "    return list(map(F.scaled_dot_product_attention, [q], [k], [v]))[0]\n", here, "exec"), own)
    with recording((SDPA,)) as ran:
        own["reference"](Q, K, V)
    assert ran == []


# ------------------------------------------------------------------ the recorder switched off


DIRECT = "def attention(q, k, v, mask=None):\n    return F.scaled_dot_product_attention(q, k, v)\n"


@pytest.mark.parametrize("line, off, source", [
    ("sys.setprofile(None)", ["profile"], FROM_C),
    ("torch._C._pop_torch_function_stack()", ["function mode"], DIRECT),
    ("torch._C._push_on_torch_function_stack(Quiet())", ["function mode"], FROM_C),
])
def test_a_recorder_switched_off_during_the_call_is_reported(line, off, source):
    """What is switched off is said; what is left on still sees the call (made from C, the function mode does; made
    from Python, the profile hook does)."""
    source = QUIET + source.replace("    return", f"    {line}\n    return")
    before = torch._C._len_torch_function_stack(), sys.getprofile()
    ran = probed(source)
    assert ran.off == off
    assert ran == [SDPA]
    after = torch._C._len_torch_function_stack(), sys.getprofile()
    assert after == before  # the recorder leaves the stacks and the hook as it found them


def test_hooks_replaced_before_the_hidden_tests_are_reported_and_not_used(prepared, monkeypatch):
    monkeypatch.setattr(sys, "setprofile", lambda hook: None)
    monkeypatch.setattr(torch._C, "_push_on_torch_function_stack", lambda mode: None)
    ran = probed(DIRECT)
    assert ran == [SDPA] and ran.off == ["replaced"]


def test_the_kernel_writes_what_it_recorded_and_the_grader_reads_only_its_words(tmp_path):
    """A probe's reply carries ``ran`` and ``off`` (``runner.answer``); the grader keeps the names it asked about
    and the words of ``OFF``, whatever else the reply says."""
    user = define(FROM_C.replace("    return", "    sys.setprofile(None)\n    return"))
    ask = tmp_path / "in" / "ex2_attention" / "0"
    ask.mkdir(parents=True)
    tree = plain.encode({"probe": "call", "inputs": {"name": "attention", "args": [Q, K, V]}}, ask,
                       limits.REQUEST_BUDGET["items"])
    (ask / "request.json").write_text(json.dumps(tree))
    sizes = {"request": limits.REQUEST_BUDGET, "reply_items": limits.REPLY_BUDGET["items"], "error_chars": 200}
    runner.answer(user, str(tmp_path), "ex2_attention", 1, forbidden.watched(forbidden.forbids(A04))["ex2_attention"],
                  sizes)
    reply = read_reply(tmp_path, "out/ex2_attention/0", (SDPA,))
    assert (reply.kind, reply.ran, reply.off) == ("ok", (SDPA,), ("profile",))
    path = tmp_path / "out" / "ex2_attention" / "0" / "reply.json"
    forged = json.loads(path.read_text())
    path.write_text(json.dumps({**forged, "off": ["<b>", "profile", "replaced"], "ran": ["os.system", SDPA]}))
    reply = read_reply(tmp_path, "out/ex2_attention/0", (SDPA,))
    assert (reply.kind, reply.ran, reply.off) == ("ok", (SDPA,), ("profile", "replaced"))


# ------------------------------------------------------------------ operators derived from PyTorch

# What takes queries, keys and values but does not do attention's work: the choice of a backend (an int), the bias
# and scaling of the projections before it.
NOT_THE_WORK = {"_fused_sdp_choice", "_transform_bias_rescale_qkv"}


def attention_operators() -> set[str]:
    """Every ATen operator of the registry whose schema takes queries, keys and values (or their projection weights),
    but its backward."""
    found = set()
    for schema in torch._C._jit_get_all_schemas():
        names = {a.name for a in schema.arguments}
        if schema.name.startswith("aten::") and ({"query", "key", "value"} <= names or {"q", "k", "v"} <= names
                                                 or "qkv_weight" in names or "qkv" in names):
            found.add(schema.name[6:])
    return {op for op in found if "backward" not in op} - NOT_THE_WORK


def test_every_operator_of_the_registry_that_does_attention_is_a_route_of_scaled_dot_product_attention():
    ops = attention_operators()
    assert {"_native_multi_head_attention", "_transformer_encoder_layer_fwd", "scaled_dot_product_attention"} <= ops
    watched = targets([SDPA])[4]
    assert [op for op in sorted(ops) if not forbidden.matches(f"torch.ops.aten.{op}", SDPA)] == []
    assert [op for op in sorted(ops) if f"aten::{op}" not in watched] == []


def test_the_kernel_watches_the_routes_the_grader_derived_and_derives_none(monkeypatch):
    """The grader derives each forbidden name's routes once for a run (``forbidden.watched``) and the kernel resolves
    them: it watches the same functions, methods and operators as when it derives them itself, and reads no code of
    ``torch.nn`` to do so."""
    names = sorted({n for rules in map(forbidden.forbids, ASSIGNMENTS) for rule in rules.values() for n in rule.names})
    given = {n: routes for watch in map(forbidden.watched, map(forbidden.forbids, ASSIGNMENTS))
             for routes_of in watch.values() for n, routes in routes_of.items()}
    assert len(names) > 20 and set(given) == set(names)
    derived = targets(names)

    def seen(found):
        c_functions, codes, modules, methods, operators = found
        return ({k: sorted(v[1]) for k, v in c_functions.items()}, {k: sorted(v) for k, v in codes.items()},
                sorted(modules), {k: sorted(v) for k, v in methods.items()},
                {k: sorted(v) for k, v in operators.items()})

    monkeypatch.setattr(forbidden_calls, "routes", lambda *a, **k: pytest.fail("the kernel derived routes"))
    assert seen(targets(names, given)) == seen(derived)
    assert len(derived[0]) + len(derived[4]) > 100, "hundreds of routes, not the names alone"


def test_the_fast_paths_of_a_forbidden_callables_callers_are_derived():
    """``nn.MultiheadAttention`` returns ``_native_multi_head_attention``'s result, ``nn.TransformerEncoderLayer``
    ``_transformer_encoder_layer_fwd``'s: each does its caller's whole work, the forbidden one's included."""
    from grader.kernel_side.routes import routes

    assert {"torch._native_multi_head_attention", "torch._transformer_encoder_layer_fwd"} <= set(routes(SDPA))
    assert "torch._transformer_encoder_layer_fwd" in routes("torch.nn.functional.layer_norm")
    assert not any(k.startswith(("torch.bmm", "torch.matmul", "torch.ops.aten.bmm")) for k in routes(SDPA))


# ------------------------------------------------------------------ honest code records nothing


def _answers(assignment: str):
    """The solution notebook, its answer cells in order, and answer cell -> the grade cell that judges it."""
    import nbformat

    from layout.nbmeta import grade_id, is_graded, is_solution

    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    order, judged, pending = [], {}, None
    for cell in nb.cells:
        if is_solution(cell) and cell.cell_type == "code":
            pending = grade_id(cell)
            order.append(pending)
        elif is_graded(cell) and pending:
            judged[pending], pending = grade_id(cell), None
    return nb, order, judged


def hidden_tests_record(assignment: str, cell: str, source: str) -> list[tuple[list, list]]:
    """(what was recorded, what was found off) for each hidden case of the grade cell that judges ``cell`` with
    ``source`` written there, the recorder on as in the kernel; a probe that raised is left out."""
    nb, order, judged = _answers(assignment)
    gid, solutions = judged[cell], solution_sources(assignment)
    user: dict = {"__name__": "__main__"}
    exec(compile(setup_source(nb), "<setup>", "exec"), user)  # noqa: S102 - the repository's own code
    for earlier in order[:order.index(cell)]:
        exec(compile(solutions[earlier], "<earlier>", "exec"), user)  # noqa: S102
    exec(compile(source, "<answer>", "exec"), user)  # noqa: S102
    out = []
    for case in hidden.cases(assignment, 20261206)[gid]:
        with recording(forbidden.forbids(assignment)[gid].names) as ran:
            try:
                probes.resolve(case.request.probe)(user, **copy.deepcopy(case.request.inputs))
            except Exception:  # noqa: BLE001 - a probe's error is the hidden tests' business, not this test's
                continue
        out.append((list(ran), list(ran.off)))
    return out


@pytest.mark.parametrize("assignment", [a for a in ASSIGNMENTS if forbidden.forbids(a)])
def test_the_solutions_and_the_banks_correct_alternatives_record_nothing(assignment, prepared):
    """Every hidden case of every exercise that forbids something, asked of the solution and of each correct
    alternative of the bank with the recorder on (as the kernel does): nothing recorded, nothing found off."""
    _, _, judged = _answers(assignment)
    rules = forbidden.forbids(assignment)
    answers = [*solution_sources(assignment).items(), *((c, s) for a, c, _, s in RIGHT_CASES if a == assignment)]
    for cell, source in [(c, s) for c, s in answers if judged.get(c) in rules]:
        got = hidden_tests_record(assignment, cell, source)
        assert got and all(g == ([], []) for g in got), (cell, source[:80], got)


def test_the_same_hidden_tests_record_a_forbidden_answer(prepared):
    """The check above can fail: the hidden tests of exercise 4.2 asked of the attacks record them."""
    for source in (HEAD + NATIVE, HEAD + FROM_C):
        got = hidden_tests_record(A04, "ex2_answer", source)
        assert got and all(g == ([SDPA], []) for g in got), got


# ------------------------------------------------------------------ what the kernel recorded counts


@pytest.mark.parametrize("mode", ["flag", "zero"])
def test_what_the_kernel_recorded_is_a_flag_and_with_forbidden_zero_a_0(mode, monkeypatch, tmp_path):
    verdict = Verdict(points=2.0, max_points=2.0, passed=3, total=3)
    run = SimpleNamespace(notebook=nbformat.v4.new_notebook(), problems=[], sandbox=[],
                          verdicts={"ex2_attention": verdict, "ex3_other": verdict},
                          ran={"ex2_attention": [SDPA], "ex3_other": []}, off={"ex3_other": ["profile"]})
    monkeypatch.setattr(grade, "grade_in_sandbox", lambda *args, **kwargs: run)
    monkeypatch.setattr(grade.sandbox, "give", lambda path: None)
    out = grade.run_one(A04, nbformat.writes(run.notebook), 1, tmp_path, 1.0, 1.0,
                        {"ex2_attention": 2.0, "ex3_other": 2.0}, {}, {}, mode)
    assert [f.split(":")[0] for f in out["flags"]] == ["ex2_attention", "ex3_other"]
    assert f"the kernel recorded calls to {SDPA}, which this exercise forbids" in out["flags"][0]
    assert "found its recorder of forbidden calls off (profile)" in out["flags"][1]
    points = {g: v.points for g, v in out["verdicts"].items()}
    assert points == ({"ex2_attention": 0.0, "ex3_other": 0.0} if mode == "zero" else
                      {"ex2_attention": 2.0, "ex3_other": 2.0})
    assert all("reported" not in p for p in out["problems"])  # a flag, never only a line in problems


# ------------------------------------------------------------------ a grading run

HONEST = ("import functools\nimport math\n\nimport torch\n\n\ndef attention(q, k, v, mask=None):\n"
          "    q = q / math.sqrt(getattr(q, 'shape')[-1])\n    scores = torch.matmul(q, getattr(k, 'mT'))\n"
          "    if mask is not None:\n        scores.masked_fill_(~mask, float('-inf'))\n"
          "    scores -= scores.amax(dim=-1, keepdim=True)\n    scores.exp_()\n"
          "    scores /= scores.sum(dim=-1, keepdim=True)\n"
          "    return list(map(functools.partial(torch.matmul, scores), [v]))[0]\n")
SILENCED = ("import sys\n\nimport torch\n\n\ndef attention(q, k, v, mask=None):\n    sys.setprofile(None)\n"
            "    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n    if mask is not None:\n"
            "        scores = scores.masked_fill(~mask, float('-inf'))\n    return scores.softmax(dim=-1) @ v\n")


@pytest.mark.slow
def test_grading_flags_and_zeroes_what_the_kernel_recorded(tmp_path):
    """The three answers that left no trace, and two honest classmates, graded in the sandbox with ``--forbidden
    zero``: each attack scores 0 on exercise 4.2 with the kernel's record among its flags; the honest ones keep
    everything and show no flag."""
    answers = {"native": HEAD + NATIVE, "from_c": HEAD + FROM_C, "silenced": SILENCED, "honest": HONEST}
    rows, _ = graded_class(A04, {**{s: {"ex2_answer": a} for s, a in answers.items()}, "solution": {}}, tmp_path,
                           "--timeout", "60", "--forbidden", "zero", timeout=1200)
    for student in ("honest", "solution"):
        assert rows[student]["flags"] == rows[student]["problems"] == "" and float(rows[student]["score"]) == 10
    for student in ("native", "from_c", "silenced"):
        row = rows[student]
        assert float(row["ex2_attention"]) == 0 and "ex2_attention scored 0" in row["problems"], row
    assert f"the kernel recorded calls to {SDPA}" in rows["native"]["flags"]
    assert f"the kernel recorded calls to {SDPA}" in rows["from_c"]["flags"]
    assert "found its recorder of forbidden calls off (profile)" in rows["silenced"]["flags"]
    assert "switches off the grader's recorder through sys.setprofile" in rows["silenced"]["flags"]
