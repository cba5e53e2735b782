"""Positional encodings (chapter 3): the lecture's table, the shift property, RoPE, relative bias, NoPE."""

import math

import pytest
import torch

from transformer import (
    DecoderOnly,
    EncoderDecoder,
    EncoderOnly,
    LearnedPositionalEncoding,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    TransformerConfig,
    apply_rope,
    rotation_matrix,
    shift_matrix,
    sinusoidal_encoding,
)
from transformer.positional import POSITIONAL_SCHEMES, ActsOn, positional_module


def randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------- sinusoidal


def test_lecture_table_d5():
    # The lecture prints the table with rows = dimensions and columns = positions 0..4.
    lecture = torch.tensor([
        [0.000, 0.841, 0.909, 0.141, -0.757],  # Dim1: sin(pos)
        [1.000, 0.540, -0.416, -0.990, -0.654],  # Dim2: cos(pos)
        [0.000, 0.025, 0.050, 0.075, 0.100],  # Dim3: sin(pos / 10000^(2/5))
        [1.000, 1.000, 0.999, 0.997, 0.995],  # Dim4: cos(pos / 10000^(2/5))
        [0.000, 0.001, 0.001, 0.002, 0.003],  # Dim5: sin(pos / 10000^(4/5))
    ])
    table = sinusoidal_encoding(5, 5)
    assert table.shape == (5, 5)  # (positions, d_model)
    torch.testing.assert_close(table.T, lecture, atol=1e-3, rtol=0)


def test_sinusoidal_formula_by_hand():
    # P[pos, 2i] = sin(pos / 10000^(2i/d)), P[pos, 2i+1] = cos(pos / 10000^(2i/d)), here d = 8.
    table = sinusoidal_encoding(50, 8)
    for pos in (0, 1, 7, 49):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


@pytest.mark.parametrize("d", [2, 4, 8, 16])
@pytest.mark.parametrize("c", [1, 3, 10, -4])
def test_shift_property(d, c):
    table = sinusoidal_encoding(64, d).double()
    m = shift_matrix(c, d).double()
    assert m.shape == (d, d)
    for t in (4, 5, 17, 40):  # t + c stays in range for every c above
        torch.testing.assert_close(m @ table[t], table[t + c], atol=1e-5, rtol=0)


@pytest.mark.parametrize("d", [2, 6, 16])
def test_shift_matrix_is_orthogonal(d):
    m = shift_matrix(7, d).double()
    torch.testing.assert_close(m.T @ m, torch.eye(d, dtype=torch.float64), atol=1e-6, rtol=0)
    x = randn(d, seed=1, dtype=torch.float64)
    assert torch.linalg.norm(m @ x).item() == pytest.approx(torch.linalg.norm(x).item(), rel=1e-6)


def test_shift_matrix_by_hand_d2():
    # d = 2: one pair with omega = 1; shifting by c rotates (sin t, cos t) to (sin(t + c), cos(t + c)).
    c = 2
    expected = torch.tensor([[math.cos(c), math.sin(c)], [-math.sin(c), math.cos(c)]])
    torch.testing.assert_close(shift_matrix(c, 2), expected, atol=1e-6, rtol=0)


def test_sinusoidal_module_adds_the_table():
    enc = SinusoidalPositionalEncoding(6, max_len=10)
    x = randn(2, 7, 6)
    # the table by its formula, written independently of the package
    pos = torch.arange(7.0)[:, None]
    i = torch.arange(3.0)[None, :]
    angle = pos / 10000 ** (2 * i / 6)
    table = torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(7, 6)
    torch.testing.assert_close(enc(x), x + table, atol=1e-6, rtol=0)
    assert not list(enc.parameters())  # fixed, nothing to train


def test_learned_module_adds_its_weight():
    enc = LearnedPositionalEncoding(6, max_len=10)
    with torch.no_grad():
        enc.weight.copy_(torch.arange(60.0).view(10, 6))
    x = randn(2, 4, 6)
    torch.testing.assert_close(enc(x), x + torch.arange(24.0).view(4, 6), atol=0, rtol=0)
    assert [p.shape for p in enc.parameters()] == [(10, 6)]


