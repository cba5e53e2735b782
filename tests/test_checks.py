"""The exercise checks: they pass the solutions, reject every wrong answer in the bank, name known
mistakes, and never print the expected answer."""

from __future__ import annotations

import math
import re

import pytest
import torch

import checks
from checks import CheckFailed

from bank import CHECKS, EXPECTED, RIGHT_CASES, WRONG
from conftest import solution_sources

CASES = [(a, cell, *w) for a, cells in WRONG.items() for cell, wrongs in cells.items() for w in wrongs]


def run_answer(assignment: str, cell: str, source: str, name: str):
    """Execute an answer cell as the notebook would: after the setup and the (correct) earlier answers."""
    namespace = {"math": math, "torch": torch}
    for earlier, code in solution_sources(assignment).items():
        if earlier == cell:
            break
        exec(compile(code, f"<{earlier}>", "exec"), namespace)
    exec(compile(source, f"<{cell}>", "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize("assignment,cell", [(a, c) for a, cells in CHECKS.items() for c in cells])
def test_solution_passes(assignment, cell, capsys):
    check, name = CHECKS[assignment][cell]
    getattr(checks, check)(run_answer(assignment, cell, solution_sources(assignment)[cell], name))
    assert checks.PASSED in capsys.readouterr().out


@pytest.mark.parametrize("assignment,cell,mistake,source,hint", CASES, ids=[f"{c[1]}-{c[2]}" for c in CASES])
def test_wrong_answer_is_rejected(assignment, cell, mistake, source, hint, capsys):
    check, name = CHECKS[assignment][cell]
    with pytest.raises(CheckFailed) as err:
        getattr(checks, check)(run_answer(assignment, cell, source, name))
    message = str(err.value)
    assert message.startswith("✗"), message
    if hint:
        assert hint in message, f"feedback for '{mistake}' should name it:\n{message}"
    for value in EXPECTED[assignment].get(cell, []):
        for digits in (2, 3, 4):
            assert f"{value:.{digits}f}" not in message, f"feedback shows the expected answer:\n{message}"
    assert checks.PASSED not in capsys.readouterr().out


@pytest.mark.parametrize("assignment,cell,what,source", RIGHT_CASES,
                         ids=[f"{c[0][:2]}-{c[1]}-{c[2]}" for c in RIGHT_CASES])
def test_correct_alternative_passes(assignment, cell, what, source, capsys):
    """Another correct answer (another kind of number, another dtype, an input changed in place) passes too."""
    check, name = CHECKS[assignment][cell]
    getattr(checks, check)(run_answer(assignment, cell, source, name))
    assert checks.PASSED in capsys.readouterr().out


# (assignment, later answer cell, earlier answer cell it calls, how its feedback names the earlier exercise)
BUILDS_ON = [("04_queries_keys_values", "ex4_answer", "ex2_answer", "exercise 2"),
             ("05_multi_head_attention", "ex4_answer", "ex2_answer", "exercise 2"),
             ("05_multi_head_attention", "ex4_answer", "ex3_answer", "exercise 3"),
             ("07_masking", "ex5_answer", "ex4_answer", "exercise 4")]


@pytest.mark.parametrize("assignment,later,earlier,exercise", BUILDS_ON,
                         ids=[f"{b[0][:2]}-{b[1]}-{b[2]}" for b in BUILDS_ON])
def test_a_wrong_earlier_answer_is_named_by_the_later_check(assignment, later, earlier, exercise):
    """A later exercise that calls the student's earlier function sends them back to it when it is wrong."""
    check, name = CHECKS[assignment][later]
    sources = solution_sources(assignment)
    named = 0
    for mistake, wrong, _ in WRONG[assignment][earlier]:
        namespace = {"math": math, "torch": torch}
        for cell, code in sources.items():
            exec(compile(wrong if cell == earlier else code, f"<{cell}>", "exec"), namespace)
            if cell == later:
                break
        try:
            getattr(checks, check)(namespace[name])
        except CheckFailed as err:
            assert f"fix {exercise} first" in str(err), f"'{mistake}' in {earlier}:\n{err}"
            named += 1
    assert named, f"no wrong answer to {earlier} makes the check of {later} fail"


def test_flying_arrows_hand_value_passes():
    w1 = 1 / (1 + math.exp(-math.sqrt(2)))  # softmax of [1/sqrt2, -1/sqrt2]
    checks.check_flying_arrows([2 * w1 - 1, 1 - w1])
    checks.check_flying_arrows([0.6088, 0.1956])  # the numbers worked on paper, 4 decimals
    with pytest.raises(CheckFailed):
        checks.check_flying_arrows([0.6088 + 2e-3, 0.1956])  # outside the stated 1e-3 tolerance


def test_layers_come_in_order():
    with pytest.raises(CheckFailed, match="raised ZeroDivisionError"):
        checks.check_attention(lambda q, k, v, mask=None: 1 / 0)
    with pytest.raises(CheckFailed, match=r"expected shape \(batch=2, T_q=3, d_v=6\), got \(batch=2, T_q=3, d_v=5\)"):
        checks.check_attention(lambda q, k, v, mask=None: torch.zeros(2, 3, 5))
    with pytest.raises(CheckFailed, match="dimension 'd_v' should have size 6, got 5"):
        checks.check_attention(lambda q, k, v, mask=None: torch.zeros(2, 3, 5))
    with pytest.raises(CheckFailed, match="NaN or Inf"):
        checks.check_attention(lambda q, k, v, mask=None: torch.full((2, 3, 6), float("nan")))
    with pytest.raises(CheckFailed, match=r"36 of 36 values are wrong"):
        checks.check_attention(lambda q, k, v, mask=None: torch.full((2, 3, 6), 100.0))
    with pytest.raises(CheckFailed, match="expected a tensor"):
        checks.check_attention(lambda q, k, v, mask=None: "output")
    with pytest.raises(CheckFailed, match="returned a tuple"):
        checks.check_attention(lambda q, k, v, mask=None: (q, k))


def test_the_attention_checks_of_chapters_7_and_8_reject_a_tuple_and_name_the_case():
    with pytest.raises(CheckFailed, match=r"masked_attention \(a padding mask, no empty row\)\n  returned a tuple"):
        checks.check_masked_attention(lambda q, k, v, mask: (q, k))
    with pytest.raises(CheckFailed, match=r"cross_attention \(no mask\)\n  returned a tuple"):
        checks.check_cross_attention(lambda x, memory, w_q, w_k, w_v, src_mask=None: (x, memory))


def test_large_answers_report_position_and_size_of_the_error():
    def almost(q, k, v, mask=None):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out[1, 2, 3] += 0.5
        return out

    with pytest.raises(CheckFailed) as err:
        checks.check_attention(almost)
    assert "1 of 36 values are wrong" in str(err.value)
    assert re.search(r"first wrong value at index \(1, 2, 3\); largest error 0\.5\b", str(err.value))


def test_by_hand_answers_never_say_where_they_are_wrong():
    """A few values written by hand: the index of a wrong one would give it away, so the by-hand checks of
    chapters 7 and 12 say how many are wrong, not where (compare, for a small tensor, says where)."""
    mask = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]]  # the last entry is wrong
    running = {"m1": 2.0, "l1": 1.0 + math.exp(-1), "m2": 4.0, "l2": 1.0}  # l2 is wrong
    for check, answer in [(checks.check_causal_by_hand, mask), (checks.check_online_by_hand, running)]:
        with pytest.raises(CheckFailed, match="1 of .* values are wrong") as err:
            check(answer)
        assert "index" not in str(err.value)
    assert "wrong at index (1,)" in checks.compare(torch.zeros(2), torch.tensor([0.0, 1.0]), ("key",))


def test_a_named_shape_mistake_keeps_the_expected_axis_names_off_the_answer():
    """Exercise 13.2 averaged over the batch and the heads gives one value per query: the feedback names that mistake
    and does not call the query axis "heads"."""
    def per_query(pattern, half):
        queries = torch.arange(half + 1, 2 * half + 1)
        return pattern[:, :, queries, queries - half + 1].mean(dim=(0, 1))  # (half,): the queries, not the heads

    with pytest.raises(CheckFailed) as failed:
        checks.check_induction_score(per_query)
    message = str(failed.value)
    assert "expected shape (heads=3), got (4,)" in message and "one value per query" in message
    assert "heads=4" not in message and "dimension 'heads'" not in message
