"""The grader's reading of a shape or a list of ids written by hand (grader.hidden.judge): the forms a reply
carries it in, and replies in fixed words that never repeat a size the student wrote."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from checks.answers import as_ints
from grader.hidden.judge import shape, tensor, whole_numbers

WANT = (2, 2, 6, 4)


@pytest.mark.parametrize("written", [(2, 2, 6, 4), [2, 2, 6, 4], torch.Size([2, 2, 6, 4]), (2.0, 2, 6, np.int64(4)),
                                     torch.tensor([2, 2, 6, 4]), torch.tensor([2.0, 2.0, 6.0, 4.0]),
                                     np.array([2, 2, 6, 4])])
def test_every_form_of_the_right_shape_passes(written):
    assert whole_numbers(written) == [2, 2, 6, 4]
    assert shape(written, WANT) is None


@pytest.mark.parametrize("written", ["(2, 2, 6, 4)", (2, 2, 6.5, 4), (2, True, 6, 4), torch.zeros(2, 2), 4, None,
                                     (2, 2, float("nan"), 4)])
def test_what_is_not_a_shape_is_refused_without_echoing_it(written):
    assert whole_numbers(written) is None
    assert shape(written, WANT).startswith("expected a shape as a tuple of ints, e.g. (2, 3), got ")
    assert "6.5" not in shape(written, WANT) and "2, 2, 6" not in shape(written, WANT)


def test_a_wrong_shape_is_said_in_fixed_words():
    for written in [(2, 2, 77713, 4), [3, 2, 6, 5], (2, 2, 6, 4, 77713), torch.tensor([2, 2])]:
        assert shape(written, WANT) == "the shape is wrong (it has 4 dimensions)"


def test_the_visible_checks_read_shapes_alike_but_not_from_arrays():
    assert as_ints(torch.Size([3, 1])) == (3, 1) and as_ints([3.0, 1]) == (3, 1)
    assert as_ints(torch.tensor([3, 1])) is None and as_ints("3, 1") is None and as_ints([3, None]) is None


def test_a_tensor_of_the_wrong_shape_is_described_with_the_expected_shape_only():
    want = torch.zeros(2, 3)
    assert tensor(torch.zeros(2, 77713), want, dims=["batch", "seq"]) == (
        "expected shape (batch=2, seq=3), got another shape")
    assert tensor(torch.zeros(77713), torch.zeros(5)) == "expected shape (5), got another shape"
    assert tensor(torch.zeros(1, 1, 1), want) == "expected shape (2, 3), got another shape"
