"""The three models, decoding and training (chapters 9 and 10)."""

import math

import pytest
import torch
from torch import nn

from transformer import (
    DecoderOnly,
    Encoder,
    EncoderBlock,
    EncoderDecoder,
    EncoderOnly,
    TransformerConfig,
    WordTokenizer,
    count_parameters,
    generate,
    greedy_decode,
    next_token,
    sequence_loss,
    softmax_with_temperature,
    teacher_forcing,
    train_step,
)

POSITIONAL = ["sinusoidal", "learned", "relative", "rope", "none"]
V, D = 13, 16


def config(positional="sinusoidal", norm_first=False, **kw):
    base = dict(vocab_size=V, d_model=D, n_heads=2, d_ff=32, n_layers=2, dropout=0.0, max_len=12,
                positional=positional, norm_first=norm_first)
    base.update(kw)
    return TransformerConfig(**base)


def ids(batch, seq, seed=0, low=3):
    return torch.randint(low, V, (batch, seq), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------- shapes


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("positional", POSITIONAL)
def test_shapes(positional, norm_first):
    torch.manual_seed(0)
    cfg = config(positional, norm_first, src_vocab_size=V + 4)
    src, tgt = ids(2, 7, seed=1), ids(2, 5, seed=2)
    src[0, 5:] = 0  # some padding
    ed = EncoderDecoder(cfg).eval()
    logits = ed(src, tgt)
    assert logits.shape == (2, 5, V)
    memory, src_mask = ed.encode(src)
    assert memory.shape == (2, 7, D) and src_mask.shape == (2, 1, 7)
    assert torch.isfinite(logits).all()

    do = DecoderOnly(config(positional, norm_first)).eval()
    assert do(ids(3, 9)).shape == (3, 9, V)

    eo = EncoderOnly(config(positional, norm_first)).eval()
    x = ids(3, 9)
    assert eo.encode(x).shape == (3, 9, D)
    assert eo(x).shape == (3, 9, V)


@pytest.mark.parametrize("fast", [False, True])
def test_variants_run(fast):
    cfg = config("rope", True, norm="rms", activation="gelu", tie_weights=False, n_decoder_layers=1, fast=fast)
    assert EncoderDecoder(cfg)(ids(2, 6), ids(2, 4)).shape == (2, 4, V)


@pytest.mark.parametrize("positional", POSITIONAL)
def test_fast_and_teaching_models_agree(positional):
    torch.manual_seed(0)
    slow = DecoderOnly(config(positional, True)).eval()
    fast = DecoderOnly(config(positional, True, fast=True)).eval()
    fast.load_state_dict(slow.state_dict())
    if positional == "relative":  # the bias starts at zero; make it matter
        with torch.no_grad():
            for m in (slow, fast):
                for layer in m.causal_stack.layers:
                    b = layer.self_attn.relative_bias.bias
                    b.copy_(torch.linspace(-1, 1, b.numel()).view_as(b))
    x = ids(2, 8)
    x[1, 6:] = 0
    torch.testing.assert_close(fast(x), slow(x), atol=1e-5, rtol=0)


# ----------------------------------------------------------- causality


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("positional", POSITIONAL)
def test_decoder_only_is_causal(positional, norm_first):
    torch.manual_seed(0)
    model = DecoderOnly(config(positional, norm_first)).eval()
    x = ids(2, 8, seed=3)
    y = x.clone()
    y[:, 5] = torch.where(x[:, 5] == 4, 5, 4)  # change token 5
    a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :5], b[:, :5], atol=1e-6, rtol=0)  # the past does not see it
    assert not torch.allclose(a[:, 5:], b[:, 5:], atol=1e-4)  # position 5 onwards does


def test_decoder_only_is_a_causal_stack_of_encoder_blocks():
    # GPT keeps the decoder without cross-attention: the encoder's blocks, made causal by the mask.
    model = DecoderOnly(config())
    assert isinstance(model.causal_stack, Encoder)
    assert all(isinstance(block, EncoderBlock) for block in model.causal_stack.layers)
    assert not hasattr(model, "blocks")  # one name for it, the one chapter 10 uses
    weights = [k for k in model.state_dict() if k.endswith("layers.0.ff.linear1.weight")]
    assert weights == ["causal_stack.layers.0.ff.linear1.weight"]