# ----------------------------------------------------------- RoPE


def test_rope_scores_depend_only_on_the_offset():
    d = 8
    q_vec, k_vec = randn(d, seed=2), randn(d, seed=3)
    seq = 20
    q = q_vec.expand(seq, d)  # the same query vector at every position
    k = k_vec.expand(seq, d)
    rq, rk = apply_rope(q), apply_rope(k)
    for diff in (0, 1, 3, -2, 7):
        scores = [torch.dot(rq[t], rk[t - diff]).item() for t in range(max(diff, 0), min(seq, seq + diff))]
        assert len(scores) >= 10
        assert max(scores) - min(scores) < 1e-4, (diff, scores)
    # ... and different offsets do give different scores
    assert abs(torch.dot(rq[5], rk[5]).item() - torch.dot(rq[5], rk[2]).item()) > 1e-3


def test_rope_preserves_norms():
    x = randn(2, 3, 11, 16, seed=4)
    y = apply_rope(x)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=0)


def test_rope_position_zero_is_identity():
    x = randn(2, 5, 8, seed=5)
    y = apply_rope(x)
    torch.testing.assert_close(y[:, 0], x[:, 0], atol=0, rtol=0)
    assert not torch.allclose(y[:, 1], x[:, 1])


@pytest.mark.parametrize("t", [0, 1, 2, 5, 11])
def test_rope_in_2d_is_a_rotation_by_t(t):
    x = randn(12, 2, seed=6)
    y = apply_rope(x)
    r = torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])  # by hand
    torch.testing.assert_close(rotation_matrix(t * 1.0), r, atol=1e-6, rtol=0)
    torch.testing.assert_close(y[t], r @ x[t], atol=1e-5, rtol=0)


def test_rope_rotates_each_pair_by_its_frequency():
    # d = 4: pair 0 turns by t, pair 1 by t / 10000^(2/4) = t / 100.
    x = randn(6, 4, seed=7)
    y = apply_rope(x)
    t = 5
    for pair, omega in ((0, 1.0), (1, 0.01)):
        a = t * omega
        r = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        torch.testing.assert_close(y[t, 2 * pair:2 * pair + 2], r @ x[t, 2 * pair:2 * pair + 2], atol=1e-5, rtol=0)


def test_rotary_embedding_offset():
    # A chunk that starts at position `offset` is rotated by (offset + t) * omega; d_h = 2 has omega = 1.
    rope = RotaryEmbedding(2, max_len=32)
    x = randn(1, 3, 4, 2, seed=8)  # (batch, heads, seq, d_h)
    y = rope(x, offset=6)
    for t in range(4):
        a = 6 + t
        r = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        torch.testing.assert_close(y[0, :, t], x[0, :, t] @ r.T, atol=1e-5, rtol=0)


def _rope_as_first_written(x, offset, d, base=10000.0):
    """RoPE as the package computed it on every call before the cache: angles in float64, then cast."""
    positions = torch.arange(offset, offset + x.shape[-2])
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.to(torch.float64)[:, None] * omega  # (seq, d / 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, 3, 27])
def test_rotary_cache_equals_the_computation_on_every_call(dtype, offset):
    rope = RotaryEmbedding(16, max_len=32)
    x = randn(2, 4, 5, 16, seed=10, dtype=dtype)  # (batch, heads, seq, d_h)
    assert torch.equal(rope(x, offset=offset), _rope_as_first_written(x, offset, 16))


