"""Forbidden shortcuts: each exercise's "Do not use" line is its hidden tests' ``FORBIDS``; the grader
finds their uses statically (``grader/judging/forbidden.py``) and while a probe calls the student's function
(``grader/kernel_side/forbidden_calls.py``); a grading run names them in ``flags`` and, with
``--forbidden zero``, scores that exercise 0.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import sys
import time

import nbformat
import pytest
import torch

from grader.judging import forbidden
from grader.kernel_side.forbidden_calls import recording
from layout.nbmeta import grade_id, is_graded

from conftest import ASSIGNMENTS, graded_class, make_submission, notebook_path, solution_sources

A = "04_queries_keys_values"
SHORT = {"F": "torch.nn.functional", "nn": "torch.nn", "T": "transformer"}  # the exercise texts' short names
LINE = re.compile(r"^\*\*Do not use:\*\* (.*)\.$", re.M)
ITEM = re.compile(r"(?:the )?`([\w.]+)`(?: package)?")
# Ways a text forbids something in prose; outside the "Do not use" line none may remain.
STRAY = re.compile(r"\b(?:do|does|must|may|should)\s+not\s+(?:use|call|import)\b|\bdon't\s+(?:use|call|import)\b"
                   r"|\bnot\s+(?:the\s+)?`(?:torch|F|nn|T|transformer)\b[\w.]*`|\bwithout\s+(?:using|calling)\b", re.I)
SDPA = "torch.nn.functional.scaled_dot_product_attention"

# The answers of the finding: each scored 8/10 with empty flags before forbidden uses were read.
IMPORTED = """from transformer.attention import scaled_dot_product_attention


def attention(q, k, v, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
"""
ALIASED = """import torch.nn.functional as F

fast = F.scaled_dot_product_attention


def attention(q, k, v, mask=None):
    return fast(q, k, v, attn_mask=mask)
"""
ROT13 = """import codecs
import pkgutil

hidden_name = codecs.decode("genafsbezre.nggragvba:fpnyrq_qbg_cebqhpg_nggragvba", "rot13")
sdpa = pkgutil.resolve_name(hidden_name)


def attention(q, k, v, mask=None):
    return sdpa(q, k, v, mask)
"""


def expand(name: str) -> str:
    head, _, rest = name.partition(".")
    return f"{SHORT[head]}.{rest}" if rest and head in SHORT else name


def exercise_texts(assignment: str) -> dict[str, str]:
    """grade_id -> the markdown of its exercise (the ``exN_text`` cell before it, hints excluded)."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    ids = [grade_id(c) or "" for c in nb.cells]
    graded = [grade_id(c) for c in nb.cells if is_graded(c)]
    return {g: nb.cells[ids.index(g.split("_")[0] + "_text")].source for g in graded}


def listed(text: str) -> tuple[str, ...] | None:
    lines = LINE.findall(text)
    assert len(lines) <= 1, "one Do-not-use line per exercise"
    if not lines:
        return None
    items = lines[0].split(", ")
    assert all(ITEM.fullmatch(i) for i in items), f"every item a `name` or the `module` package: {lines[0]}"
    return tuple(expand(ITEM.fullmatch(i).group(1)) for i in items)


# ------------------------------------------------------------------ text <-> data


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_do_not_use_line_is_the_exercise_forbids(assignment):
    rules = forbidden.forbids(assignment)
    texts = exercise_texts(assignment)
    from_text = {g: names for g, t in texts.items() if (names := listed(t)) is not None}
    assert {g: f.names for g, f in rules.items()} == from_text
    solutions = solution_sources(assignment)
    for gid, rule in rules.items():
        defined = {n.id if isinstance(n, ast.Name) else n.name for n in ast.walk(ast.parse(solutions[gid.split("_")[0]
                   + "_answer"])) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Store)}
        assert rule.function in defined, f"{gid}: its answer defines {sorted(defined)}"
        for name in rule.names:  # every name is a real module or callable
            assert pkgutil.resolve_name(name) is not None


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_exercise_forbids_anything_outside_its_line(assignment):
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            prose = LINE.sub("", cell.source)
            assert not STRAY.search(prose), (grade_id(cell), STRAY.search(prose).group(0))


def test_the_prose_check_can_fail():
    """The wording the exercises used before their Do-not-use lines is caught."""
    old = ("Use only `torch` operations (`@`, `.transpose`), not\n`torch.nn.functional.scaled_dot_product_attention`",
           "Do not change `words`, and do not\nuse the package's `count_pairs`.", "Do not call `torch.tril`")
    assert all(STRAY.search(text) for text in old)


# ------------------------------------------------------------------ static reading