@pytest.mark.parametrize("positional", POSITIONAL)
def test_encoder_decoder_target_is_causal_and_source_is_not(positional):
    torch.manual_seed(0)
    model = EncoderDecoder(config(positional)).eval()
    src, tgt = ids(2, 6, seed=4), ids(2, 7, seed=5)
    tgt2 = tgt.clone()
    tgt2[:, 4] = torch.where(tgt[:, 4] == 4, 5, 4)
    a, b = model(src, tgt), model(src, tgt2)
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, 4:], b[:, 4:], atol=1e-4)
    src2 = src.clone()
    src2[:, -1] = torch.where(src[:, -1] == 4, 5, 4)  # the last source token is seen by every target position
    c = model(src2, tgt)
    assert (a - c).abs().amax(dim=-1).min() > 1e-6


def test_encoder_only_sees_the_future():
    torch.manual_seed(0)
    model = EncoderOnly(config()).eval()
    x = ids(1, 6, seed=6)
    y = x.clone()
    y[0, 5] = 4 if x[0, 5] != 4 else 5
    assert not torch.allclose(model(x)[:, 0], model(y)[:, 0], atol=1e-5)


def test_padding_keys_are_ignored_by_the_encoder():
    # Changing the embedding of a pad token must not change any real token's output.
    torch.manual_seed(0)
    model = EncoderOnly(config("none")).eval()
    x = ids(1, 6, seed=7)
    x[0, 4:] = 0
    a = model.encode(x)
    with torch.no_grad():
        model.embed.tokens.weight[0] += 5.0
    b = model.encode(x)
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=1e-6, rtol=0)


# ------------------------------------------------------------------------ the fields that express GPT-2 and BERT


def test_the_defaults_build_the_2017_model_and_nothing_more():
    cfg = config()
    assert (cfg.scale_embeddings, cfg.embedding_norm, cfg.type_vocab_size, cfg.head_transform, cfg.head_bias,
            cfg.pad_id, cfg.rope_pairs) == (True, False, 0, False, False, 0, "interleaved")
    for cls in (EncoderOnly, DecoderOnly, EncoderDecoder):
        model = cls(cfg)
        names = set(model.state_dict())
        assert not any(n.startswith(("embed.types", "embed.norm", "head.transform", "head.bias")) for n in names)
        assert model.head.transform is None and model.head.bias is None
    assert EncoderOnly(cfg).embed.tokens.scale


def test_unscaled_embeddings_are_the_rows_of_the_matrix():
    model = EncoderOnly(config("none", scale_embeddings=False)).eval()
    x = ids(2, 5)
    torch.testing.assert_close(model.embed(x), model.embed.tokens.weight[x], atol=0, rtol=0)
    scaled = EncoderOnly(config("none")).eval()
    torch.testing.assert_close(scaled.embed(x), scaled.embed.tokens.weight[x] * math.sqrt(D), atol=0, rtol=0)


def test_token_types_are_added_and_default_to_type_0():
    torch.manual_seed(0)
    model = EncoderOnly(config(type_vocab_size=3)).eval()
    assert model.embed.types.weight.shape == (3, D)  # (type_vocab_size, d_model)
    x = ids(2, 6)
    zeros, ones = torch.zeros_like(x), torch.ones_like(x)
    assert torch.equal(model.encode(x), model.encode(x, zeros))
    assert not torch.allclose(model.encode(x), model.encode(x, ones))
    shift = model.embed.types.weight[1] - model.embed.types.weight[0]  # (d_model,)
    torch.testing.assert_close(model.embed(x, ones) - model.embed(x, zeros), shift.expand(2, 6, D), atol=1e-6, rtol=0)


def test_the_embedding_norm_normalises_each_token():
    model = EncoderOnly(config(embedding_norm=True, norm_eps=1e-12)).eval()
    e = model.embed(ids(2, 6))  # gamma 1, beta 0 at initialisation
    torch.testing.assert_close(e.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)
    torch.testing.assert_close(e.var(-1, unbiased=False), torch.ones(2, 6), atol=1e-4, rtol=0)


def test_the_head_transform_and_bias_come_before_the_tied_output_layer():
    torch.manual_seed(0)
    model = EncoderOnly(config(head_transform=True, head_bias=True, activation="gelu_tanh")).eval()
    head = model.head
    with torch.no_grad():
        head.bias.normal_()
    h = torch.randn(2, 5, D)
    t = head.transform.norm(nn.functional.gelu(head.transform.dense(h), approximate="tanh"))
    torch.testing.assert_close(head(h), t @ model.embed.tokens.weight.T + head.bias, atol=1e-5, rtol=0)
    assert head.tied and head.bias.shape == (V,)