def test_rotary_cache_is_computed_once_as_buffers_outside_the_state_dict():
    rope = RotaryEmbedding(8, max_len=20)
    assert rope.cos.shape == rope.sin.shape == (20, 4)  # (max_len, d_h / 2)
    assert rope.cos.dtype == torch.float64
    assert {name for name, _ in rope.named_buffers()} == {"cos", "sin"}
    assert not rope.state_dict() and not list(rope.parameters())
    angle = 7 / 10000 ** (2 / 8)  # position 7, pair 1
    assert rope.cos[7, 1].item() == pytest.approx(math.cos(angle), abs=1e-15)
    assert rope.sin[7, 1].item() == pytest.approx(math.sin(angle), abs=1e-15)
    assert rope.to(torch.float32).cos.dtype == torch.float32  # the buffers follow the module


# ----------------------------------------------------------- the pairing: interleaved (paper) or half (Llama)


def _interleave(d):
    """The feature order that turns half pairs into interleaved ones: ``[0, d/2, 1, d/2 + 1, ...]``."""
    return torch.arange(d).view(2, d // 2).T.flatten()


@pytest.mark.parametrize("d", [2, 4, 8, 16])
def test_half_pairs_are_interleaved_pairs_of_permuted_features(d):
    # Pair i of "half" is (x[i], x[i + d/2]); interleaving the features makes it pair (2i, 2i + 1).
    x = randn(3, 7, d, seed=d, dtype=torch.float64)  # (batch, seq, d)
    perm = _interleave(d)
    half = apply_rope(x, pairs="half")
    assert torch.equal(half[..., perm], apply_rope(x[..., perm]))
    rope = RotaryEmbedding(d, max_len=7, pairs="half")
    assert torch.equal(rope(x), half)
    if d > 2:  # with one pair the two orders are the same
        assert not torch.allclose(half, apply_rope(x))


def test_half_pairs_rotate_pair_i_by_its_frequency():
    # d = 4, half: pair 0 is (x[0], x[2]) and turns by t; pair 1 is (x[1], x[3]) and turns by t / 100.
    x = randn(6, 4, seed=7)
    y = apply_rope(x, pairs="half")
    t = 5
    for (i, j), omega in (((0, 2), 1.0), ((1, 3), 0.01)):
        a = t * omega
        r = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        torch.testing.assert_close(y[t, [i, j]], r @ x[t, [i, j]], atol=1e-5, rtol=0)


def test_half_pairs_keep_the_relative_property_and_come_from_the_config():
    q, k = randn(10, 8, seed=1), randn(10, 8, seed=2)
    rq, rk = apply_rope(q, pairs="half"), apply_rope(k, pairs="half")
    shifted = apply_rope(q, torch.arange(3, 13), pairs="half") @ apply_rope(k, torch.arange(3, 13), pairs="half").T
    torch.testing.assert_close(rq @ rk.T, shifted, atol=1e-5, rtol=0)  # scores depend on t - i only
    cfg = TransformerConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16, positional="rope",
                            rope_pairs="half")
    assert positional_module(cfg, ActsOn.QUERIES_AND_KEYS).pairs == "half"
    assert "pairs='half'" in repr(RotaryEmbedding(8, pairs="half")) and "pairs" not in repr(RotaryEmbedding(8))


# ----------------------------------------------------------- the registry


def _config(positional):
    return TransformerConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0, max_len=16,
                             positional=positional)


def test_registry_names_the_five_schemes():
    assert POSITIONAL_SCHEMES == {"sinusoidal": SinusoidalPositionalEncoding, "learned": LearnedPositionalEncoding,
                                  "relative": RelativePositionBias, "rope": RotaryEmbedding, "none": None}


# where each scheme must end up: (added to the embeddings, rotating q and k, biasing the scores)
PLACES = {"sinusoidal": (SinusoidalPositionalEncoding, None, None),
          "learned": (LearnedPositionalEncoding, None, None),
          "relative": (None, None, RelativePositionBias),
          "rope": (None, RotaryEmbedding, None),
          "none": (None, None, None)}


