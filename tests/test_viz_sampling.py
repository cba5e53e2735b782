"""The sampling explorer (chapter 11) on a known distribution: what the filters keep, the renormalised
probabilities, and the samples it asks for with the controls' settings."""

from __future__ import annotations

import math

import pytest
import torch

from transformer.viz.sampling import SamplingExplorer

WORDS = ["a", "b", "c", "d", "e"]
LOGITS = torch.log(torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05]))


def explorer(calls=None):
    def sample(prompt, **settings):
        if calls is not None:
            calls.append((prompt, settings))
        return ["a b", "c d"]

    return SamplingExplorer(["x", "y"], lambda prompt: LOGITS, sample, WORDS, lambda s: s == "a b")


def test_the_controls_filter_and_renormalise():
    ex = explorer()
    torch.testing.assert_close(ex.probs, torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05]))
    ex.top_k.value = 2  # keeps a and b: 0.4 / 0.7 and 0.3 / 0.7
    torch.testing.assert_close(ex.probs, torch.tensor([4 / 7, 3 / 7, 0, 0, 0]))
    assert "2 of 5 words kept" in ex.view.value
    ex.top_k.value, ex.top_p.value = 0, 0.8  # 0.4 + 0.3 < 0.8 <= 0.4 + 0.3 + 0.15: three words
    torch.testing.assert_close(ex.probs, torch.tensor([0.4, 0.3, 0.15, 0, 0]) / 0.85)
    ex.top_p.value, ex.temperature.value = 1.0, 2.0  # p ** (1/2), renormalised
    root = torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05]).sqrt()
    torch.testing.assert_close(ex.probs, root / root.sum())


def test_samples_are_asked_with_the_settings_and_marked():
    calls = []
    ex = explorer(calls)
    ex.prompt.value, ex.top_k.value = "y", 3
    assert calls[-1] == ("y", {"temperature": 1.0, "top_k": 3, "top_p": None})
    assert "✓ a b" in ex.view.value and "✗ c d" in ex.view.value
    assert math.isclose(sum(float(p) for p in ex.probs), 1.0, abs_tol=1e-6)


def test_the_explorer_needs_a_prompt():
    with pytest.raises(ValueError, match="prompts: expected at least one prompt, got none"):
        SamplingExplorer([], lambda p: LOGITS, lambda p, **s: [], WORDS, lambda s: True)