def test_norm_eps_reaches_every_norm():
    cfg = config(norm_first=True, norm_eps=1e-3, embedding_norm=True, head_transform=True)
    for model in (EncoderOnly(cfg), DecoderOnly(cfg), EncoderDecoder(cfg)):
        norms = [m for m in model.modules() if hasattr(m, "eps") and hasattr(m, "gamma")]
        assert len(norms) > 4 and all(m.eps == 1e-3 for m in norms)


def test_pad_id_none_hides_nothing():
    torch.manual_seed(0)
    padded = EncoderOnly(config(pad_id=0)).eval()
    unpadded = EncoderOnly(config(pad_id=None)).eval()
    unpadded.load_state_dict(padded.state_dict())
    x = ids(2, 6, low=1)
    x[0, 4:] = 0  # a token 0, padding for one model only
    no_zero = EncoderOnly(config(pad_id=12)).eval()  # a pad id that does not occur: nothing hidden either
    no_zero.load_state_dict(padded.state_dict())
    assert torch.equal(unpadded.encode(x), no_zero.encode(x))
    assert not torch.allclose(unpadded.encode(x)[0, :4], padded.encode(x)[0, :4])
    decoder = DecoderOnly(config(pad_id=None)).eval()
    assert decoder(x).shape == (2, 6, V)


def test_decoder_only_hidden_states_are_what_the_head_reads():
    model = DecoderOnly(config(norm_first=True)).eval()
    x = ids(2, 5)
    h = model.hidden(x)
    assert h.shape == (2, 5, D)
    assert torch.equal(model(x), model.head(h))


# ----------------------------------------------------------- weight tying and parameter counts


@pytest.mark.parametrize("cls, embed", [(DecoderOnly, "embed"), (EncoderOnly, "embed"), (EncoderDecoder, "tgt_embed")])
def test_weight_tying(cls, embed):
    tied = cls(config(tie_weights=True))
    assert tied.head.weight is getattr(tied, embed).tokens.weight
    untied = cls(config(tie_weights=False))
    assert untied.head.weight is not getattr(untied, embed).tokens.weight
    assert untied.head.weight.data_ptr() != getattr(untied, embed).tokens.weight.data_ptr()
    # a gradient step through the head moves the embedding of the tied model
    before = getattr(tied, embed).tokens.weight.detach().clone()
    with torch.no_grad():
        tied.head.weight[5] += 1.0
    assert torch.equal(getattr(tied, embed).tokens.weight[5], before[5] + 1.0)


def test_count_parameters_by_hand():
    v, d, d_ff, layers, max_len = 11, 16, 32, 2, 8
    # per block: attention 4 d^2 + 4 d, feed-forward d d_ff + d_ff + d_ff d + d, two LayerNorms 2 * 2 d
    block = (4 * d * d + 4 * d) + (d * d_ff + d_ff + d_ff * d + d) + 2 * 2 * d
    assert block == 2224
    common = v * d + max_len * d + layers * block + 2 * d  # embedding, learned positions, blocks, final norm
    kw = dict(vocab_size=v, d_model=d, n_heads=2, d_ff=d_ff, n_layers=layers, max_len=max_len,
              positional="learned", norm_first=True)
    tied = DecoderOnly(TransformerConfig(**kw, tie_weights=True))
    untied = DecoderOnly(TransformerConfig(**kw, tie_weights=False))
    assert count_parameters(tied) == common == 4784  # the tied matrix counted once
    assert count_parameters(untied) == common + v * d
    # PyTorch's own count of the module tree agrees (it also yields a shared parameter once)
    assert count_parameters(tied) == sum(p.numel() for p in tied.parameters())


def test_count_parameters_ignores_frozen_and_counts_shared_once():
    a = nn.Linear(4, 3)  # 15
    b = nn.Linear(3, 4)  # 16
    model = nn.Sequential(a, b, a)  # `a` twice
    assert count_parameters(model) == 31
    b.bias.requires_grad_(False)
    assert count_parameters(model) == 27


# ----------------------------------------------------------- decoding


def test_next_token_temperature_zero_is_argmax():
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.9], [5.0, -5.0, 4.0, 0.0]])
    assert next_token(logits).tolist() == [1, 0]
    assert next_token(logits, temperature=0.0).tolist() == [1, 0]


