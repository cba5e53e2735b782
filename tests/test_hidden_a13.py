"""Assignment 13's hidden tests where they do more than compare one value: the by-hand answer by three
computations, the sweep's calls (scored through their values, reported as counts), the sum of the attribution
through PyTorch's LayerNorm."""

from __future__ import annotations

import math

import pytest
import torch

from checks import scores_by_hand
from grader.hidden import a13 as hidden
from test_hidden_tests import verdict

from bank import EXPECTED

ASSIGNMENT = "13_looking_inside"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SWEEP = ("def restored_fractions(patched_metric, clean, corrupted, n_layers, n_heads):\n"
         "    base, gap = corrupted.mean(), clean.mean() - corrupted.mean()\n"
         "    r = torch.zeros(n_layers, n_heads, dtype=clean.dtype)\n"
         "    for layer in range(n_layers):\n        for head in range(n_heads):\n"
         "            first = patched_metric(layer, head)\n{again}"
         "            r[layer, head] = (first.mean() - base) / gap\n    return r\n")


def test_the_by_hand_answer_is_the_same_three_ways():
    """The hidden judge's sums over the exercise's table, the chapter's functions (the visible check) and the
    bank's numbers worked by hand agree."""
    judged = {"previous": EXPECTED[ASSIGNMENT]["ex1_answer"][0], "induction": EXPECTED[ASSIGNMENT]["ex1_answer"][1]}
    assert hidden._by_hand_judge(judged) is None
    assert all(math.isclose(scores_by_hand()[k], v, abs_tol=1e-12) for k, v in judged.items())
    assert hidden._by_hand_judge({**judged, "induction": judged["induction"] + 2e-3}) is not None


def test_a_head_asked_twice_is_reported_and_costs_nothing_when_its_first_answer_is_used(tmp_path):
    result = verdict(ASSIGNMENT, "ex4_answer", SWEEP.format(again="            patched_metric(layer, head)\n"),
                     tmp_path)
    assert not result.failures, result.failures
    assert any("once per head" in r for r in result.reported), result.reported


def test_a_head_asked_twice_costs_points_when_its_second_answer_is_used(tmp_path):
    again = "            first = patched_metric(layer, head)\n"
    result = verdict(ASSIGNMENT, "ex4_answer", SWEEP.format(again=again), tmp_path)
    assert result.failures and any("once per head" in r for r in result.reported)


def test_the_attribution_adds_up_through_layer_norm():
    """The sum judge's LayerNorm and the per-part reference agree on the grader's own inputs, and an attribution
    normed part by part is refused by both."""
    g = torch.Generator().manual_seed(0)
    parts, gamma, w_u, answer, other = hidden._dla_inputs(g, 5, 8, 11, torch.float64)
    args = (parts, gamma, w_u, answer, other, 0.3)
    right = hidden._dla_reference(*args)
    assert hidden._sum_judge(*args)({"out": right.numpy(), "args": []}) is None
    alone = torch.nn.functional.layer_norm(parts, (8,), gamma, None, 0.3) @ (w_u[answer] - w_u[other])
    assert hidden._sum_judge(*args)({"out": alone, "args": []}) is not None
