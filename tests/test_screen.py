"""The static screen of answer cells: it removes what would change the tests' tools, and never touches
an honest answer."""

from __future__ import annotations

import sys

import nbformat
import pytest

from conftest import ASSIGNMENTS, ROOT, notebook_path, setup_source

sys.path.insert(0, str(ROOT / "tools"))
from screen import module_aliases, screen_cell  # noqa: E402

SETUP = "import math\n\nimport torch\n\nfrom transformer.checks import check_attention\n"
PROTECTED = {"math", "torch", "check_attention"}


def screened(src: str):
    return screen_cell(src, "cell", module_aliases([SETUP, src]), PROTECTED)


@pytest.mark.parametrize("src,reason", [
    ("torch.allclose = lambda *a, **k: True", "assigns torch.allclose"),
    ("import numpy as np\nnp.testing.assert_allclose = print", "assigns np.testing.assert_allclose"),
    ("torch.Tensor.__eq__ = lambda a, b: True", "assigns torch.Tensor.__eq__"),
    ("del torch.equal", "assigns torch.equal"),
    ("check_attention = lambda f: None", "rebinds check_attention"),
    ("def check_attention(f):\n    pass", "redefines check_attention"),
    ("import numpy as torch", "rebinds torch"),
    ("setattr(torch, 'allclose', print)", "calls setattr()"),
    ("exec('torch.allclose = print')", "calls exec()"),
    ("get_ipython().set_custom_exc((Exception,), print)", "calls get_ipython()"),
    ("import builtins\nbuiltins.abs = print", "imports builtins"),
    ("import sys\nsys.modules['torch'] = None", "imports sys"),
    ("torch.__dict__['allclose'] = print", "uses __dict__"),
    ("import transformer.checks as c", "imports transformer.checks"),
    ("def f(x):\n    if x:\n        torch.allclose = print\n    return x", "assigns torch.allclose"),
])
def test_tampering_is_removed_and_reported(src, reason):
    new, findings = screened(src)
    assert any(reason in f.reason for f in findings), findings
    assert "removed by the grader" in new
    compile(new, "<screened>", "exec")  # what is left still runs


def test_only_the_offending_statement_goes():
    src = "def attention(q, k, v):\n    torch.allclose = print\n    return q + k + v\nx = 1"
    new, _ = screened(src)
    assert new.splitlines() == ["def attention(q, k, v):", "    pass  # removed by the grader: assigns torch.allclose",
                                "    return q + k + v", "x = 1"]


@pytest.mark.parametrize("src", [
    "import torch\nimport torch.nn.functional as F\nout = F.softmax(torch.zeros(3), dim=0)",
    "class Head(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = torch.nn.Linear(2, 2)",
    "x = torch.zeros(3)\nx[0] = 1.0\nx += 1",
    "flying = [math.exp(1), 0.5]",
])
def test_honest_code_is_untouched(src):
    assert screened(src) == (src, [])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_solution_is_flagged(assignment):
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup = setup_source(nb)
    aliases, protected = module_aliases([c.source for c in code]), module_aliases([setup])
    for cell in code:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            assert screen_cell(cell.source, "x", aliases, protected)[1] == [], cell.metadata["nbgrader"]["grade_id"]