def test_sampling_is_reproducible_with_a_seeded_generator():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0))
    draws = [next_token(logits, 1.0, torch.Generator().manual_seed(42)).tolist() for _ in range(2)]
    assert draws[0] == draws[1]
    g = torch.Generator().manual_seed(42)
    seq1 = [next_token(logits, 1.0, g).tolist() for _ in range(5)]
    g = torch.Generator().manual_seed(42)
    seq2 = [next_token(logits, 1.0, g).tolist() for _ in range(5)]
    assert seq1 == seq2
    assert len({tuple(s) for s in seq1}) > 1  # it does sample, not argmax


def test_sampling_follows_the_tempered_softmax():
    logits = torch.tensor([[0.0, 1.0, 2.0]])
    t = 2.0
    # softmax([0, 0.5, 1]) by hand
    z = 1 + math.exp(0.5) + math.exp(1.0)
    expected = torch.tensor([1 / z, math.exp(0.5) / z, math.exp(1.0) / z])
    g = torch.Generator().manual_seed(0)
    n = 20000
    counts = torch.bincount(next_token(logits.expand(n, 3), t, g), minlength=3).float() / n
    torch.testing.assert_close(counts, expected, atol=0.015, rtol=0)
    torch.testing.assert_close(softmax_with_temperature(logits, t)[0], expected, atol=1e-6, rtol=0)


def test_temperature_limits():
    logits = torch.tensor([1.0, 3.0, 2.0, -1.0])
    cold = softmax_with_temperature(logits, 0.01)
    torch.testing.assert_close(cold, torch.tensor([0.0, 1.0, 0.0, 0.0]), atol=1e-6, rtol=0)
    hot = softmax_with_temperature(logits, 1e4)
    torch.testing.assert_close(hot, torch.full((4,), 0.25), atol=1e-3, rtol=0)
    # monotone: the top token's probability falls as T grows
    tops = [softmax_with_temperature(logits, t)[1].item() for t in (0.1, 0.5, 1.0, 2.0, 10.0)]
    assert tops == sorted(tops, reverse=True)
    assert softmax_with_temperature(logits, 1.0)[1].item() == pytest.approx(
        math.exp(3) / (math.exp(1) + math.exp(3) + math.exp(2) + math.exp(-1)), abs=1e-6)


class ScriptedTranslator(nn.Module):
    """A stand-in model whose decoder emits a fixed script per row: the next token is script[row][T - 1]."""

    def __init__(self, scripts, vocab=10):
        super().__init__()
        self.scripts, self.vocab = scripts, vocab
        self.decode_lengths = []

    def encode(self, src):
        return torch.zeros(src.shape[0], src.shape[1], 4), torch.ones(src.shape[0], 1, src.shape[1], dtype=torch.bool)

    def decode(self, tgt, memory, src_mask=None):
        b, t = tgt.shape
        self.decode_lengths.append(t)
        logits = torch.zeros(b, t, self.vocab)
        for row in range(b):
            script = self.scripts[row]
            logits[row, -1, script[min(t - 1, len(script) - 1)]] = 1.0
        return logits


def test_greedy_decode_starts_with_sos_and_stops_at_eos():
    sos, eos = 1, 2
    model = ScriptedTranslator([[5, 2, 7, 7, 7, 7], [5, 6, 7, 2, 9, 9]])
    model.train()
    out = greedy_decode(model, torch.ones(2, 3, dtype=torch.long), max_new_tokens=10, sos_id=sos, eos_id=eos)
    # row 0 finishes after two tokens and is padded with eos; row 1 finishes after four; then the loop stops
    assert out.tolist() == [[1, 5, 2, 2, 2], [1, 5, 6, 7, 2]]
    assert model.decode_lengths == [1, 2, 3, 4]
    assert model.training  # the mode is restored


def test_greedy_decode_respects_max_new_tokens():
    model = ScriptedTranslator([[5, 6, 7, 8, 9, 5, 6, 7]])
    out = greedy_decode(model, torch.ones(1, 3, dtype=torch.long), max_new_tokens=3, sos_id=1, eos_id=2)
    assert out.tolist() == [[1, 5, 6, 7]]


