"""The explorers of chapters 2 and 3, tested through their widgets: set a value, check the state and the view
against hand computations (the RMS argument, the sinusoid formula, rotations in the plane)."""

from __future__ import annotations

import math

import pytest
import torch

from transformer.viz.positional import EmbeddingScaleExplorer, RopeExplorer, SinusoidalExplorer, value_bars

# ----------------------------------------------------------- chapter 2: the scale of the embedding


def test_embedding_explorer_starts_with_pytorchs_default_scale():
    ex = EmbeddingScaleExplorer(vocab_size=2000, d_models=(64, 256), n_tokens=16)
    d = ex.d_model.value
    s = ex.state
    # std 1, no scaling: rows of RMS ~1, scores of RMS ~sqrt(d) (the lecture's 1000 q^2 with q = 1)
    assert float(s["rms_embedded"]) == pytest.approx(1.0, rel=0.1)
    assert float(s["rms_logits"]) == pytest.approx(math.sqrt(d), rel=0.1)
    assert float(s["max_prob"]) > 0.5  # a saturated softmax
    assert f"{float(s['rms_logits']):.3f}" in ex.view.value


def test_embedding_explorer_tied_and_scaled_gives_rms_one_twice():
    ex = EmbeddingScaleExplorer(vocab_size=2000, d_models=(64, 256, 1024), n_tokens=16)
    for d in (64, 256, 1024):
        ex.d_model.value = d
        ex.std.value = 1 / math.sqrt(d)
        ex.scale.value = True
        s = ex.state
        assert float(s["rms_embedded"]) == pytest.approx(1.0, rel=0.1), d
        assert float(s["rms_logits"]) == pytest.approx(1.0, rel=0.1), d
        ex.scale.value = False
        assert float(ex.state["rms_embedded"]) == pytest.approx(1 / math.sqrt(d), rel=0.1), d


def test_embedding_explorer_shapes_and_hidden_rms():
    ex = EmbeddingScaleExplorer(vocab_size=300, d_models=(32,), n_tokens=5)
    assert ex.weight.shape == (300, 32) and ex.embedded.shape == (5, 32) and ex.logits.shape == (5, 300)
    h = ex.hidden
    torch.testing.assert_close(h.pow(2).mean(-1).sqrt(), torch.ones(5))
    before = ex.view.value
    ex.std.value = 0.01
    assert ex.view.value != before and "0.0100" in ex.view.value


def test_embedding_explorer_rejects_bad_sizes():
    with pytest.raises(ValueError, match="vocab_size: expected a positive int, got 0"):
        EmbeddingScaleExplorer(vocab_size=0)


# ----------------------------------------------------------- chapter 3: the sinusoidal clock


def _formula(pos: int, j: int, d: int, base: float = 10000.0) -> float:
    angle = pos / base ** (2 * (j // 2) / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


def test_sinusoidal_explorer_vector_and_curve_follow_the_formula():
    ex = SinusoidalExplorer(d_model=16, n_positions=64, position=5, dimension=3)
    assert ex.vector.shape == (16,) and ex.curve.shape == (64,)
    for j in range(16):
        assert ex.vector[j].item() == pytest.approx(_formula(5, j, 16), abs=1e-6)
    for pos in (0, 7, 63):
        assert ex.curve[pos].item() == pytest.approx(_formula(pos, 3, 16), abs=1e-6)
    ex.position.value = 40
    assert ex.vector[0].item() == pytest.approx(math.sin(40), abs=1e-6)
    assert f"at position 40 it is {_formula(40, 3, 16):.3f}" in ex.view.value


def test_sinusoidal_explorer_base_and_wavelength():
    ex = SinusoidalExplorer(d_model=16, n_positions=64)
    ex.dimension.value = 15  # pair i = 7
    assert ex.wavelength == pytest.approx(2 * math.pi * 10000 ** (14 / 16))
    ex.base.value = 10.0
    assert ex.wavelength == pytest.approx(2 * math.pi * 10 ** (14 / 16))  # about 47 positions
    assert ex.curve[30].item() == pytest.approx(_formula(30, 15, 16, base=10.0), abs=1e-6)
    assert "repeats every 47.1 positions" in ex.view.value
    ex.dimension.value = 0
    assert ex.wavelength == pytest.approx(2 * math.pi)  # pair 0 does not depend on the base


def test_sinusoidal_explorer_view_lists_every_dimension():
    ex = SinusoidalExplorer(d_model=6, n_positions=10, position=0)
    for j in range(6):
        assert f"dim {j}" in ex.view.value
    assert "<svg" in ex.view.value and "<polyline" in ex.view.value


def test_value_bars_signs_and_escaping():
    bars = value_bars(["<a>", "b", "c"], torch.tensor([0.5, -0.25, -0.0001]))
    assert "&lt;a&gt;" in bars
    assert "0.500" in bars and "-0.250" in bars
    assert "-0.000" not in bars  # a tiny negative number is shown as 0.000


# ----------------------------------------------------------- chapter 3: RoPE keeps the distance


def _rot(angle: float) -> torch.Tensor:
    return torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]], dtype=torch.float64)


def test_rope_explorer_score_by_hand_in_two_dimensions():
    q, k = torch.tensor([1.0, 0.5]), torch.tensor([0.8, -0.3])
    ex = RopeExplorer(q, k, max_position=20, t=3, i=1)  # d = 2: omega = 1 rad per position
    expected = (_rot(3) @ q.double()) @ (_rot(1) @ k.double())
    assert ex.score.item() == pytest.approx(expected.item(), abs=1e-6)
    assert ex.score.item() == pytest.approx((q.double() @ _rot(-2) @ k.double()).item(), abs=1e-6)  # R_3^T R_1


def test_rope_explorer_moving_both_keeps_the_score():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    ex = RopeExplorer(q, k, max_position=20, t=5, i=2)
    start = ex.score.item()
    for shift in (1, 7, 20):
        ex.shift.value = shift
        assert ex.positions == (5 + shift, 2 + shift)
        assert ex.score.item() == pytest.approx(start, abs=1e-5)
        assert f"{start:.4f}" in ex.view.value
    ex.t.value = 6  # now the distance changes, and so does the score
    assert abs(ex.score.item() - start) > 1e-3


def test_rope_explorer_relative_angles_and_norms():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    ex = RopeExplorer(q, k, max_position=20, t=9, i=4)
    omegas = torch.tensor([10000 ** (-2 * j / 8) for j in range(4)], dtype=torch.float64)
    torch.testing.assert_close(ex.relative_angles, 5 * omegas)
    rq, rk = ex.rotated
    assert rq.norm().item() == pytest.approx(q.norm().item(), rel=1e-5)
    assert rk.norm().item() == pytest.approx(k.norm().item(), rel=1e-5)
    assert "distance t - i = 5" in ex.view.value


def test_rope_explorer_rejects_bad_vectors():
    with pytest.raises(ValueError, match=r"q: expected one vector of even size \(d,\), got shape \(3\)"):
        RopeExplorer(torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match=r"k: expected the shape of q \(4\), got \(6\)"):
        RopeExplorer(torch.zeros(4), torch.zeros(6))
    with pytest.raises(TypeError, match="q: expected a torch.Tensor, got list"):
        RopeExplorer([1.0, 0.0], torch.zeros(2))
