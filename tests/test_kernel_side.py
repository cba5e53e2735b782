"""The trust boundary in plain sight: what runs in the student's kernel is the folder grader/kernel_side, whole.

Its modules import only the standard library, numpy and torch (and each other; the kernel's launcher, ipykernel),
so nothing of the grader's
trusted side (hidden tests, references, the gradebook) is reachable from the kernel by design; the sandbox
binds only this folder of the grader (tests/test_sandbox.py). The trusted side reads what it writes as
hostile data (tests/test_grader_plain.py).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from grader.running import sandbox

KERNEL_SIDE = Path(sandbox.KERNEL_SIDE)
ALLOWED = set(sys.stdlib_module_names) | {"numpy", "torch", "__future__"}
STARTS_THE_KERNEL = {"launcher.py": {"ipykernel"}}  # the kernel's own start: ipykernel's launcher, without debugpy
FILES = sorted(KERNEL_SIDE.rglob("*.py"))


def imported(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports (relative imports excluded)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add((node.module or "").split(".")[0])
    return out


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(KERNEL_SIDE)) for p in FILES])
def test_kernel_side_imports_only_the_standard_library_numpy_and_torch(path):
    allowed = ALLOWED | STARTS_THE_KERNEL.get(path.name, set())
    assert imported(path) <= allowed, f"{path.name} imports {sorted(imported(path) - allowed)}"


def test_the_check_would_see_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import json\nfrom grader.hidden import a04\nimport checks\n")
    assert imported(bad) - ALLOWED == {"grader", "checks"}


def test_the_trusted_side_never_sends_source_in_string_literals():
    """The grader sends the kernel short calls into kernel_side's modules, not code of its own: no ``exec`` of
    a function's source (``inspect.getsource``) anywhere in the grader."""
    for path in Path(sandbox.__file__).parent.rglob("*.py"):
        text = path.read_text()
        assert "getsource" not in text, path