def found(answers: dict[str, str], added: list[str] = (), assignment: str = A) -> list[forbidden.Finding]:
    nb = make_submission(assignment, answers)
    at = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "ex1_answer")
    nb.cells[at + 1:at + 1] = [nbformat.v4.new_code_cell(src) for src in added]
    return forbidden.findings(nb, assignment)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solutions_use_nothing_forbidden(assignment):
    assert found({}, assignment=assignment) == []


@pytest.mark.parametrize("source", [
    IMPORTED, ALIASED,
    "from transformer.attention import scaled_dot_product_attention as s\nattention = s\n",
    "import transformer as T\nattention = T.scaled_dot_product_attention\n",
    "import torch.nn.functional\nattention = torch.nn.functional.scaled_dot_product_attention\n",
    "from torch.nn import functional as G\nattention = G.scaled_dot_product_attention\n",
    "g = torch.nn.functional\nh = g\nattention = h.scaled_dot_product_attention\n",
    "attention = getattr(torch.nn.functional, 'scaled_dot_product_attention')\n",
    "attention = torch._C._nn.scaled_dot_product_attention\n",
    "from torch.nn.functional import *\nattention = scaled_dot_product_attention\n",
    "from checks.a04 import scaled_dot_product_attention as attention\n",
    "!echo hi\nfrom transformer import attention as m\nattention = m.scaled_dot_product_attention\n",
])
def test_a_forbidden_use_is_named_with_its_exercise_and_function(source):
    uses = [f for f in found({"ex2_answer": source}) if f.kind == "uses"]
    assert {(f.grade_id, f.function) for f in uses} == {("ex2_attention", "attention")}
    assert uses[0].name in (SDPA, "transformer")
    assert uses[0].text.startswith("ex2_attention (attention): uses ") and "ex2_answer line" in uses[0].text


def test_what_an_exercise_does_not_forbid_is_not_flagged():
    """Exercise 4 may call anything; the public checks may be called anywhere."""
    assert found({"ex4_answer": "import torch.nn.functional as F\nself_attention = lambda x, a, b, c: "
                                "F.scaled_dot_product_attention(x @ a, x @ b, x @ c)\n",
                  "ex2_answer": solution_sources(A)["ex2_answer"] + "\ncheck_attention(attention)\n"}) == []


def test_an_added_cell_counts_against_every_exercise_that_forbids_it():
    got = found({}, added=["from torch.nn.functional import scaled_dot_product_attention as fast\n"])
    assert [(f.grade_id, f.name, f.where) for f in got] == [("ex2_attention", SDPA, "added cell 1 line 1")]


@pytest.mark.parametrize("entry", [None, [], "grade", 1])
def test_a_cell_whose_nbgrader_metadata_is_not_a_dict_is_read_as_one_the_student_added(entry):
    """Any JSON value may stand where nbgrader's metadata goes: the reader neither stops nor skips the cell."""
    nb = make_submission(A)
    cell = nbformat.v4.new_code_cell("from torch.nn.functional import scaled_dot_product_attention as fast\n")
    cell.metadata["nbgrader"] = entry
    nb.cells.insert(next(i for i, c in enumerate(nb.cells) if grade_id(c) == "ex1_answer") + 1, cell)
    got = forbidden.findings(nb, A)
    assert [(f.grade_id, f.name, f.where) for f in got] == [("ex2_attention", SDPA, "added cell 1 line 1")]


@pytest.mark.parametrize("source, through", [
    (ROT13, "pkgutil.resolve_name"),
    ("import importlib\nm = importlib.import_module('transformer')\n", "importlib.import_module"),
    ("m = __import__('transformer')\n", "__import__()"),
    ("import sys\nm = sys.modules['transformer']\n", "sys.modules"),
    ("name = 'scaled_dot_product_attention'\nf = getattr(torch.nn.functional, name)\n", "getattr with a computed name"),
    ("exec('import transformer')\n", "exec()"),
    ("f = eval('torch.nn.functional')\n", "eval()"),
    ("f = globals()['torch']\n", "globals()"),
    ("f = vars(torch)['nn']\n", "vars()"),
    ("import operator\nf = operator.attrgetter('nn.functional')(torch)\n", "operator.attrgetter"),
    ("import runpy\n", "runpy"), ("import pydoc\nf = pydoc.locate('transformer')\n", "pydoc.locate"),
    ("f = __builtins__\n", "__builtins__"), ("import codecs\n", "codecs"),
])
def test_a_dynamic_reach_is_named(source, through):
    got = [f for f in found({"ex2_answer": source}) if f.kind == "dynamic"]
    assert through in [f.name for f in got]
    assert all(f.grade_id == "ex2_attention" and "reaches an attribute by a computed name through " in f.text
               and f.text.endswith(", which the grader cannot check; read it") for f in got)