def test_greedy_decode_of_a_real_model_is_the_argmax_loop():
    torch.manual_seed(0)
    model = EncoderDecoder(config()).eval()
    src = ids(2, 6, seed=8)
    out = greedy_decode(model, src, max_new_tokens=5, sos_id=1, eos_id=2)
    assert out[:, 0].tolist() == [1, 1] and out.shape[1] <= 6
    # the loop written out by hand, one full forward pass per step
    ys = torch.ones(2, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(5):
            ys = torch.cat([ys, model(src, ys)[:, -1].argmax(-1, keepdim=True)], dim=1)
    for row in range(2):
        got, want = out[row].tolist(), ys[row].tolist()
        if 2 in want:
            want = want[:want.index(2) + 1]
        assert got[:len(want)] == want
        assert all(t == 2 for t in got[len(want):])


def test_generate_with_a_decoder_only_model():
    torch.manual_seed(0)
    model = DecoderOnly(config()).eval()
    prefix = ids(2, 3)
    out = generate(model, prefix, max_new_tokens=4)
    assert out.shape == (2, 7) and torch.equal(out[:, :3], prefix)
    with torch.no_grad():
        assert torch.equal(out[:, 3], model(prefix)[:, -1].argmax(-1))


# ----------------------------------------------------------- training


def test_teacher_forcing_on_the_lecture_sentence():
    tok = WordTokenizer.fit(["Ich habe einen Apfel gegessen"])
    tgt = torch.tensor([tok.encode("Ich habe einen Apfel gegessen")])
    assert tgt.tolist() == [[1, 4, 5, 6, 7, 8, 2]]  # <sos> Ich habe einen Apfel gegessen <eos>
    dec_in, labels = teacher_forcing(tgt)
    assert dec_in.tolist() == [[1, 4, 5, 6, 7, 8]]  # <sos> Ich habe einen Apfel gegessen
    assert labels.tolist() == [[4, 5, 6, 7, 8, 2]]  # Ich habe einen Apfel gegessen <eos>


def test_sequence_loss_by_hand():
    # Uniform logits over V classes cost log V per label; pad labels are skipped.
    logits = torch.zeros(2, 3, 5)
    logits[0, 0, 4] = 100.0  # a confident, correct prediction: cost about 0
    labels = torch.tensor([[4, 1, 0], [2, 0, 0]])
    # three non-pad labels: 0 + log 5 + log 5
    assert sequence_loss(logits, labels).item() == pytest.approx(2 * math.log(5) / 3, abs=1e-5)
    assert sequence_loss(logits, labels, pad_id=None).item() == pytest.approx(5 * math.log(5) / 6, abs=1e-5)


def test_train_step_learns_to_copy():
    torch.manual_seed(0)
    vocab, length = 8, 5  # 0 pad, 1 sos, 2 eos, 3..7 symbols
    cfg = TransformerConfig(vocab_size=vocab, d_model=32, n_heads=2, d_ff=64, n_layers=1, dropout=0.0,
                            max_len=length + 2, norm_first=True)
    model = EncoderDecoder(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(200):
        src = torch.randint(3, vocab, (32, length), generator=g)
        tgt = torch.cat([torch.ones(32, 1, dtype=torch.long), src, torch.full((32, 1), 2)], dim=1)
        losses.append(train_step(model, opt, src, tgt))
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert first > 1.5  # chance level is log 8 = 2.08; an untrained model is no better
    assert last < 0.2
    # the trained model copies a fresh sequence
    src = torch.randint(3, vocab, (16, length), generator=g)
    out = greedy_decode(model, src, max_new_tokens=length + 1, sos_id=1, eos_id=2)
    assert (out[:, 1:length + 1] == src).float().mean() > 0.9


def test_sample_decode_draws_from_the_tempered_softmax():
    from transformer import sample_decode

    # The scripted decoder puts logit 1 on its script token and 0 elsewhere (vocab 10): at temperature 1
    # that token has probability e / (e + 9) by hand, so some draws must differ from the script.
    model = ScriptedTranslator([[5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]])
    src = torch.ones(1, 3, dtype=torch.long)
    draws = [sample_decode(model, src, 12, 1, 2, temperature=1.0, generator=torch.Generator().manual_seed(s))
             for s in range(40)]
    first = torch.tensor([d[0, 1].item() for d in draws])
    p_script = math.e / (math.e + 9)
    assert abs((first == 5).float().mean().item() - p_script) < 0.2
    same = sample_decode(model, src, 12, 1, 2, temperature=1.0, generator=torch.Generator().manual_seed(3))
    assert torch.equal(same, draws[3])  # a seeded generator reproduces the draw
    cold = sample_decode(model, src, 4, 1, 2, temperature=1e-3, generator=torch.Generator().manual_seed(0))
    assert cold.tolist() == [[1, 5, 5, 5, 5]]  # a very low temperature is greedy
