"""Training (chapter 10): the losses, label smoothing, fit with warm-up and clipping, translate, the progress bar."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer import DecoderOnly, EncoderDecoder, EncoderOnly, TransformerConfig
from transformer.data import Corpus
from transformer.train import (
    exact_match,
    fit,
    masked_token_loss,
    next_token_loss,
    sequence_loss,
    train_step,
    translate,
    translation_loss,
    warmup_factor,
    warmup_inverse_sqrt,
)
from transformer.viz.training import TrainingProgress, plot_losses

V = 12


def config(**kw):
    base = dict(vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.0, max_len=12)
    base.update(kw)
    return TransformerConfig(**base)


def ids(batch, seq, seed=0):
    return torch.randint(3, V, (batch, seq), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------- losses


def test_label_smoothing_by_hand():
    # logits (2, 0, 0), label 0, eps = 0.3: the target is (0.7 + 0.1, 0.1, 0.1) = (0.8, 0.1, 0.1)
    # loss = -(0.8 (2 - lse) + 0.2 (0 - lse)) = lse - 1.6 with lse = log(e^2 + 2)
    logits = torch.tensor([[[2.0, 0.0, 0.0]]])
    labels = torch.tensor([[0]])
    expected = math.log(math.exp(2) + 2) - 1.6
    assert sequence_loss(logits, labels, pad_id=None, label_smoothing=0.3).item() == pytest.approx(expected, abs=1e-6)
    assert sequence_loss(logits, labels, pad_id=None).item() == pytest.approx(math.log(math.exp(2) + 2) - 2, abs=1e-6)


def test_label_smoothing_floor_is_the_entropy_of_the_target():
    # The smallest smoothed loss is reached when the softmax equals the smoothed target q; it is H(q).
    v, eps = 54, 0.1
    right, other = 1 - eps + eps / v, eps / v
    floor = -(right * math.log(right) + (v - 1) * other * math.log(other))
    assert floor == pytest.approx(0.7107, abs=1e-4)
    q = torch.full((v,), other)
    q[5] = right
    logits = q.log()[None, None]  # (1, 1, v)
    loss = sequence_loss(logits, torch.tensor([[5]]), pad_id=None, label_smoothing=eps)
    assert loss.item() == pytest.approx(floor, abs=1e-5)
    worse = logits.clone()
    worse[0, 0, 5] += 1.0  # more confident than q: the smoothed loss goes up
    assert sequence_loss(worse, torch.tensor([[5]]), pad_id=None, label_smoothing=eps).item() > floor


def test_label_smoothing_is_checked():
    with pytest.raises(ValueError, match=r"label_smoothing: expected a number in \[0, 1\), got 1.0"):
        sequence_loss(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), label_smoothing=1.0)


def test_translation_loss_is_teacher_forcing_written_out():
    torch.manual_seed(0)
    model = EncoderDecoder(config()).eval()
    src, tgt = ids(2, 5, 1), ids(2, 6, 2)
    tgt[1, 4:] = 0
    logits = model(src, tgt[:, :-1])
    expected = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1), ignore_index=0, label_smoothing=0.1)
    torch.testing.assert_close(translation_loss(model, (src, tgt), label_smoothing=0.1), expected)


def test_next_token_loss_by_hand():
    torch.manual_seed(0)
    model = DecoderOnly(config()).eval()
    x = ids(3, 6, 3)
    logits = model(x[:, :-1])
    expected = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    torch.testing.assert_close(next_token_loss(model, x), expected)


def test_masked_token_loss_counts_only_the_blanks():
    torch.manual_seed(0)
    model = EncoderOnly(config()).eval()
    masked = ids(2, 5, 4)
    labels = torch.zeros(2, 5, dtype=torch.long)
    labels[0, 2], labels[1, 4] = 7, 9
    logits = model(masked)
    expected = (F.cross_entropy(logits[0, 2], torch.tensor(7)) + F.cross_entropy(logits[1, 4], torch.tensor(9))) / 2
    torch.testing.assert_close(masked_token_loss(model, (masked, labels)), expected)


def test_train_step_returns_the_loss_before_the_step():
    torch.manual_seed(0)
    model = EncoderDecoder(config())
    src, tgt = ids(4, 5, 5), ids(4, 6, 6)
    before = translation_loss(copy.deepcopy(model), (src, tgt), label_smoothing=0.1).item()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert train_step(model, opt, src, tgt, label_smoothing=0.1) == pytest.approx(before, abs=1e-6)
    assert translation_loss(model, (src, tgt), label_smoothing=0.1).item() < before


# ----------------------------------------------------------- fit


def test_warmup_by_hand():
    assert [warmup_factor(s, 4) for s in (1, 2, 4, 8)] == [0.25, 0.5, 1.0, 1.0]
    assert warmup_factor(1, 0) == 1.0


def test_the_papers_schedule_by_hand():
    # Vaswani et al. 2017, eq. 3, worked out by hand for d_model = 512 and warmup = 4000:
    # step 1: 512^-0.5 * 1 * 4000^-1.5 = 0.0441942 * 3.95285e-6 = 1.746928e-7
    # step 4000 (the peak): 512^-0.5 * 4000^-0.5 = 0.0441942 * 0.0158114 = 6.987712e-4
    # step 16000: 512^-0.5 * 16000^-0.5 = 0.0441942 * 0.00790569 = 3.493856e-4 (half the peak)
    by_hand = {1: 1.746928e-7, 4000: 6.987712e-4, 16000: 3.493856e-4}
    for step, rate in by_hand.items():
        assert warmup_inverse_sqrt(step, 512, 4000) == pytest.approx(rate, rel=1e-6)
    # d_model = 64, warmup = 100: step 50 is still warming up (64^-0.5 * 50 * 100^-1.5 = 0.125 * 0.05),
    # step 400 decays (0.125 * 400^-0.5 = 0.125 * 0.05): the same rate on both sides of the peak
    assert warmup_inverse_sqrt(50, 64, 100) == pytest.approx(0.00625, rel=1e-12)
    assert warmup_inverse_sqrt(400, 64, 100) == pytest.approx(0.00625, rel=1e-12)
    assert warmup_inverse_sqrt(99, 64, 100) < warmup_inverse_sqrt(100, 64, 100) > warmup_inverse_sqrt(101, 64, 100)
    for bad in (0, -1, 2.5, True):
        with pytest.raises((TypeError, ValueError), match="step"):
            warmup_inverse_sqrt(bad, 64, 100)


def test_the_papers_schedule_drives_adam_through_lambdalr():
    d_model, warmup = 64, 10
    weight = nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.Adam([weight], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: warmup_inverse_sqrt(i + 1, d_model, warmup))
    seen = []
    for _ in range(30):
        seen.append(optimizer.param_groups[0]["lr"])
        weight.sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
    formula = [d_model ** -0.5 * min(s ** -0.5, s * warmup ** -1.5) for s in range(1, 31)]
    assert seen == pytest.approx(formula, rel=1e-12)
    # Adam's first step moves each weight by about lr (the gradient's sign), so the schedule really drove it
    assert torch.allclose(weight.detach(), torch.full((3,), -sum(formula)), rtol=0.02)


def test_fit_is_adam_with_warmup_and_clipping_written_out():
    torch.manual_seed(0)
    model = EncoderDecoder(config())
    reference = copy.deepcopy(model)
    batches = [(ids(4, 5, 10 + i), ids(4, 6, 20 + i)) for i in range(3)]
    losses = fit(model, iter(batches), 3, lr=0.01, warmup=2, clip=0.5)

    opt = torch.optim.Adam(reference.parameters(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    expected = []
    for step, (src, tgt) in enumerate(batches, start=1):
        for group in opt.param_groups:
            group["lr"] = 0.01 * min(1.0, step / 2)
        reference.train()
        logits = reference(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        opt.step()
        expected.append(loss.item())
    assert losses == pytest.approx(expected, abs=1e-6)
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    assert not model.training  # fit leaves the model in eval mode


def test_fit_learns_to_copy():
    torch.manual_seed(0)
    vocab, length = 8, 5
    cfg = TransformerConfig(vocab_size=vocab, d_model=32, n_heads=2, d_ff=64, n_layers=1, dropout=0.0,
                            max_len=length + 2, norm_first=True)
    model = EncoderDecoder(cfg)
    g = torch.Generator().manual_seed(1)

    def batches():
        while True:
            src = torch.randint(3, vocab, (32, length), generator=g)
            yield src, torch.cat([torch.ones(32, 1, dtype=torch.long), src, torch.full((32, 1), 2)], dim=1)

    losses = fit(model, batches(), 150, lr=3e-3, warmup=20)
    assert len(losses) == 150 and all(isinstance(x, float) for x in losses)
    assert sum(losses[:10]) / 10 > 1.5 and sum(losses[-10:]) / 10 < 0.3


def test_fit_with_a_custom_loss_and_a_progress_bar(capsys):
    torch.manual_seed(0)
    model = DecoderOnly(config())
    data = iter([ids(4, 6, i) for i in range(12)])
    losses = fit(model, data, 12, loss_fn=next_token_loss, lr=0.01, warmup=0, progress=True)
    assert len(losses) == 12
    assert "IntProgress" in capsys.readouterr().out  # outside a notebook the widget shows its text form


def test_fit_calls_back_after_every_step_with_its_loss():
    torch.manual_seed(0)
    model = DecoderOnly(config())
    seen = []
    losses = fit(model, iter([ids(4, 6, i) for i in range(5)]), 5, loss_fn=next_token_loss, warmup=0,
                 callback=lambda step, loss: seen.append((step, loss, model.training)))
    assert seen == [(step, loss, True) for step, loss in zip(range(1, 6), losses)]  # during training, in order


def test_progress_bar_as_a_callback_shows_the_mean_of_the_last_ten_losses():
    bar = TrainingProgress(25, description="demo")
    losses = [float(i) for i in range(1, 26)]
    for step, loss in enumerate(losses[:9], start=1):
        bar(step, loss)
    assert bar.bar.value == 0  # nothing shown before step 10
    bar(10, losses[9])
    assert bar.bar.value == 10 and "loss 5.5000" in bar.label.value  # mean of 1 .. 10
    for step, loss in enumerate(losses[10:], start=11):
        bar(step, loss)
    assert bar.bar.value == 25 and "loss 20.5000" in bar.label.value  # the last step: mean of 16 .. 25


def test_training_does_not_import_the_pictures():
    import ast
    import inspect

    import transformer.train

    tree = ast.parse(inspect.getsource(transformer.train))
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    assert not [m for m in imported if "viz" in m], imported


def test_fit_rejects_bad_arguments():
    model = DecoderOnly(config())
    with pytest.raises(ValueError, match="steps: expected a positive int, got 0"):
        fit(model, iter([]), 0)
    with pytest.raises(ValueError, match="label_smoothing"):
        fit(model, iter([]), 1, label_smoothing=-0.1)
    with pytest.raises(TypeError, match="callback: expected a function callback\\(step, loss\\), got str"):
        fit(model, iter([]), 1, callback="print")


def test_progress_bar_shows_step_and_loss():
    bar = TrainingProgress(50, description="demo")
    assert bar.bar.max == 50 and bar.bar.value == 0 and bar.label.value == "step 0 / 50"
    bar.update(20, 0.123456)
    assert bar.bar.value == 20
    assert "step 20 / 50" in bar.label.value and "loss 0.1235" in bar.label.value
    text = repr(bar.widget)
    assert text.startswith("HBox(children=(IntProgress(value=20")


def test_plot_losses_has_labels():
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_losses([3.0, 2.0, 1.5, 1.0, 0.8] * 10, smooth=5)
    assert ax.get_xlabel() == "training step" and ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 2


# ----------------------------------------------------------- translating


class Oracle(nn.Module):
    """Emits a fixed list of target ids, whatever the source: the next id is script[T - 1]."""

    def __init__(self, script, vocab):
        super().__init__()
        self.script, self.vocab = script, vocab

    def encode(self, src):
        return torch.zeros(src.shape[0], src.shape[1], 2), torch.ones(src.shape[0], 1, src.shape[1], dtype=torch.bool)

    def decode(self, tgt, memory, src_mask=None):
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], self.vocab)
        logits[:, -1, self.script[min(tgt.shape[1] - 1, len(self.script) - 1)]] = 1.0
        return logits


def test_translate_and_exact_match_with_a_scripted_model():
    corpus = Corpus()
    voc = corpus.tgt.vocab
    words = "Ich habe einen Apfel gegessen".split()
    oracle = Oracle([voc.id_of(w) for w in words] + [voc.eos_id], len(voc))
    assert translate(oracle, corpus, ["I ate an apple", "We saw a cat"]) == ["Ich habe einen Apfel gegessen"] * 2
    pairs = [("I ate an apple", "Ich habe einen Apfel gegessen"), ("We saw a cat", "Wir haben eine Katze gesehen")]
    assert exact_match(oracle, corpus, pairs) == 0.5
    assert exact_match(oracle, corpus, pairs, batch_size=1) == 0.5


def test_translate_counts_new_tokens_in_max_new_tokens_and_names_it_for_the_old_keyword():
    corpus = Corpus()
    voc = corpus.tgt.vocab
    oracle = Oracle([voc.id_of(w) for w in "Ich habe einen Apfel gegessen".split()] + [voc.eos_id], len(voc))
    for beam_size in (1, 2):
        assert translate(oracle, corpus, ["I ate an apple"], max_new_tokens=2, beam_size=beam_size) == ["Ich habe"]
    with pytest.raises(TypeError, match=r"translate: max_len is now called max_new_tokens .*got max_len=2"):
        translate(oracle, corpus, ["I ate an apple"], max_len=2)
