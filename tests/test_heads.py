"""The output head and decoding (chapter 9), against nn.Linear, nn.Embedding, F.cross_entropy,
hand computations and the lecture's numbers."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer import (
    EncoderDecoder,
    TokenEmbedding,
    TransformerConfig,
    WordTokenizer,
    count_parameters,
    generate,
    next_token,
    sequence_loss,
    softmax_with_temperature,
    teacher_forcing,
)
from transformer.heads import OutputHead


def seeded(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------- the head


@pytest.mark.parametrize("bias", [False, True])
def test_untied_head_equals_nn_linear(bias):
    head = OutputHead(16, 30, bias=bias)
    linear = nn.Linear(16, 30, bias=bias)
    with torch.no_grad():
        head.weight.copy_(seeded(30, 16, seed=1))
        linear.weight.copy_(head.weight)
        if bias:
            head.bias.copy_(seeded(30, seed=2))
            linear.bias.copy_(head.bias)
    h = seeded(2, 5, 16, seed=3)
    torch.testing.assert_close(head(h), linear(h), atol=1e-6, rtol=0)
    assert head(h).shape == (2, 5, 30)
    assert head(h[0, 0]).shape == (30,)  # any leading dimensions, as nn.Linear


@pytest.mark.parametrize("make_embedding", [lambda: nn.Embedding(12, 8), lambda: TokenEmbedding(12, 8)],
                         ids=["nn.Embedding", "TokenEmbedding"])
def test_tied_head_is_the_embedding_matrix(make_embedding):
    emb = make_embedding()
    head = OutputHead(8, 12, tie_to=emb)
    assert head.weight is emb.weight and head.tied
    h = seeded(3, 4, 8)
    torch.testing.assert_close(head(h), h @ emb.weight.T, atol=1e-6, rtol=0)
    # one matrix: PyTorch's own parameter list of both modules holds it once
    assert sum(p.numel() for p in nn.ModuleList([emb, head]).parameters()) == 12 * 8
    with torch.no_grad():
        emb.weight[5] += 1.0
    torch.testing.assert_close(head(h), h @ emb.weight.T, atol=1e-6, rtol=0)


def test_tied_gradient_is_the_sum_of_both_uses():
    # The same loss on two untied copies of the matrix: the tied matrix's gradient is their sum.
    vocab, d = 10, 6
    ids = torch.tensor([[1, 4, 4, 7]])
    h = seeded(1, 3, d, seed=5)
    start = seeded(vocab, d, seed=6)

    def loss(emb_weight, head_weight):
        x = F.embedding(ids, emb_weight)                       # the input side
        logits = F.linear(h, head_weight)                      # the output side
        return x.pow(2).sum() + logits.logsumexp(-1).sum()

    emb = nn.Embedding(vocab, d)
    with torch.no_grad():
        emb.weight.copy_(start)
    head = OutputHead(d, vocab, tie_to=emb)
    tied_loss = emb(ids).pow(2).sum() + head(h).logsumexp(-1).sum()
    tied_loss.backward()

    a, b = start.clone().requires_grad_(True), start.clone().requires_grad_(True)
    loss(a, b).backward()
    torch.testing.assert_close(emb.weight.grad, a.grad + b.grad, atol=1e-6, rtol=0)


def test_entries_of_about_one_over_sqrt_d_keep_the_logits_spread_near_one():
    # Lecture 19: rows with a sum of squares of 1, i.e. entries of about 1/sqrt(d), give logits of size about 1.
    d, vocab = 512, 1000
    torch.manual_seed(0)
    head = OutputHead(d, vocab)
    rms = head.weight.detach().pow(2).mean().sqrt().item()
    assert rms == pytest.approx(1 / math.sqrt(d), rel=0.02)
    assert head.weight.detach().pow(2).sum(dim=1).mean().item() == pytest.approx(1.0, rel=0.02)
    h = seeded(300, d, seed=7)  # RMS about 1, as after a normalisation layer
    with torch.no_grad():
        assert head(h).std().item() == pytest.approx(1.0, rel=0.05)
        # entries of size 1 instead: a spread of sqrt(d) ~ 22.6
        assert (h @ seeded(vocab, d, seed=8).T).std().item() == pytest.approx(math.sqrt(d), rel=0.05)


def test_tied_token_embedding_serves_both_sides():
    # The same matrix gives input vectors of RMS about 1 (after sqrt(d_model)) and logits of spread about 1.
    d, vocab = 256, 800
    torch.manual_seed(1)
    emb = TokenEmbedding(vocab, d)
    head = OutputHead(d, vocab, tie_to=emb)
    with torch.no_grad():
        x = emb(torch.randint(0, vocab, (1, 400), generator=torch.Generator().manual_seed(2)))
        assert x.pow(2).mean().sqrt().item() == pytest.approx(1.0, rel=0.05)
        assert head(seeded(300, d, seed=3)).std().item() == pytest.approx(1.0, rel=0.05)


def test_weight_tying_saves_37000_x_512_in_the_2017_base_model():
    with torch.device("meta"):
        tied = EncoderDecoder(TransformerConfig())
        untied = EncoderDecoder(TransformerConfig(tie_weights=False))
    saved = count_parameters(untied) - count_parameters(tied)
    assert saved == 37000 * 512 == 18_944_000  # "about 19M"


def test_the_hand_example_of_the_chapter():
    head = OutputHead(2, 4)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.0, -1.0], [0.0, 0.0]]))
    z = head(torch.tensor([2.0, 1.0])).detach()
    assert z.tolist() == [3.0, 2.0, -1.0, 0.0]
    total = math.exp(3) + math.exp(2) + math.exp(-1) + 1
    assert total == pytest.approx(28.8425, abs=1e-4)
    p = [math.exp(v) / total for v in (3, 2, -1, 0)]
    torch.testing.assert_close(z.softmax(-1), torch.tensor(p), atol=1e-6, rtol=0)
    assert [round(v, 4) for v in p] == [0.6964, 0.2562, 0.0128, 0.0347]
    assert F.cross_entropy(z[None], torch.tensor([0])).item() == pytest.approx(-math.log(p[0]), abs=1e-6)
    assert -math.log(p[0]) == pytest.approx(0.3618, abs=1e-4)


def test_head_rejects_bad_input():
    head = OutputHead(8, 10)
    with pytest.raises(ValueError, match=r"h: expected d_model=8 in the last dimension, got shape \(2, 3, 7\)"):
        head(torch.zeros(2, 3, 7))
    with pytest.raises(TypeError, match=r"h: expected a floating-point tensor, got dtype torch.int64"):
        head(torch.zeros(2, 3, 8, dtype=torch.long))
    with pytest.raises(TypeError, match=r"h: expected a torch.Tensor, got list"):
        head([[0.0] * 8])
    with pytest.raises(TypeError, match=r"tie_to: expected an embedding module with a `weight` Parameter, got Tensor"):
        OutputHead(8, 10, tie_to=torch.zeros(10, 8))  # the matrix itself, not a module
    with pytest.raises(ValueError, match=r"tie_to: expected an embedding of shape \(vocab_size=10, d_model=8\)"):
        OutputHead(8, 10, tie_to=nn.Embedding(10, 9))
    with pytest.raises(ValueError, match="vocab_size: expected a positive int, got 0"):
        OutputHead(8, 0)


# ----------------------------------------------------------- loss and decoding on the lecture sentence


@pytest.fixture(scope="module")
def german():
    tok = WordTokenizer.fit(["Ich habe einen Apfel gegessen", "Ich habe Brot gegessen"])
    v = tok.vocab
    table = torch.zeros(len(v), len(v))
    table[:, [v.pad_id, v.sos_id, v.unk_id]] = -2.0
    for prev, nxt, logit in [("<sos>", "Ich", 4), ("Ich", "habe", 4), ("habe", "einen", 3), ("habe", "Brot", 2.5),
                             ("einen", "Apfel", 4), ("Apfel", "gegessen", 4), ("Brot", "gegessen", 4),
                             ("gegessen", "<eos>", 5), ("<eos>", "<eos>", 5)]:
        table[v.id_of(prev), v.id_of(nxt)] += logit
    return tok, table


def test_greedy_decoding_of_the_bigram_toy_says_the_lecture_sentence(german):
    tok, table = german
    v = tok.vocab
    out = generate(lambda ids: table[ids], torch.tensor([[v.sos_id]]), max_new_tokens=10, eos_id=v.eos_id)
    assert tok.decode(out[0], skip_special=False) == "<sos> Ich habe einen Apfel gegessen <eos>"
    # the loop by hand, one argmax per step
    ids = [v.sos_id]
    while ids[-1] != v.eos_id:
        ids.append(max(range(len(v)), key=lambda j: table[ids[-1], j].item()))
    assert out[0].tolist() == ids


def test_generate_stops_at_max_new_tokens_and_pads_finished_rows(german):
    tok, table = german
    v = tok.vocab
    prefix = torch.tensor([[v.sos_id], [v.id_of("Apfel")]])
    out = generate(lambda ids: table[ids], prefix, max_new_tokens=3, eos_id=v.eos_id)
    assert out.tolist() == [[1, 4, 5, 6], [7, 8, 2, 2]]  # row 0 is cut after 3 tokens; row 1 is padded with <eos>


def test_teacher_forced_loss_by_hand_ignores_padding(german):
    tok, table = german
    v = tok.vocab
    tgt = torch.tensor([tok.encode("Ich habe einen Apfel gegessen"), tok.encode("Ich habe Brot gegessen") + [0]])
    dec_in, labels = teacher_forcing(tgt)
    logits = table[dec_in]
    # -log p(label) by hand with math.exp, over the 11 real labels only
    total, count = 0.0, 0
    for b in range(2):
        for t in range(6):
            y = int(labels[b, t])
            if y == v.pad_id:
                continue
            row = table[int(dec_in[b, t])].tolist()
            total += -(row[y] - math.log(sum(math.exp(x) for x in row)))
            count += 1
    assert count == 11
    assert sequence_loss(logits, labels, pad_id=0).item() == pytest.approx(total / count, abs=1e-5)
    assert F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=0).item() == pytest.approx(
        total / count, abs=1e-5)


def test_temperature_by_hand_on_the_token_after_habe(german):
    tok, table = german
    z = table[tok.vocab.id_of("habe")]
    e, b = tok.vocab.id_of("einen"), tok.vocab.id_of("Brot")
    for t in (0.25, 1.0, 5.0):
        p = softmax_with_temperature(z, t)
        assert (p[e] / p[b]).item() == pytest.approx(math.exp(0.5 / t), rel=1e-5)  # e^((3 - 2.5) / T)
    assert softmax_with_temperature(z, 0.01).argmax().item() == e
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    draws = [next_token(z.expand(50, -1), 1.0, g) for g in (g1, g2)]
    assert torch.equal(draws[0], draws[1]) and len(set(draws[0].tolist())) > 1
