"""The online-softmax explorer (chapter 12): after every tile its running maximum and sum are those of the keys
read so far, computed in one pass by PyTorch; its weights are their softmax; bad input is refused by name."""

from __future__ import annotations

import math

import pytest
import torch

from transformer.viz.online_softmax import OnlineSoftmaxExplorer, online_steps

ROW = torch.tensor([3.0, 1.0, 2.0, 5.0, -1.0, 4.0, 6.5, 0.5, 2.0])


@pytest.mark.parametrize("block", [1, 2, 4, 8])
def test_every_step_holds_the_maximum_and_sum_of_the_keys_read(block):
    for read in range(1, len(ROW) + 1):
        steps = online_steps(ROW.double(), block, read)
        assert len(steps) == math.ceil(read / block)
        for s in steps:
            seen = ROW[: s["keys"][1]].double()
            assert s["m"] == float(seen.max())
            assert math.isclose(s["l"], float(torch.exp(seen - seen.max()).sum()), rel_tol=1e-12)
        grew = [i for i in range(1, len(steps)) if steps[i]["m"] > steps[i - 1]["m"]]
        assert [i for i in range(1, len(steps)) if steps[i]["rescale"] < 1] == grew


def test_the_worked_example_of_the_chapter():
    steps = online_steps(torch.tensor([3.0, 1.0, 2.0, 5.0], dtype=torch.float64), 2, 4)
    assert [s["m"] for s in steps] == [3.0, 5.0]
    assert [round(s["l"], 4) for s in steps] == [1.1353, 1.2034]
    assert math.isclose(steps[1]["rescale"], math.exp(-2))


def test_the_weights_are_the_softmax_of_the_keys_read_and_the_view_says_so():
    explorer = OnlineSoftmaxExplorer(ROW, block=2)
    for block in OnlineSoftmaxExplorer.BLOCKS:
        explorer.block.value = block
        for read in (1, 4, len(ROW)):
            explorer.read.value = read
            torch.testing.assert_close(explorer.weights, ROW[:read].double().softmax(0), rtol=1e-12, atol=1e-12)
            assert f"{explorer.steps[-1]['l']:.4f}" in explorer.view.value
            assert explorer.view.value.count("not read yet") == len(ROW) - read
    assert "the softmax weights of the whole row" in explorer.view.value
    explorer.block.value, explorer.read.value = 4, 8  # tile 2 (keys 4..7) holds 6.5: the maximum grows
    assert "(the maximum grew)" in explorer.view.value


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="scores: expected between 2 and 32 keys"):
        OnlineSoftmaxExplorer(torch.zeros(40))
    with pytest.raises(ValueError, match=r"block: expected one of \[1, 2, 4, 8\], got 3"):
        OnlineSoftmaxExplorer(ROW, block=3)
    with pytest.raises(ValueError, match="scores"):
        OnlineSoftmaxExplorer(torch.zeros(3, 3))
