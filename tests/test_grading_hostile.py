"""`make grade` against a hostile batch: every submission gets its honest score and a one-line reason,
the run goes on, nothing is lost, and tampering never raises a score."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT, make_submission, venv_env

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"
FULL, WRONG_EX2 = 10.0, 4.0  # a wrong attention loses exercise 2 (3 points) and exercise 4 (3), which calls it

NO_SCALE = """def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v
"""

# name -> (answers patched into a solved notebook, expected score, fragment of the reason or None)
CASES = {
    "honest": ({}, FULL, None),
    "wrong": ({"ex2_answer": NO_SCALE}, WRONG_EX2, None),
    # tampering: each is the `wrong` submission plus a patch; none may score more than `wrong`
    "patch_allclose": ({"ex2_answer": "import torch\ntorch.allclose = lambda *a, **k: True\n" + NO_SCALE},
                       WRONG_EX2, "assigns torch.allclose"),
    "patch_inside_function": ({"ex2_answer": NO_SCALE.replace(
        "    return", "    import torch\n    torch.allclose = lambda *a, **k: True\n    return")},
        WRONG_EX2, "assigns torch.allclose"),
    "patch_through_alias": ({"ex2_answer": "import torch as t\nf = t\nf.allclose = lambda *a, **k: True\n"
                                           "g = t.testing\ng.assert_close = lambda *a, **k: None\n" + NO_SCALE},
                            WRONG_EX2, "tried to replace torch.allclose"),
    "patch_numpy": ({"ex2_answer": "import numpy as np\nnp.allclose = lambda *a, **k: True\n" + NO_SCALE},
                    WRONG_EX2, "assigns np.allclose"),
    "patch_checks": ({"ex2_answer": "check_attention = lambda f: None\n" + NO_SCALE}, WRONG_EX2,
                     "rebinds check_attention"),
    "patch_check_module": ({"ex2_answer": "import transformer.checks as c\nc.check_attention = lambda f: None\n"
                                          "c.ch04.check_attention = lambda f: None\n" + NO_SCALE},
                           WRONG_EX2, "imports transformer.checks"),
    "patch_exceptions": ({"ex2_answer": "getattr(__import__('IPython'), 'get_ipython')().set_custom_exc("
                                        "(BaseException,), lambda *a, **k: None)\n" + NO_SCALE},
                         WRONG_EX2, "calls __import__()"),
    "patch_tensor_eq": ({"ex2_answer": "import torch\nT = torch.Tensor\nsetattr(T, 'allclose', lambda *a, **k: True)\n"
                                       + NO_SCALE}, WRONG_EX2, "calls setattr()"),
    "shadow_builtin": ({"ex2_answer": "abs = lambda x: x * 0\n" + NO_SCALE}, WRONG_EX2, "shadowed the builtin abs"),
    # crashes and floods
    "loops": ({"ex3_answer": "import time\ndef causal_mask(seq_len):\n    while True:\n        time.sleep(0.05)"},
              FULL - 2, "ex3_causal_mask ran longer than"),
    "exits": ({"ex3_answer": "import os\nos._exit(3)"}, FULL - 2, "ex3_answer stopped the kernel"),
    "raises_at_top": ({"ex1_answer": "1 / 0"}, FULL - 2, "ex1_answer raised ZeroDivisionError"),
    "floods": ({"ex1_answer": "flying = [0.6088, 0.1956]\nfor _ in range(50000):\n    print('spam')"}, FULL,
               "printed more than"),
}


def write_edited(path, how):
    nb = make_submission(A, {"ex2_answer": NO_SCALE})
    cells = nb.cells
    idx = next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "ex2_attention")
    if how == "edited":
        cells[idx].source = "pass"
    elif how == "deleted":
        del cells[idx]
    elif how == "retagged":
        cells[idx].metadata["nbgrader"] = {"grade": False, "grade_id": "ex2_attention", "locked": False,
                                           "schema_version": 3, "solution": True, "task": False}
        cells[idx].source = "pass"
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("hostile")
    out = tmp_path_factory.mktemp("grading")
    for name, (answers, _, _) in CASES.items():
        nbformat.write(make_submission(A, answers), subs / f"{name}.ipynb")
    for how in ("edited", "deleted", "retagged"):
        write_edited(subs / f"test_{how}.ipynb", how)
    (subs / "empty.ipynb").write_bytes(b"")
    (subs / "not_json.ipynb").write_text("{ this is not json", encoding="utf-8")
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "flying = [0.6088, 0.1956]", "language": "python", "outputs": [],
         "metadata": {"nbgrader": {"grade": False, "grade_id": "ex1_answer", "locked": False, "schema_version": 3,
                                   "solution": True, "task": False}}}]}]}
    (subs / "old_format.ipynb").write_text(json.dumps(v3), encoding="utf-8")
    nbformat.write(make_submission(A), subs / "Zoë O'Brien (2).ipynb")
    nbformat.write(make_submission(A), subs / "dup.ipynb")
    nbformat.write(make_submission(A, {"ex2_answer": NO_SCALE}), subs / f"dup_{A}.ipynb")
    files = sorted(p.name for p in subs.iterdir())
    proc = subprocess.run([sys.executable, "tools/grade.py", A, str(subs), "--out", str(out), "--timeout", "20"],
                          cwd=ROOT, env=venv_env(), capture_output=True, text=True, timeout=1200)
    with open(out / A / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    return proc, rows, out / A, files


def test_no_submission_is_lost(graded):
    proc, rows, _, files = graded
    assert sorted(r["file"] for r in rows.values()) == files, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("name", CASES)
def test_each_case_gets_its_honest_score_and_reason(graded, name):
    _, rows, out, _ = graded
    _, score, reason = CASES[name]
    row = rows[name]
    assert float(row["score"]) == score, row
    if reason is None:
        assert row["problems"] == "", row["problems"]
    else:
        assert reason in row["problems"], row["problems"]
        page = (out / "feedback" / f"{name}.html").read_text(encoding="utf-8")
        assert reason in page.replace("&#x27;", "'").replace("&quot;", '"'), "the feedback gives the same reason"


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith(("patch", "shadow"))])
def test_tampering_never_raises_a_score(graded, name):
    _, rows, _, _ = graded
    assert float(rows[name]["score"]) <= float(rows["wrong"]["score"])


@pytest.mark.parametrize("how", ["edited", "deleted", "retagged"])
def test_changed_test_cells_are_put_back(graded, how):
    _, rows, _, _ = graded
    row = rows[f"test_{how}"]
    assert float(row["score"]) == WRONG_EX2, row
    assert f"test cell ex2_attention was {how.replace('retagged', 're-tagged')}" in row["problems"]


@pytest.mark.parametrize("name,reason", [("empty", "empty file"), ("not_json", "not valid JSON"),
                                         ("old_format", "old notebook format (nbformat 3)")])
def test_bad_files(graded, name, reason):
    _, rows, out, _ = graded
    assert reason in rows[name]["problems"]
    assert (out / "feedback" / f"{name}.html").exists()


def test_old_format_is_converted_and_graded(graded):
    _, rows, _, _ = graded
    assert float(rows["old_format"]["ex1_flying_arrows"]) == 2.0  # its one answer was read and graded


def test_odd_file_names(graded):
    _, rows, out, _ = graded
    assert rows["Zoe_O_Brien_2"]["file"] == "Zoë O'Brien (2).ipynb"
    assert float(rows["Zoe_O_Brien_2"]["score"]) == FULL
    assert (out / "feedback" / "Zoe_O_Brien_2.html").exists()


def test_two_files_of_one_student_are_both_graded_and_flagged(graded):
    _, rows, _, _ = graded
    assert float(rows["dup"]["score"]) == FULL and float(rows["dup_2"]["score"]) == WRONG_EX2
    for sid in ("dup", "dup_2"):
        assert "2 files for dup" in rows[sid]["problems"]


def test_summary_and_exit_status(graded):
    proc, rows, out, _ = graded
    assert proc.returncode == 1
    assert "need your attention" in proc.stdout
    assert "pass rate per exercise" in proc.stdout
    png = (out / "summary.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
