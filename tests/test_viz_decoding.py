"""The decoding explorer and the temperature figure (chapter 9), tested through their Python API."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from transformer.viz.decoding import DecodingExplorer, plot_temperatures

TOKENS = ["<pad>", "<sos>", "<eos>", "a", "b", "c"]
TABLE = torch.tensor([
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],    # after <pad>
    [-2.0, -2.0, 0.0, 3.0, 1.0, 0.0],  # after <sos>: mostly "a"
    [-2.0, -2.0, 5.0, 0.0, 0.0, 0.0],  # after <eos>: <eos>
    [-2.0, -2.0, 0.0, 0.0, 3.0, 2.0],  # after a: b, or c
    [-2.0, -2.0, 4.0, 0.0, 0.0, 0.0],  # after b: <eos>
    [-2.0, -2.0, 4.0, 0.0, 0.0, 0.0],  # after c: <eos>
])


def bigram(ids):
    return TABLE[ids]  # (batch, T) -> (batch, T, vocab)


def explorer(**kw):
    return DecodingExplorer(TOKENS, bigram, [1], eos_id=2, max_new_tokens=6, **kw)


def test_starts_at_temperature_one_with_the_models_distribution():
    ex = explorer()
    z = TABLE[1].tolist()
    expected = torch.tensor([math.exp(v) for v in z]) / sum(math.exp(v) for v in z)  # softmax by hand
    torch.testing.assert_close(ex.probs, expected, atol=1e-6, rtol=0)
    assert ex.greedy.tolist() == [1, 3, 4, 2]  # <sos> a b <eos>
    assert f"{expected[3]:.2f}" in ex.view.value
    assert "&lt;sos&gt;" in ex.view.value and "<sos>" not in ex.view.value.replace("&lt;sos&gt;", "")
    assert "greedy: &lt;sos&gt; a b &lt;eos&gt;" in ex.view.value


def test_low_temperature_is_greedy_and_high_temperature_is_uniform():
    ex = explorer()
    ex.temperature.value = 0.05
    assert ex.probs.max().item() > 0.999 and int(ex.probs.argmax()) == 3
    for seed in range(5):
        ex.seed.value = seed
        assert torch.equal(ex.sample, ex.greedy)
    ex.temperature.value = 10.0
    torch.testing.assert_close(ex.probs, torch.full((6,), 1 / 6), atol=0.06, rtol=0)
    assert ex.probs.max().item() < 0.25


def test_the_seed_fixes_the_sample_and_the_view_follows():
    ex = explorer()
    ex.temperature.value = 2.0
    samples = {}
    for seed in range(8):
        ex.seed.value = seed
        samples[seed] = ex.sample.tolist()
        assert ex.sample.tolist() == samples[seed]  # the same seed draws the same sentence
        assert f"sampled (seed {seed}): <b>{ex.text(samples[seed]).replace('<', '&lt;').replace('>', '&gt;')}</b>" \
            in ex.view.value
    assert len({tuple(s) for s in samples.values()}) > 1  # other seeds, other sentences
    assert all(s[0] == 1 and len(s) <= 7 for s in samples.values())  # the prefix, then at most 6 new tokens
    # the sample follows the tempered softmax: generate's draw, reproduced with the same generator by hand
    g = torch.Generator().manual_seed(3)
    first = torch.multinomial((TABLE[1] / 2.0).softmax(-1)[None], 1, generator=g).item()
    assert samples[3][1] == first


def test_top_limits_the_bars_to_the_most_probable_tokens():
    ex = explorer(top=2)
    assert ex.view.value.count("<tr>") == 2
    assert ">a<" in ex.view.value and ">b<" in ex.view.value and ">c<" not in ex.view.value
    ex.temperature.value = 1.5  # still sorted, most probable first
    assert ex.view.value.index(">a<") < ex.view.value.index(">b<")


def test_explorer_rejects_mismatched_input():
    with pytest.raises(ValueError, match=r"logits_fn: expected logits of shape \(1, T, vocab=5\)"):
        DecodingExplorer(TOKENS[:5], bigram, [1])
    with pytest.raises(ValueError, match="prefix: expected at least one token id, got none"):
        DecodingExplorer(TOKENS, bigram, [])


def test_plot_temperatures():
    axes = plot_temperatures(TABLE[3], TOKENS, [0.5, 1.0, 4.0], title="after a")
    assert [ax.get_title() for ax in axes] == ["τ = 0.5", "τ = 1", "τ = 4"]
    heights = [[bar.get_height() for bar in ax.patches] for ax in axes]
    torch.testing.assert_close(torch.tensor(heights[1], dtype=torch.float32), TABLE[3].softmax(-1), atol=1e-6, rtol=0)
    assert max(heights[0]) > max(heights[1]) > max(heights[2])  # colder is sharper
    with pytest.raises(ValueError, match=r"logits: expected shape \(vocab=6,\), got \(2, 6\)"):
        plot_temperatures(TABLE[:2], TOKENS, [1.0])
    with pytest.raises(ValueError, match="temperatures: expected at least one temperature"):
        plot_temperatures(TABLE[3], TOKENS, [])