@pytest.mark.parametrize("source", [
    "x = " + "-" * 90_000 + "1\n", "x = " + "(" * 90_000, "x = 1" + " + 1" * 24_000 + "\n",
    "a" + ".b" * 45_000 + "\n", "x = 1\n" * 40_000, "x = '\x00'\0\n", "x = '\ud800'\n", "def f(:\n",
    "%%bash\necho hi\n",
])
def test_no_cell_stops_the_reader(source):
    found({})  # PyTorch's routes are derived once per process (seconds), before the timed reading
    start = time.perf_counter()
    got = found({"ex2_answer": source})
    assert time.perf_counter() - start < 10
    assert [f.kind for f in got] and all(f.grade_id == "ex2_attention" and f.text.endswith("read it") for f in got)


def test_long_attribute_chains_are_read_in_linear_time():
    """Every attribute of a chain is also read as a method (``.b``): its chain's root is found once for all."""
    found({})
    start = time.perf_counter()
    assert found({"ex2_answer": ("x = a" + ".b" * 900 + "\n") * 45}) == []
    assert time.perf_counter() - start < 10


def test_a_flood_of_cells_is_read_only_up_to_a_bound():
    found({})  # PyTorch's routes are derived once per process, before the timed reading
    start = time.perf_counter()
    got = found({}, added=["x = 1\n" * 15_000] * 40)
    assert time.perf_counter() - start < 30
    assert [f.where for f in got][-1] == "added cell 40" and "not read: over" in got[-1].text


def test_a_failure_of_the_reader_is_a_flag(monkeypatch):
    monkeypatch.setattr(forbidden, "names_used", lambda *args: 1 / 0)
    assert [f.text for f in found({"ex2_answer": ALIASED})] == [
        "the notebook: its code could not be read (ZeroDivisionError); read it"]


def test_magics_are_flagged_and_the_rest_is_read():
    got = found({"ex2_answer": "%time x = 1\nfiles = !ls\nif True:\n    !true\n" + ALIASED})
    assert [(f.kind, f.where) for f in got] == [("uses", "ex2_answer line 7"), ("unread", "ex2_answer line 1")]


# ------------------------------------------------------------------ the kernel side


def run(source: str, names=(SDPA, "transformer")) -> list[str]:
    """Define the answer as a kernel would, then record what runs while it is called."""
    user: dict = {}
    exec(compile("import math\nimport torch\n" + source, "<answer>", "exec"), user)  # noqa: S102 - the test's own code
    q, k, v = (torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
    with recording(names) as ran:
        user["attention"](q, k, v)
    return ran


@pytest.mark.parametrize("source, ran", [(ALIASED, [SDPA]), (IMPORTED, ["transformer"]), (ROT13, ["transformer"]),
                                         (solution_sources(A)["ex2_answer"], [])])
def test_the_kernel_records_which_forbidden_callables_ran(source, ran):
    assert run(source) == ran


def test_recording_puts_the_previous_profiler_back():
    calls = []

    def mine(frame, event, arg):
        calls.append(event)

    sys.setprofile(mine)
    try:
        assert run(ALIASED, names=(SDPA,)) == [SDPA]
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)
    assert sys.getprofile() is None


def test_classes_and_torch_functions_are_recorded():
    with recording(("torch.nn.RNN", "torch.tril", "torch.nn.functional.layer_norm", "torch.layer_norm")) as ran:
        torch.nn.RNN(2, 3)(torch.zeros(1, 2, 2))
        torch.nn.functional.layer_norm(torch.ones(2, 3), (3,))
    assert ran == ["torch.nn.RNN", "torch.nn.functional.layer_norm", "torch.layer_norm"]


# ------------------------------------------------------------------ a grading run


@pytest.mark.slow
def test_grading_names_forbidden_uses_and_scores_them_0(tmp_path):
    """Three answers of the finding and an honest classmate, graded with ``--forbidden zero``."""
    answers = {"imported": IMPORTED, "aliased": ALIASED, "rot13": ROT13}
    rows, out = graded_class(A, {**{s: {"ex2_answer": a} for s, a in answers.items()}, "honest": {}}, tmp_path,
                             "--timeout", "20", "--forbidden", "zero")
    assert rows["honest"]["flags"] == rows["honest"]["problems"] == "" and float(rows["honest"]["score"]) == 10
    for student in answers:
        row = rows[student]
        assert "ex2_attention (attention): " in row["flags"], row
        assert float(row["ex2_attention"]) == 0 and float(row["score"]) == 7, row
        assert "ex2_attention scored 0" in row["problems"], row
    assert "uses transformer.attention.scaled_dot_product_attention" in rows["imported"]["flags"]
    assert f"uses {SDPA}" in rows["aliased"]["flags"]
    assert "through pkgutil.resolve_name" in rows["rot13"]["flags"]
    page = (out / "feedback" / "aliased.html").read_text(encoding="utf-8")
    assert f"uses {SDPA}, which this exercise forbids" in page