@pytest.mark.parametrize("positional", list(PLACES))
def test_every_model_puts_the_scheme_where_it_acts(positional):
    added, rotary, bias = PLACES[positional]
    cfg = _config(positional)
    kind = lambda m: None if m is None else type(m)  # noqa: E731
    translator = EncoderDecoder(cfg)
    for embed in (translator.src_embed, translator.tgt_embed, DecoderOnly(cfg).embed, EncoderOnly(cfg).embed):
        assert kind(embed.positions) is added
    layers = [*translator.encoder.layers, *translator.decoder.layers]
    for layer in layers:
        assert (kind(layer.self_attn.rope), kind(layer.self_attn.relative_bias)) == (rotary, bias)
    for layer in translator.decoder.layers:  # cross-attention compares two sequences: no positions inside it
        assert layer.cross_attn.rope is None and layer.cross_attn.relative_bias is None
    assert len({id(layer.self_attn.rope) for layer in layers if layer.self_attn.rope is not None}) in (0, len(layers))


def test_positional_module_sizes_come_from_the_config():
    cfg = _config("rope")
    assert positional_module(cfg, ActsOn.QUERIES_AND_KEYS).d_h == 8
    assert positional_module(cfg, ActsOn.EMBEDDINGS) is None
    assert positional_module(_config("relative"), ActsOn.SCORES).bias.shape == (2, 2 * 16 + 1)  # (heads, 2 max_len + 1)
    assert positional_module(_config("learned"), ActsOn.EMBEDDINGS).weight.shape == (16, 16)  # (max_len, d_model)


@pytest.mark.parametrize("acts_on", ["keys", "queries and keys", ActsOn.SCORES.value])
def test_positional_module_takes_an_acts_on_not_a_string(acts_on):
    """A string, even one that is an ActsOn's value, is refused: the three places are the members themselves."""
    with pytest.raises(TypeError, match=r"acts_on: expected a member of ActsOn \(ActsOn.EMBEDDINGS, "
                                        r"ActsOn.QUERIES_AND_KEYS, ActsOn.SCORES\), got str '"):
        positional_module(_config("relative"), acts_on)


# ----------------------------------------------------------- relative bias


def test_relative_position_bias_lookup():
    max_distance = 3
    rel = RelativePositionBias(n_heads=2, max_distance=max_distance)
    with torch.no_grad():
        rel.bias.copy_(randn(2, 2 * max_distance + 1, seed=9))
    t_q, t_k = 6, 8
    out = rel(t_q, t_k)
    assert out.shape == (2, t_q, t_k)
    for h in range(2):
        for t in range(t_q):
            for i in range(t_k):
                d = min(max(t - i, -max_distance), max_distance)
                assert out[h, t, i].item() == rel.bias[h, d + max_distance].item()
    # the same distance gets the same bias everywhere (a Toeplitz matrix per head)
    assert torch.equal(out[:, 1:, 1:], out[:, :-1, :-1])


def test_relative_position_bias_is_trainable():
    rel = RelativePositionBias(n_heads=3, max_distance=4)
    rel(5, 5).sum().backward()
    assert rel.bias.grad is not None and rel.bias.grad.abs().sum() > 0


# ----------------------------------------------------------- which models know about order


def _encoder(positional):
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0, max_len=16,
                            positional=positional)
    return EncoderOnly(cfg).eval()


def test_no_positional_encoding_is_permutation_equivariant():
    model = _encoder("none")
    ids = torch.tensor([[5, 9, 3, 12, 7, 4]])
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    h = model.encode(ids)
    h_perm = model.encode(ids[:, perm])
    torch.testing.assert_close(h_perm, h[:, perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "relative", "rope"])
def test_positional_encodings_break_the_symmetry(positional):
    model = _encoder(positional)
    if positional == "relative":
        with torch.no_grad():
            for layer in model.encoder.layers:
                layer.self_attn.relative_bias.bias.normal_()  # zero at initialisation
    ids = torch.tensor([[5, 9, 3, 12, 7, 4]])
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    h = model.encode(ids)
    h_perm = model.encode(ids[:, perm])
    assert not torch.allclose(h_perm, h[:, perm], atol=1e-3)
